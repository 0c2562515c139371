import Foundation
import ObjectLog
import ObjectLogStore
import Synchronization
import TestSupport
import Testing

/// Version 0 of the recipe model (MigrationPlanTests has 1 to 3): no tags yet.
enum Plan0 {
    final class Recipe: ManagedObject {
        @Attribute var title = ""
        @Attribute var servings = ""
        override class var entityName: String { "Recipe" }
    }
    static let version = ModelVersion("0", [Recipe.self])
}

/// Four text properties the inferred mapping copies one after another (one run), and a number
/// that becomes text.
enum RunPlan {
    final class NoteV1: ManagedObject {
        @Attribute var a = ""
        @Attribute var b = ""
        @Attribute var c = ""
        @Attribute var d = ""
        @Attribute var n = 0
        override class var entityName: String { "Note" }
    }
    final class NoteV2: ManagedObject {
        @Attribute var a = ""
        @Attribute var b = ""
        @Attribute var c = ""
        @Attribute var d = ""
        @Attribute var n = ""
        override class var entityName: String { "Note" }
    }
    static let versions = [ModelVersion("1", [NoteV1.self]), ModelVersion("2", [NoteV2.self])]

    /// Inserts `count` notes of version 1 into `context`: note N holds `text(N)` in `a`, `b`, `c`
    /// and `d`, and N in `n`.
    static func insertNotes(
        _ count: Int,
        into context: ManagedObjectContext,
        text: (Int) -> (String, String, String, String)
    ) {
        for index in 0..<count {
            let note = NoteV1(context: context)
            (note.a, note.b, note.c, note.d) = text(index)
            note.n = index
        }
    }
}

@Suite("Rewriting migration stages: object by object, in one compaction")
struct RewriteStageTests {
    /// Servings as text (version 1) become a number (version 2), object by object.
    static let servings = MigrationStage.rewrite(
        from: "1",
        to: "2",
        entities: ["Recipe": servingsAsNumber]
    )

    /// The rewrite of ``servings``: "N people" becomes N, and text without a number 1.
    @Sendable static func servingsAsNumber(_ old: StoredObject, _ new: inout MigratedObject) {
        servingsAsNumber(old, &new, fallback: 1)
    }

    /// "N people" becomes N, and text without a number `fallback`.
    static func servingsAsNumber(
        _ old: StoredObject,
        _ new: inout MigratedObject,
        fallback: Int64
    ) {
        guard case .string(let text)? = old["servings"] else { return }
        new["servings"] = .int(Int64(text.prefix { $0.isNumber }) ?? fallback)
    }

    static let plan = MigrationPlan(
        versions: [Plan1.version, Plan2.version, Plan3.version],
        stages: [servings, MigrationPlanTests.labels]
    )

    /// The plan from version 1 to version 2 whose one stage rewrites each object of `entity`
    /// with `rewrite`.
    static func rewritePlan(
        entity: String = "Recipe",
        _ rewrite: @escaping MigrationStage.ObjectRewrite
    ) -> MigrationPlan {
        MigrationPlan(
            versions: [Plan1.version, Plan2.version],
            stages: [.rewrite(from: "1", to: "2", entities: [entity: rewrite])]
        )
    }

    /// `count` recipes in version 1: titles "recipe N", servings "N people" (N + 1 for odd
    /// N, to tell the values apart), tags "t(N mod 3)".
    func writeVersion1(at path: String, count: Int) throws {
        try writeStore(at: path, for: Plan1.version.entities) { context in
            Plan1.insert(
                (0..<count).map { index in
                    (
                        "recipe \(index)", "\(index % 2 == 0 ? index : index + 1) people",
                        "t\(index % 3)"
                    )
                },
                into: context
            )
        }
    }

