import Foundation
import StoreTestSupport
import TestSupport
import Testing

@testable import ObjectLog

/// Entities whose relationships take every kind of column a database store keeps them in: a
/// to-many whose inverse is a to-one (cascade), a one-to-one (nullify), a many-to-many
/// (nullify), a deny rule one step away, and an inverse with a minimum count.
final class PantryShelf: ManagedObject {
    @Attribute var label = ""
    @Relationship(inverse: \PantryJar.shelf, deleteRule: .cascade) var jars: [PantryJar]
    @Relationship(inverse: \PantryPlate.shelf, deleteRule: .nullify) var plate: PantryPlate?
    @Relationship(inverse: \PantryKeeper.shelves, deleteRule: .nullify) var keepers:
        Set<PantryKeeper>
    @Relationship(inverse: \PantryBadge.shelf, deleteRule: .nullify) var badges: [PantryBadge]
}

final class PantryJar: ManagedObject {
    @Attribute var content = ""
    @Relationship var shelf: PantryShelf?
    @Relationship(inverse: \PantryLid.jar, deleteRule: .deny) var lids: [PantryLid]
}

final class PantryLid: ManagedObject {
    @Attribute var size = 0
    @Relationship var jar: PantryJar?
}

final class PantryPlate: ManagedObject {
    @Attribute var text = ""
    @Relationship var shelf: PantryShelf?
}

final class PantryKeeper: ManagedObject {
    @Attribute var name = ""
    @Relationship var shelves: Set<PantryShelf>
}

final class PantryBadge: ManagedObject {
    @Attribute var mark = ""
    @Relationship(isRequired: true) var shelf: PantryShelf?
}

/// A tree: a box's children go with it.
final class PantryBox: ManagedObject {
    @Attribute var name = ""
    @Relationship var parent: PantryBox?
    @Relationship(inverse: \PantryBox.parent, deleteRule: .cascade) var children: [PantryBox]
}

let pantryEntities: [ManagedObject.Type] = [
    PantryBox.self,
    PantryShelf.self, PantryJar.self, PantryLid.self, PantryPlate.self, PantryKeeper.self,
    PantryBadge.self,
]

@Suite("Batch deletes follow delete rules on every store, as a context's delete does")
struct BatchDeleteRuleTests {
    /// Two shelves: "a" with jars j1 and j2, plate p1, keepers k1 and k2; "b" with jar j3,
    /// plate p2 and keeper k1.
    static func stock(_ context: ManagedObjectContext) throws {
        let a = PantryShelf(context: context)
        a.label = "a"
        let b = PantryShelf(context: context)
        b.label = "b"
        for (content, shelf) in [("j1", a), ("j2", a), ("j3", b)] {
            let jar = PantryJar(context: context)
            jar.content = content
            jar.shelf = shelf
        }
        for (text, shelf) in [("p1", a), ("p2", b)] {
            let plate = PantryPlate(context: context)
            plate.text = text
            plate.shelf = shelf
        }
        let k1 = PantryKeeper(context: context)
        k1.name = "k1"
        k1.shelves = [a, b]
        let k2 = PantryKeeper(context: context)
        k2.name = "k2"
        k2.shelves = [a]
        try context.save()
    }

