import Foundation
import StoreTestSupport
import Testing

@testable import ObjectLog
@testable import ObjectLogPostgreSQL

/// An entity without relationships, whose batch deletes the store may run itself.
final class Reagent: ManagedObject {
    @Attribute(.unique) var code = ""
    @Attribute var grams = 0.0
    @Attribute var shelf = 0
    @Attribute var note: String? = nil
}

/// A rack whose bottles go with it and whose tasters lose it: a batch delete's cascade and
/// nullify rules, in the store's statements.
final class Rack: ManagedObject {
    @Attribute var name = ""
    @Relationship(inverse: \Bottle.rack, deleteRule: .cascade) var bottles: [Bottle]
    @Relationship(inverse: \Taster.racks, deleteRule: .nullify) var tasters: Set<Taster>
}

final class Bottle: ManagedObject {
    @Attribute var wine = ""
    @Relationship var rack: Rack?
}

final class Taster: ManagedObject {
    @Attribute var name = ""
    @Relationship var racks: Set<Rack>
}

@Suite(
    "Batch requests as the PostgreSQL store's own statements",
    .enabled(if: TestServer.runs, TestServer.skipReason)
)
struct PostgresBatchTests {
    /// A store with `count` reagents, shelves 0 to 4 in turn.
    static func stocked(_ url: String, count: Int = 20) throws -> PersistentContainer {
        let container = try PersistentContainer(url: url, for: [Reagent.self])
        let context = container.newContext()
        for index in 0..<count {
            let reagent = Reagent(context: context)
            reagent.code = "R\(index)"
            reagent.grams = Double(index)
            reagent.shelf = index % 5
        }
        try context.save()
        return container
    }