    @Test("every object is rewritten, the others' values kept, in a compacted store")
    func rewritesEveryObject() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("recipes.objectlog")
        // Enough objects for several workers and more than one read window's run.
        let count = 20_000
        try writeVersion1(at: path, count: count)
        let sizeBefore = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int
        let plan = Self.rewritePlan(Self.servingsAsNumber)
        var reports: [MigrationProgress] = []
        let container = try PersistentContainer(path: path, plan: plan) { reports.append($0) }
        let recipes = try container.newContext().fetch(Plan2.Recipe.self)
        #expect(recipes.count == count)
        var wrong = 0
        for recipe in recipes {
            let index = Int(recipe.title.dropFirst("recipe ".count)) ?? -1
            let expected = index % 2 == 0 ? index : index + 1
            if recipe.servings != expected || recipe.tags != "t\(index % 3)" { wrong += 1 }
        }
        #expect(wrong == 0)
        try container.close()
        // One compaction wrote the store (generation 1 at creation, 2 after it), every record
        // in the new layout, with no second copy of the objects.
        let store = try LogStore.open(path: path, options: .readOnlyExisting)
        #expect(store.generation == 2)
        // Servings as numbers take less room than as text.
        let sizeAfter = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int
        #expect((sizeAfter ?? .max) < (sizeBefore ?? 0))
        #expect(store.liveCount(entity: 1) == count)
        try store.close()
        #expect(reports.first?.nextStage == "1 -> 2")
        #expect(reports.last?.fraction == 1)
        #expect(reports.contains { $0.stageFraction == 1 && $0.nextStage == "1 -> 2" })
        let fractions = reports.map(\.fraction)
        #expect(fractions == fractions.sorted())
    }

    @Test("old objects a stage keeps keep their values while later records are rewritten")
    func keptObjects() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("kept.objectlog")
        let count = 3_000
        try writeVersion1(at: path, count: count)
        // The rewriter refills one record's storage from object to object while nothing else
        // refers to it; a stage that keeps the objects must still see each one's own values.
        final class Kept: @unchecked Sendable {
            let lock = NSLock()
            var objects: [StoredObject] = []
        }
        let kept = Kept()
        let plan = Self.rewritePlan { old, new in
            kept.lock.withLock { kept.objects.append(old) }
            new["servings"] = .int(1)
        }
        try PersistentContainer(path: path, plan: plan).close()
        #expect(kept.objects.count == count)
        var wrong = 0
        for object in kept.objects {
            guard case .string(let title)? = object["title"],
                let index = Int(title.dropFirst("recipe ".count)),
                case .string(let servings)? = object["servings"],
                case .string(let tags)? = object["tags"]
            else {
                wrong += 1
                continue
            }
            let people = index % 2 == 0 ? index : index + 1
            if servings != "\(people) people" || tags != "t\(index % 3)" { wrong += 1 }
        }
        #expect(wrong == 0)
    }

    @Test("a store that went through a lightweight migration first is rewritten from it")
    func afterLightweight() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("recipes.objectlog")
        let first = try PersistentContainer(path: path, for: Plan0.version.entities)
        let context = first.newContext()
        for (title, servings) in [("Soup", "4"), ("Tart", "6 slices")] {
            let recipe = Plan0.Recipe(context: context)
            recipe.title = title
            recipe.servings = servings
        }
        try context.save()
        try first.close()
        // Version 1 adds the tags, inferred: the records stay in version 0's layout.
        try PersistentContainer(path: path, for: Plan1.version.entities).close()
        let plan = MigrationPlan(
            versions: [Plan0.version, Plan1.version, Plan2.version],
            stages: [.lightweight(from: "0", to: "1"), Self.servings]
        )
        let container = try PersistentContainer(path: path, plan: plan)
        let recipes = try container.newContext().fetch(Plan2.Recipe.self).sorted {
            $0.title < $1.title
        }
        #expect(recipes.map(\.title) == ["Soup", "Tart"])
        #expect(recipes.map(\.servings) == [4, 6])
        #expect(recipes.map(\.tags) == ["", ""])
        try container.close()
    }

    @Test("a rewrite, then a custom stage: the plan of three versions from version 1")
    func thenCustom() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("recipes.objectlog")
        try MigrationPlanTests().writeVersion1(at: path)
        let container = try PersistentContainer(path: path, plan: Self.plan)
        try MigrationPlanTests().checkVersion3(container)
        try container.close()
        // Every record decodes through the stored schema of the version now current.
        let inspector = try StoreInspector(path: path)
        var objects = 0
        try inspector.forEachObject { _ in objects += 1 }
        #expect(objects == 6)
        try inspector.close()
    }

    /// Opens the version 1 store at `path` with a one-stage plan of `rewrite` and returns the
    /// error, after checking that the store is byte for byte as it was.
    func failure(
        at path: String,
        _ rewrite: @escaping MigrationStage.ObjectRewrite,
        entity: String = "Recipe"
    ) throws -> ObjectLogError? {
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let plan = Self.rewritePlan(entity: entity, rewrite)
        var caught: ObjectLogError?
        do {
            try PersistentContainer(path: path, plan: plan).close()
        } catch {
            caught = error
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(!FileManager.default.fileExists(atPath: path + "-migrating"))
        return caught
    }

    @Test("properties copied one after another keep their values whichever of them a stage sets")
    func runsOfCopies() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("notes.objectlog")
        let container = try PersistentContainer(path: path, for: RunPlan.versions[0].entities)
        let context = container.newContext()
        RunPlan.insertNotes(300, into: context) { ("a\($0)", "b\($0)", "c\($0)", "d\($0)") }
        try context.save()
        try container.close()
        // By the number: none of the run set, its second, its last, or both.
        let stage = MigrationStage.rewrite(
            from: "1",
            to: "2",
            entities: [
                "Note": { old, new in
                    guard case .int(let number)? = old["n"] else { return }
                    new["n"] = .string("#\(number)")
                    if number % 2 == 1 { new["b"] = .string("B\(number)") }
                    if number % 3 == 2 { new["d"] = .string("D\(number)") }
                }
            ]
        )
        let plan = MigrationPlan(versions: RunPlan.versions, stages: [stage])
        let migrated = try PersistentContainer(path: path, plan: plan)
        let notes = try migrated.newContext().fetch(RunPlan.NoteV2.self)
        #expect(notes.count == 300)
        var wrong: [String] = []
        for note in notes {
            guard let number = Int(note.n.dropFirst()) else {
                wrong.append(note.n)
                continue
            }
            let expected = (
                "a\(number)", number % 2 == 1 ? "B\(number)" : "b\(number)", "c\(number)",
                number % 3 == 2 ? "D\(number)" : "d\(number)"
            )
            if (note.a, note.b, note.c, note.d) != expected { wrong.append("\(number)") }
        }
        #expect(wrong.isEmpty, "wrong notes: \(wrong.prefix(5))")
        try migrated.close()
    }

    @Test("names made at run time find their properties as literals do")
    func namesMadeAtRunTime() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("recipes.objectlog")
        try writeVersion1(at: path, count: 50)
        // Stored out of line (reserved room), so not bit for bit the model's inline name: the
        // lookup falls back to comparing characters.
        @Sendable func spelt(_ name: String) -> String {
            var copy = ""
            copy.reserveCapacity(64)
            copy += name
            return copy
        }
        let plan = Self.rewritePlan { old, new in
            guard case .string(let text)? = old[spelt("servings")],
                old[spelt("serving")] == nil
            else { return }
            new[spelt("servings")] = .int(Int64(text.prefix { $0.isNumber }) ?? 1)
        }
        let container = try PersistentContainer(path: path, plan: plan)
        let recipes = try container.newContext().fetch(Plan2.Recipe.self)
        #expect(recipes.count == 50)
        #expect(
            recipes.allSatisfy { recipe in
                let index = Int(recipe.title.dropFirst("recipe ".count)) ?? -1
                return recipe.servings == (index % 2 == 0 ? index : index + 1)
            }
        )
        try container.close()
    }

    @Test("an error in a rewrite leaves the store as it was, and says what went wrong")
    func failures() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("recipes.objectlog")
        try writeVersion1(at: path, count: 600)
        struct Refused: Error {}
        let thrown = try failure(at: path) { old, _ in
            if old.key == 300 { throw Refused() }
        }
        #expect(thrown?.code == .modelMismatch)
        #expect(thrown?.message.contains("the migration stage 1 -> 2 failed") == true)
        #expect(thrown?.underlyingError is Refused)
        let misspelt = try failure(at: path) { _, new in new["serving"] = .int(1) }
        #expect(misspelt?.message.contains("no property 'serving'") == true)
        let mistyped = try failure(at: path) { _, new in new["servings"] = .string("4") }
        #expect(mistyped?.message.contains("'servings' cannot take") == true)
        let tooBig = try failure(at: path) { _, new in new["servings"] = .uint(UInt64.max) }
        #expect(tooBig?.message.contains("'servings' cannot take") == true)
        let unknown = try failure(at: path, { _, _ in }, entity: "Dish")
        #expect(unknown?.message.contains("'Dish', which is no entity of the old version") == true)
        // The old app still reads it all.
        let old = try PersistentContainer(path: path, for: Plan1.version.entities)
        #expect(try old.newContext().fetch(Plan1.Recipe.self).count == 600)
        try old.close()
    }

    @Test("a rewrite cannot change a relationship, whose inverse would not follow")
    func relationshipsRefused() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("recipes.objectlog")
        try MigrationPlanTests().writeVersion1(at: path)
        let migrated = try PersistentContainer(path: path, plan: Self.plan)
        try migrated.close()
        // Version 3 -> 4: the same entities; the rewrite tries to drop every label.
        enum Plan4 {
            final class Recipe: ManagedObject {
                @Attribute var title = ""
                @Attribute var servings = 0
                @Attribute var notes = ""
                @Relationship var labels: Set<Plan3.Label>
                override class var entityName: String { "Recipe" }
            }
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let plan = MigrationPlan(
            versions: [
                Plan1.version, Plan2.version, Plan3.version,
                ModelVersion("4", [Plan4.Recipe.self, Plan3.Label.self]),
            ],
            stages: [
                Self.servings, MigrationPlanTests.labels,
                .rewrite(
                    from: "3",
                    to: "4",
                    entities: ["Recipe": { _, new in new["labels"] = .toMany([]) }]
                ),
            ]
        )
        do {
            try PersistentContainer(path: path, plan: plan).close()
            Issue.record("changing a relationship in a rewrite must fail")
        } catch {
            #expect(error.message.contains("cannot change the relationship 'labels'"))
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        // Setting values that are not relationships works, and reading the labels back
        // gives them all.
        let notes = MigrationPlan(
            versions: plan.versions,
            stages: Array(plan.stages.dropLast()) + [
                .rewrite(
                    from: "3",
                    to: "4",
                    entities: [
                        "Recipe": { old, new in
                            guard case .string(let title)? = old["title"],
                                case .toMany(let labels)? = old["labels"]
                            else { return }
                            new["notes"] = .string("\(title): \(labels.count) labels")
                        }
                    ]
                )
            ]
        )
        let container = try PersistentContainer(path: path, plan: notes)
        let reading = container.newContext()
        let recipes = try reading.fetch(Plan4.Recipe.self).sorted {
            $0.title < $1.title
        }
        #expect(recipes.map(\.notes) == ["Bread: 0 labels", "Soup: 2 labels", "Tart: 2 labels"])
        #expect(recipes.map { $0.labels.count } == [0, 2, 2])
        try container.close()
    }

    @Test("an empty store and a missing one need no rewriting")
    func emptyStores() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("recipes.objectlog")
        try writeVersion1(at: path, count: 0)
        let plan = Self.rewritePlan(Self.servingsAsNumber)
        let container = try PersistentContainer(path: path, plan: plan)
        #expect(try container.newContext().fetch(Plan2.Recipe.self).isEmpty)
        try container.close()
        let fresh = try PersistentContainer(path: directory.file("new.objectlog"), plan: plan)
        #expect(try fresh.newContext().fetch(Plan2.Recipe.self).isEmpty)
        try fresh.close()
    }

    @Test("a first rewriting stage only reads the store and writes the new version with the copy")
    func firstStageReadsTheStore() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("recipes.objectlog")
        try writeVersion1(at: path, count: 3_000)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        func openReadOnly() throws -> LogStore {
            try LogStore.open(path: path, options: .readOnlyExisting)
        }
        let transactionsBefore = try {
            let store = try openReadOnly()
            defer { try? store.close() }
            return store.transactionCount
        }()
        // While the stage runs (the copy being written), the store's bytes are the old ones.
        let unchanged = Mutex(true)
        let plan = Self.rewritePlan { old, new in
            if old.key % 1_000 == 0 {
                let now = try Data(contentsOf: URL(fileURLWithPath: path))
                if now != before { unchanged.withLock { $0 = false } }
            }
            Self.servingsAsNumber(old, &new)
        }
        try PersistentContainer(path: path, plan: plan).close()
        #expect(unchanged.withLock { $0 })
        // The new version is one transaction more, recorded as the plain open would record it.
        let store = try openReadOnly()
        #expect(store.transactionCount == transactionsBefore + 1)
        let history = try #require(try ModelHistory.read(from: store))
        #expect(history.versions.count == 2)
        #expect(history.current?.transaction == transactionsBefore + 1)
        #expect(history.versions.first?.hash != history.current?.hash)
        try store.close()
        // The plain open of the new version finds nothing left to migrate, and saves.
        let container = try PersistentContainer(path: path, for: Plan2.version.entities)
        let context = container.newContext()
        let recipes = try context.fetch(Plan2.Recipe.self)
        #expect(recipes.count == 3_000)
        #expect(recipes.allSatisfy { $0.servings % 2 == 0 })
        recipes.first?.servings = 99
        try context.save()
        try container.close()
        #expect(FileManager.default.fileExists(atPath: path + "-migrating") == false)
    }
}
