import Foundation
import ObjectLog
import ObjectLogStore
import StoreTestSupport
import TestSupport
import Testing

// Three versions of a recipe model with changes that cannot be inferred: servings kept as
// text become a number (1 -> 2), and a comma-separated tag text becomes Label objects with a
// unique name (2 -> 3).

enum Plan1 {
    final class Recipe: ManagedObject {
        @Attribute var title = ""
        @Attribute var servings = ""
        @Attribute var tags = ""
        override class var entityName: String { "Recipe" }
    }
    static let version = ModelVersion("1", [Recipe.self])

    /// Inserts a recipe into `context` for each of `recipes`, in order.
    static func insert(
        _ recipes: [(title: String, servings: String, tags: String)],
        into context: ManagedObjectContext
    ) {
        for (title, servings, tags) in recipes {
            let recipe = Recipe(context: context)
            recipe.title = title
            recipe.servings = servings
            recipe.tags = tags
        }
    }
}

enum Plan2 {
    final class Recipe: ManagedObject {
        @Attribute var title = ""
        @Attribute var servings = 0
        @Attribute var tags = ""
        override class var entityName: String { "Recipe" }
    }
    static let version = ModelVersion("2", [Recipe.self])
}

enum Plan3 {
    final class Recipe: ManagedObject {
        @Attribute var title = ""
        @Attribute var servings = 0
        @Relationship var labels: Set<Label>
        override class var entityName: String { "Recipe" }
    }

    final class Label: ManagedObject {
        @Attribute(.unique) var name = ""
        override class var entityName: String { "Label" }
    }
    static let version = ModelVersion("3", [Recipe.self, Label.self])
}

@Suite("Staged migration: a plan of versions and custom stages, applied atomically")
struct MigrationPlanTests {
    static let servings = MigrationStage.custom(from: "1", to: "2") { migration in
        for old in try migration.oldObjects("Recipe") {
            guard case .string(let text)? = old["servings"] else { continue }
            let digits = text.prefix { $0.isNumber }
            try migration.newObject(for: old, as: Plan2.Recipe.self)?.servings = Int(digits) ?? 1
        }
    }