    @Test("a batch update and delete are one statement each; other processes hear of them")
    func updateAndDelete() throws {
        let url = try TestServer.freshDatabase()
        let container = try Self.stocked(url)
        let other = try PersistentContainer(url: url, for: [Reagent.self])
        defer {
            try? container.close()
            try? other.close()
        }
        let received = ReceivedChanges()
        other.coordinator.addSaveObserver { received.append($0) }
        let watcher = other.newContext()
        let watched = try watcher.fetch(
            FetchRequest<Reagent>(predicate: #Predicate { $0.code == "R3" })
        )
        #expect(watched.first?.grams == 3)

        let context = container.newContext()
        context.tracer = ContextTracer()
        let updated = try context.execute(
            BatchUpdateRequest<Reagent>(
                predicate: #Predicate { $0.shelf == 3 },
                updates: [.set(\.grams, to: -1), .set(\.note, to: "moved")]
            )
        )
        #expect(updated.updated.count == 4)
        #expect(context.statistics.storeBatches == 1)
        let moved = try container.newContext().fetch(
            FetchRequest<Reagent>(predicate: #Predicate { $0.grams == -1 })
        )
        #expect(Set(moved.map(\.code)) == ["R3", "R8", "R13", "R18"])
        #expect(moved.allSatisfy { $0.note == "moved" && $0.shelf == 3 })
        let heard = received.wait(for: 1)
        #expect(Set(heard.first?.updated ?? []) == Set(updated.updated))
        if let change = heard.first { watcher.mergeChanges(from: change) }
        #expect(watched.first?.grams == -1, "the other process's object was refreshed")

        let deleted = try context.execute(
            BatchDeleteRequest<Reagent>(predicate: #Predicate { $0.shelf == 3 || $0.grams > 15 })
        )
        // Shelf 3 (R3, R8, R13, R18, now at -1 g) and over 15 g (R16, R17, R19).
        #expect(deleted.deleted.count == 7)
        #expect(context.statistics.storeBatches == 2)
        #expect(try container.newContext().count(FetchRequest<Reagent>()) == 13)
        #expect(Set(received.wait(for: 2).last?.deleted ?? []) == Set(deleted.deleted))
    }

    @Test(
        "a delete with relationships is one commit: its deletes and nullified inverses reach another process and the history"
    )
    func deleteRules() throws {
        let url = try TestServer.freshDatabase()
        let entities: [ManagedObject.Type] = [Rack.self, Bottle.self, Taster.self]
        let container = try PersistentContainer(url: url, for: entities)
        defer { try? container.close() }
        try container.setHistoryRetention(.all)
        let context = container.newContext()
        let cellar = Rack(context: context)
        cellar.name = "cellar"
        let shelf = Rack(context: context)
        shelf.name = "shelf"
        for (wine, rack) in [("rioja", cellar), ("barolo", cellar), ("chablis", shelf)] {
            let bottle = Bottle(context: context)
            bottle.wine = wine
            bottle.rack = rack
        }
        let taster = Taster(context: context)
        taster.name = "ann"
        taster.racks = [cellar, shelf]
        try context.save()
        let token = try context.currentHistoryToken
        // Another process, opened after the objects were saved: it hears of the delete alone.
        let other = try PersistentContainer(url: url, for: entities)
        defer { try? other.close() }
        let received = ReceivedChanges()
        other.coordinator.addSaveObserver { received.append($0) }
        let watcher = other.newContext()
        let watched = try #require(try watcher.fetch(Taster.self).first)
        #expect(watched.racks.count == 2)

        context.tracer = ContextTracer()
        let changes = try context.execute(
            BatchDeleteRequest<Rack>(predicate: #Predicate { $0.name == "cellar" })
        )
        #expect(context.statistics.storeBatches == 1)
        #expect(changes.deleted.count == 3)
        #expect(changes.updated == [taster.objectID])
        let heard = try #require(received.wait(for: 1).first)
        #expect(Set(heard.deleted) == Set(changes.deleted))
        #expect(heard.updated == [taster.objectID])
        watcher.mergeChanges(from: heard)
        #expect(watched.racks.map(\.name) == ["shelf"])

        let history = try context.history(after: token)
        #expect(history.count == 1)
        let kinds = try #require(history.first).changes.map(\.kind)
        #expect(kinds.filter { $0 == .delete }.count == 3)
        #expect(kinds.filter { $0 == .update }.count == 1)
        let update = try #require(history.first?.changes.first { $0.kind == .update })
        #expect(update.objectID == taster.objectID)
        #expect(update.oldValues["racks"] != update.newValues["racks"])
        let deletedWines = history.first?.changes.compactMap { $0.oldValues["wine"] }
        #expect(Set(deletedWines ?? []) == [.string("rioja"), .string("barolo")])
    }

    @Test("a batch update that breaks uniqueness is the engine's error, and changes nothing")
    func uniqueness() throws {
        let url = try TestServer.freshDatabase()
        let container = try Self.stocked(url)
        defer { try? container.close() }
        let context = container.newContext()
        #expect {
            try context.execute(
                BatchUpdateRequest<Reagent>(
                    predicate: #Predicate { $0.shelf == 1 },
                    updates: [.set(\.code, to: "same")]
                )
            )
        } throws: { error in
            (error as? ObjectLogError)?.code == .uniqueness
        }
        let codes = try container.newContext().fetch(FetchRequest<Reagent>()).map(\.code)
        #expect(Set(codes) == Set((0..<20).map { "R\($0)" }))
    }

    @Test("a predicate SQL cannot decide exactly runs in the engine, with the same result")
    func inexactFallsBack() throws {
        let url = try TestServer.freshDatabase()
        let container = try Self.stocked(url)
        defer { try? container.close() }
        let context = container.newContext()
        context.tracer = ContextTracer()
        // Arithmetic is evaluated in Swift.
        let updated = try context.execute(
            BatchUpdateRequest<Reagent>(
                predicate: #Predicate { $0.grams * 2 > 30 },
                updates: [.set(\.shelf, to: 9)]
            )
        )
        #expect(updated.updated.count == 4)
        #expect(context.statistics.storeBatches == 0)
        let ninth = try container.newContext().fetch(
            FetchRequest<Reagent>(predicate: #Predicate { $0.shelf == 9 })
        )
        #expect(Set(ninth.map(\.code)) == ["R16", "R17", "R18", "R19"])
    }
}