    @Test(
        "cascade deletes the jars, nullify empties the plate and the keepers' sets",
        arguments: TestStoreKind.available
    )
    func rules(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: pantryEntities)
        defer { try? container.close() }
        let context = container.newContext()
        try Self.stock(context)
        // A context that read k2 before the delete, and changes it after.
        let stale = container.newContext()
        let staleKeeper = try #require(
            try stale.fetch(FetchRequest<PantryKeeper>(predicate: #Predicate { $0.name == "k2" }))
                .first
        )
        #expect(staleKeeper.shelves.count == 1)

        context.tracer = ContextTracer()
        let changes = try context.execute(
            BatchDeleteRequest<PantryShelf>(predicate: #Predicate { $0.label == "a" })
        )
        // PantryShelf a, and jars j1 and j2 through the cascade.
        #expect(changes.deleted.count == 3)
        #expect(
            Set(changes.deleted.map(\.entityName)) == ["PantryShelf", "PantryJar"]
        )
        // PantryPlate p1 (its one-to-one) and keepers k1 and k2 (the many-to-many) lost shelf a.
        let check = container.newContext()
        let updated = try changes.updated.map { try check.existingObject(with: $0) }
        let names = updated.map { object -> String in
            switch object {
            case let plate as PantryPlate: plate.text
            case let keeper as PantryKeeper: keeper.name
            default: "\(object.objectID)"
            }
        }
        #expect(Set(names) == ["p1", "k1", "k2"])
        // On PostgreSQL the rules ran as the store's own statements, in one batch.
        #expect(context.statistics.storeBatches == (kind == .postgreSQL ? 1 : 0))

        #expect(try check.fetch(PantryShelf.self).map(\.label) == ["b"])
        #expect(try check.fetch(PantryJar.self).map(\.content) == ["j3"])
        let plates = try check.fetch(
            FetchRequest<PantryPlate>(sortBy: [SortDescriptor(\.text, comparator: .lexical)])
        )
        #expect(plates.map(\.text) == ["p1", "p2"])
        #expect(plates[0].shelf == nil)
        #expect(plates[1].shelf?.label == "b")
        let keepers = try check.fetch(
            FetchRequest<PantryKeeper>(sortBy: [SortDescriptor(\.name, comparator: .lexical)])
        )
        #expect(keepers.map { $0.shelves.map(\.label).sorted() } == [["b"], []])
        #expect(try check.fetch(PantryShelf.self).first?.jars.map(\.content) == ["j3"])

        // The keeper changed under the stale context: its save meets the conflict.
        staleKeeper.name = "k2, renamed"
        #expect {
            try stale.save()
        } throws: { ($0 as? ObjectLogError)?.code == .conflict }
        // Merged, the stale context sees the keeper as it is now.
        stale.rollback()
        stale.mergeChanges(from: changes)
        #expect(staleKeeper.shelves.isEmpty)
    }

    @Test(
        "a deny rule reached through a cascade, and a required inverse, refuse the delete",
        arguments: TestStoreKind.available
    )
    func refusals(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: pantryEntities)
        defer { try? container.close() }
        let context = container.newContext()
        try Self.stock(context)
        let jar = try #require(
            try context.fetch(FetchRequest<PantryJar>(predicate: #Predicate { $0.content == "j1" }))
                .first
        )
        let lid = PantryLid(context: context)
        lid.jar = jar
        try context.save()

        // PantryShelf a's jars cascade; jar j1 has a lid, and its lids deny.
        #expect {
            try context.execute(
                BatchDeleteRequest<PantryShelf>(predicate: #Predicate { $0.label == "a" })
            )
        } throws: { error in
            let error = error as? ObjectLogError
            return error?.code == .validation && error?.property == "lids"
                && error?.objectID == jar.objectID
        }
        // PantryShelf b has a badge, whose shelf is required.
        let shelfB = try #require(
            try context.fetch(FetchRequest<PantryShelf>(predicate: #Predicate { $0.label == "b" }))
                .first
        )
        let badge = PantryBadge(context: context)
        badge.mark = "B"
        badge.shelf = shelfB
        try context.save()
        #expect {
            try context.execute(
                BatchDeleteRequest<PantryShelf>(predicate: #Predicate { $0.label == "b" })
            )
        } throws: { error in
            let error = error as? ObjectLogError
            return error?.code == .validation && error?.property == "shelf"
                && error?.objectID == badge.objectID
        }
        // Nothing was written.
        let check = container.newContext()
        #expect(try check.count(FetchRequest<PantryShelf>()) == 2)
        #expect(try check.count(FetchRequest<PantryJar>()) == 3)
        #expect(try check.fetch(PantryPlate.self).allSatisfy { $0.shelf != nil })
        #expect(try check.fetch(PantryBadge.self).first?.shelf?.label == "b")
    }

    @Test(
        "a cascade down a tree deletes every level, and the parent that stays is updated",
        arguments: TestStoreKind.available
    )
    func tree(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: pantryEntities)
        defer { try? container.close() }
        let context = container.newContext()
        var boxes: [String: PantryBox] = [:]
        for (name, parent) in [
            ("root", nil), ("a", "root"), ("a1", "a"), ("a11", "a1"), ("b", "root"),
        ] {
            let box = PantryBox(context: context)
            box.name = name
            box.parent = parent.flatMap { boxes[$0] }
            boxes[name] = box
        }
        try context.save()
        let changes = try context.execute(
            BatchDeleteRequest<PantryBox>(predicate: #Predicate { $0.name == "a" })
        )
        #expect(changes.deleted.count == 3)
        #expect(changes.updated == [try #require(boxes["root"]).objectID])
        let check = container.newContext()
        let left = try check.fetch(
            FetchRequest<PantryBox>(sortBy: [SortDescriptor(\.name, comparator: .lexical)])
        )
        #expect(left.map(\.name) == ["b", "root"])
        #expect(left.last?.children.map(\.name) == ["b"])
    }

    /// A pantry of random shape, made the same way in any store: shelves with jars (some
    /// with lids), plates, keepers on several shelves, badges.
    static func randomPantry(seed: UInt64, into context: ManagedObjectContext) throws {
        var generator = SeededGenerator(seed: seed)
        var shelves: [PantryShelf] = []
        for index in 0..<8 {
            let shelf = PantryShelf(context: context)
            shelf.label = "s\(index % 4)-\(index)"
            shelves.append(shelf)
        }
        for index in 0..<20 {
            let jar = PantryJar(context: context)
            jar.content = "j\(index)"
            jar.shelf =
                Int.random(in: 0..<5, using: &generator) == 0
                ? nil : shelves.randomElement(using: &generator)
            if Int.random(in: 0..<12, using: &generator) == 0 {
                let lid = PantryLid(context: context)
                lid.size = index
                lid.jar = jar
            }
        }
        for (index, shelf) in shelves.enumerated() where Bool.random(using: &generator) {
            let plate = PantryPlate(context: context)
            plate.text = "p\(index)"
            plate.shelf = shelf
        }
        for index in 0..<5 {
            let keeper = PantryKeeper(context: context)
            keeper.name = "k\(index)"
            keeper.shelves = Set(
                shelves.filter { _ in Int.random(in: 0..<3, using: &generator) == 0 }
            )
        }
        if Bool.random(using: &generator) {
            let badge = PantryBadge(context: context)
            badge.mark = "b"
            badge.shelf = shelves.randomElement(using: &generator)
        }
        try context.save()
    }

    /// What a pantry holds, by the objects' names: enough to tell two stores' apart.
    static func describe(_ context: ManagedObjectContext) throws -> [String] {
        var lines: [String] = []
        for shelf in try context.fetch(PantryShelf.self) {
            lines.append(
                "shelf \(shelf.label): jars \(shelf.jars.map(\.content).sorted()) plate "
                    + "\(shelf.plate?.text ?? "-") keepers \(shelf.keepers.map(\.name).sorted()) "
                    + "badges \(shelf.badges.map(\.mark))"
            )
        }
        for jar in try context.fetch(PantryJar.self) {
            lines.append("jar \(jar.content): \(jar.shelf?.label ?? "-") lids \(jar.lids.count)")
        }
        for plate in try context.fetch(PantryPlate.self) {
            lines.append("plate \(plate.text): \(plate.shelf?.label ?? "-")")
        }
        for keeper in try context.fetch(PantryKeeper.self) {
            lines.append("keeper \(keeper.name): \(keeper.shelves.map(\.label).sorted())")
        }
        lines.append("lids \(try context.count(FetchRequest<PantryLid>()))")
        return lines.sorted()
    }

    @Test(
        "random pantries: a delete the database runs in SQL ends as the store file's does",
        .enabled(if: TestServer.runs, TestServer.skipReason),
        arguments: 0..<16
    )
    func randomDifferential(seed: UInt64) throws {
        let group = "s\(seed % 4)-"
        var outcomes: [String] = []
        var states: [[String]] = []
        for kind in [TestStoreKind.logFile, .postgreSQL] {
            let store = try TestStore(kind)
            let container = try store.open(for: pantryEntities)
            defer { try? container.close() }
            let context = container.newContext()
            try Self.randomPantry(seed: seed, into: context)
            do {
                let changes = try context.execute(
                    BatchDeleteRequest<PantryShelf>(
                        predicate: #Predicate { $0.label.starts(with: group) }
                    )
                )
                let deleted = changes.deleted.map(\.entityName).sorted()
                outcomes.append("deleted \(deleted), updated \(changes.updated.count)")
            } catch {
                outcomes.append("refused: \(error.code) \(error.property ?? "-")")
            }
            states.append(try Self.describe(container.newContext()))
        }
        #expect(outcomes[0] == outcomes[1])
        #expect(states[0] == states[1])
    }
}