    static let labels = MigrationStage.custom(from: "2", to: "3") { migration in
        var labels: [String: Plan3.Label] = [:]
        for old in try migration.oldObjects("Recipe") {
            guard case .string(let text)? = old["tags"],
                let recipe = try migration.newObject(for: old, as: Plan3.Recipe.self)
            else { continue }
            for name in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) })
            where !name.isEmpty {
                let label = labels[name] ?? Plan3.Label(context: migration.context)
                label.name = name
                labels[name] = label
                recipe.labels.insert(label)
            }
        }
    }

    static let plan = MigrationPlan(
        versions: [Plan1.version, Plan2.version, Plan3.version],
        stages: [servings, labels]
    )

    func writeVersion1(at path: String) throws {
        try writeStore(at: path, for: Plan1.version.entities) { context in
            Plan1.insert(Self.version1Recipes, into: context)
        }
    }

    func writeVersion1(_ store: TestStore) throws {
        try writeStore(store, for: Plan1.version.entities) { context in
            Plan1.insert(Self.version1Recipes, into: context)
        }
    }

    static let version1Recipes = [
        ("Soup", "4 people", "winter, starter"), ("Tart", "6", "dessert,winter"),
        ("Bread", "a loaf", ""),
    ]

    func checkVersion3(_ container: PersistentContainer) throws {
        let context = container.newContext()
        let recipes = try context.fetch(Plan3.Recipe.self).sorted { $0.title < $1.title }
        #expect(recipes.map(\.title) == ["Bread", "Soup", "Tart"])
        #expect(recipes.map(\.servings) == [1, 4, 6])
        #expect(
            recipes.map { $0.labels.map(\.name).sorted() } == [
                [], ["starter", "winter"], ["dessert", "winter"],
            ]
        )
        #expect(
            try context.fetch(Plan3.Label.self).map(\.name).sorted() == [
                "dessert", "starter", "winter",
            ]
        )
    }

    @Test(
        "a plan of three versions applied from each older version, and at the last",
        arguments: TestStoreKind.persistent
    )
    func fromEveryVersion(kind: TestStoreKind) throws {
        let fromOne = try TestStore(kind)
        try writeVersion1(fromOne)
        let fromTwo = try TestStore(kind)
        try writeVersion1(fromTwo)
        let toTwo = MigrationPlan(
            versions: [Plan1.version, Plan2.version],
            stages: [Self.servings]
        )
        try fromTwo.open(plan: toTwo).close()
        for store in [fromOne, fromTwo] {
            var reports: [MigrationProgress] = []
            let container = try store.open(plan: Self.plan) { reports.append($0) }
            let stages = store === fromOne ? ["1 -> 2", "2 -> 3"] : ["2 -> 3"]
            #expect(reports.map(\.nextStage) == stages + [nil])
            #expect(reports.last?.fraction == 1)
            try checkVersion3(container)
            try container.close()
            if kind == .logFile {
                #expect(!FileManager.default.fileExists(atPath: store.location + "-migrating"))
            }
            // At the last version already: opens as it is, with the plan or without.
            let again = try store.open(plan: Self.plan)
            try checkVersion3(again)
            try again.close()
            let plain = try store.open(for: Plan3.version.entities)
            try checkVersion3(plain)
            let history = try #require(try ModelHistory.read(from: plain.coordinator.store))
            #expect(history.versions.count == 3)
            try plain.close()
        }
    }

    @Test(
        "a stage that fails leaves the store as it was, readable by the old model",
        arguments: TestStoreKind.persistent
    )
    func failingStage(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        try writeVersion1(store)
        let before = try store.contents()
        struct Refused: Error {}
        let failing = MigrationPlan(
            versions: [Plan1.version, Plan2.version, Plan3.version],
            stages: [Self.servings, .custom(from: "2", to: "3") { _ in throw Refused() }]
        )
        do {
            _ = try store.open(plan: failing)
            Issue.record("a failing stage must fail the open")
        } catch {
            let error = try #require(error as? ObjectLogError)
            #expect(error.code == .modelMismatch)
            #expect(error.message.contains("the migration stage 2 -> 3 failed"))
            #expect(error.underlyingError is Refused)
        }
        #expect(try store.contents() == before)
        if kind == .logFile {
            #expect(!FileManager.default.fileExists(atPath: store.location + "-migrating"))
        }
        let old = try store.open(for: Plan1.version.entities)
        #expect(try old.newContext().fetch(Plan1.Recipe.self).count == 3)
        try old.close()
    }

    @Test(
        "a stage whose result breaks a uniqueness constraint fails naming it; nothing changes",
        arguments: TestStoreKind.persistent
    )
    func constraintAfterStage(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        try writeVersion1(store)
        let before = try store.contents()
        // Makes one Label per tag occurrence: "winter" twice.
        let careless = MigrationStage.custom(from: "2", to: "3") { migration in
            for old in try migration.oldObjects("Recipe") {
                guard case .string(let text)? = old["tags"] else { continue }
                for name in text.split(separator: ",") {
                    let label = Plan3.Label(context: migration.context)
                    label.name = name.trimmingCharacters(in: .whitespaces)
                }
            }
        }
        let plan = MigrationPlan(
            versions: [Plan1.version, Plan2.version, Plan3.version],
            stages: [Self.servings, careless]
        )
        let error = #expect(throws: ObjectLogError.self) { try store.open(plan: plan) }
        #expect(error?.code == .uniqueness)
        #expect(
            error?.message.contains("'Label' on 'name'") == true,
            "\(String(describing: error))"
        )
        #expect(try store.contents() == before)
    }

    @Test(
        "a rewriting stage and a custom one, chained, on every store",
        arguments: TestStoreKind.persistent
    )
    func rewritingStage(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        try writeVersion1(store)
        let plan = MigrationPlan(
            versions: [Plan1.version, Plan2.version, Plan3.version],
            stages: [RewriteStageTests.servings, Self.labels]
        )
        var reports: [MigrationProgress] = []
        let container = try store.open(plan: plan) { reports.append($0) }
        #expect(reports.first?.nextStage == "1 -> 2")
        #expect(reports.last?.fraction == 1)
        try checkVersion3(container)
        try container.close()
        let again = try store.open(for: Plan3.version.entities)
        try checkVersion3(again)
        try again.close()
    }

    @Test("a crash's leftover copy is removed, and the migration runs again")
    func leftoverCopy() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("recipes.objectlog")
        try writeVersion1(at: path)
        try Data("half a copy".utf8).write(to: URL(fileURLWithPath: path + "-migrating"))
        let container = try PersistentContainer(path: path, plan: Self.plan)
        try checkVersion3(container)
        try container.close()
        #expect(!FileManager.default.fileExists(atPath: path + "-migrating"))
    }

    @Test("plans whose stages do not chain are refused", arguments: TestStoreKind.persistent)
    func badPlans(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        try writeVersion1(store)
        let before = try store.contents()
        let backwards = MigrationPlan(
            versions: [Plan1.version, Plan2.version],
            stages: [.lightweight(from: "2", to: "1")]
        )
        #expect(throws: ObjectLogError.self) { try store.open(plan: backwards) }
        let gap = MigrationPlan(
            versions: [Plan1.version, Plan2.version, Plan3.version],
            stages: [Self.labels]
        )
        do {
            _ = try store.open(plan: gap)
            Issue.record("a plan without a stage from the store's version must be refused")
        } catch {
            #expect("\(error)".contains("no stage from version 1"))
        }
        #expect(try store.contents() == before)
    }
}
