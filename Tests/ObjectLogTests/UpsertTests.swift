import Foundation
import StoreTestSupport
import TestSupport
import Testing

@testable import ObjectLog

/// An entity with two separate unique attributes (an insert can match two different objects).
final class Specimen: ManagedObject {
    @Attribute(.unique) var code = ""
    @Attribute(.unique) var label = ""
    @Attribute var weight = 0
}

/// Where a test's store lives.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible {
    case file
    case memory

    var testDescription: String { rawValue }
}

/// A container of the test model on a file or in memory; the directory lives as long as it.
struct UpsertFixture {
    let directory = TemporaryDirectory()
    let kind: StoreKind

    func open(_ types: [ManagedObject.Type] = testEntities) throws -> PersistentContainer {
        switch kind {
        case .file: try PersistentContainer(path: directory.file("upsert.objectlog"), for: types)
        case .memory: try PersistentContainer.inMemory(for: types)
        }
    }
}

@Suite("Unique constraints under a merge policy: upserts")
struct UpsertTests {
    // MARK: - .error

    @Test(
        "the default .error policy still fails a duplicate insert and keeps it pending",
        arguments: TestStoreKind.available
    )
    func errorPolicyUnchanged(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        #expect(context.mergePolicy == .error)
        let first = insertConfiguration("Spots", into: context)
        try context.save()
        let second = insertConfiguration("Spots", into: context)
        let third = insertConfiguration("Stripes", into: context)
        let fourth = insertConfiguration("Stripes", into: context)
        let error = try #require(throws: ObjectLogError.self) { try context.save() }
        #expect(error.code == .uniqueness)
        #expect(error.errors.count == 2)
        let messages = error.errors.map(\.message).joined(separator: "\n")
        #expect(messages.contains("'Configuration'"))
        #expect(messages.contains("'name'"))
        #expect(messages.contains(#"name = "Spots""#))
        #expect(messages.contains(#"name = "Stripes""#))
        #expect(messages.contains("\(second.objectID)") && messages.contains("\(first.objectID)"))
        #expect(messages.contains("\(fourth.objectID)") && messages.contains("\(third.objectID)"))
        #expect(second.isInserted && third.isInserted && fourth.isInserted)
        #expect(second.managedObjectContext === context)
        #expect(try context.count(FetchRequest<Configuration>()) == 4, "pending inserts count")
        context.rollback()
        #expect(try context.count(FetchRequest<Configuration>()) == 1)
    }

    // MARK: - In-memory wins (.overwrite)

    @Test(
        "overwrite: an insert that matches a saved object updates it, keeping its ID",
        arguments: StoreKind.allCases
    )
    func overwriteSaved(kind: StoreKind) throws {
        let fixture = UpsertFixture(kind: kind)
        let container = try fixture.open()
        let writer = container.newContext()
        let original = insertConfiguration("Spots", into: writer)
        original.feed = 0.01
        original.notes = "first import"
        try writer.save()
        let id = original.objectID

        let context = container.newContext()
        context.mergePolicy = .overwrite
        var saves: [ObjectChanges] = []
        context.onDidSave { saves.append($0) }
        let imported = insertConfiguration("Spots", into: context)
        imported.feed = 0.02
        imported.kill = 0.07
        let other = insertConfiguration("Waves", into: context)
        let insertedID = imported.objectID
        try context.save()

        #expect(imported.objectID == id, "the inserted instance takes the survivor's ID")
        #expect(imported.managedObjectContext == nil, "the inserted instance leaves the context")
        #expect(!imported.isInserted && !imported.hasChanges)
        #expect(context.registeredObjects.allSatisfy { $0 !== imported })
        let survivor = try #require(try context.existingObject(with: id) as? Configuration)
        #expect(survivor.feed == 0.02)
        #expect(survivor.kill == 0.07)
        #expect(survivor.notes == nil, "every attribute comes from the inserted object")
        #expect(!survivor.hasChanges)

        let saved = try #require(saves.last)
        #expect(saved.updated == [id])
        #expect(saved.inserted == [other.objectID])
        #expect(!saved.inserted.contains(insertedID) && !saved.updated.contains(insertedID))

        let reader = container.newContext()
        let all = try reader.fetch(Configuration.self)
        #expect(all.count == 2)
        let stored = try #require(all.first { $0.name == "Spots" })
        #expect(stored.objectID == id)
        #expect(stored.feed == 0.02)
        #expect(stored.notes == nil)
        #expect(throws: ObjectLogError.self, "the inserted ID was never saved") {
            try reader.existingObject(with: insertedID)
        }
    }

    @Test(
        "overwrite: a registered instance of the survivor is updated in place",
        arguments: TestStoreKind.available
    )
    func overwriteRegisteredInstance(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        let original = insertConfiguration("Spots", into: context)
        try context.save()
        context.mergePolicy = .overwrite
        let imported = insertConfiguration("Spots", seed: 42, into: context)
        try context.save()
        #expect(original.managedObjectContext === context)
        #expect(original.seed == 42)
        #expect(try context.object(with: imported.objectID) === original)
        #expect(try context.fetch(Configuration.self).map { $0 } == [original])
    }

    @Test("overwrite survives a reopen: the store holds one object and upserts again")
    func overwriteAfterReopen() throws {
        let fixture = UpsertFixture(kind: .file)
        let id: ObjectID
        do {
            let container = try fixture.open()
            let context = container.newContext()
            context.mergePolicy = .overwrite
            let first = insertConfiguration("Spots", seed: 1, into: context)
            try context.save()
            id = first.objectID
            insertConfiguration("Spots", seed: 2, into: context)
            try context.save()
            try container.close()
        }
        do {
            let container = try fixture.open()
            let context = container.newContext()
            let all = try context.fetch(Configuration.self)
            #expect(all.map(\.objectID) == [id])
            #expect(all.first?.seed == 2)
            context.mergePolicy = .overwrite
            var saved = ObjectChanges()
            context.onDidSave { saved = $0 }
            insertConfiguration("Spots", seed: 3, into: context)
            try context.save()
            #expect(saved.updated == [id] && saved.inserted.isEmpty)
            // The index also knows the value is taken: without a merge policy, a duplicate fails.
            let fresh = container.newContext()
            insertConfiguration("Spots", into: fresh)
            #expect(throws: ObjectLogError.self) { try fresh.save() }
            try container.close()
        }
        let container = try fixture.open()
        let context = container.newContext()
        let all = try context.fetch(Configuration.self)
        #expect(all.map(\.objectID) == [id])
        #expect(all.first?.seed == 3)
    }

    @Test(
        "overwrite: to-many relationships of the insert are added, its to-one ones replace",
        arguments: StoreKind.allCases
    )
    func overwriteRelationships(kind: StoreKind) throws {
        let fixture = UpsertFixture(kind: kind)
        let container = try fixture.open()
        let context = container.newContext()
        let original = insertConfiguration("Spots", into: context)
        let kept = Snapshot(context: context)
        kept.step = 1
        kept.configuration = original
        let other = insertConfiguration("Waves", into: context)
        try context.save()
        let id = original.objectID

        context.mergePolicy = .overwrite
        let imported = insertConfiguration("Spots", into: context)
        let added = Snapshot(context: context)
        added.step = 2
        added.configuration = imported
        // A to-one relationship set to a saved object: the insert's value replaces the old one.
        let moved = Snapshot(context: context)
        moved.step = 3
        moved.configuration = other
        try context.save()

        #expect(added.configuration === original)
        #expect(Set(original.snapshots.map(\.step)) == [1, 2])
        #expect(imported.snapshots.isEmpty, "the detached instance relates to nothing")
        let reader = container.newContext()
        let stored = try #require(try reader.existingObject(with: id) as? Configuration)
        #expect(Set(stored.snapshots.map(\.step)) == [1, 2])
        #expect(stored.snapshots.allSatisfy { $0.configuration === stored })
        #expect(try reader.count(FetchRequest<Snapshot>()) == 3)
    }

    @Test(
        "overwrite: a to-one relationship of an inserted duplicate replaces the survivor's",
        arguments: TestStoreKind.available
    )
    func overwriteToOne(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: [Stock.self, Shelf.self])
        let context = container.newContext()
        let left = Shelf(context: context)
        left.name = "left"
        let right = Shelf(context: context)
        right.name = "right"
        let stock = Stock(context: context)
        stock.sku = "A-1"
        stock.shelf = left
        try context.save()
        context.mergePolicy = .overwrite
        let imported = Stock(context: context)
        imported.sku = "A-1"
        imported.quantity = 9
        imported.shelf = right
        try context.save()
        #expect(stock.shelf === right)
        #expect(left.stock.isEmpty)
        #expect(right.stock.map { $0 } == [stock])
        let reader = container.newContext()
        let shelves = try reader.fetch(Shelf.self)
        #expect(shelves.first { $0.name == "left" }?.stock.isEmpty == true)
        #expect(shelves.first { $0.name == "right" }?.stock.map(\.quantity) == [9])
    }

    @Test(
        "overwrite: a relationship without inverse that names the duplicate names the survivor",
        arguments: TestStoreKind.available
    )
    func overwriteRedirectsReferences(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: [Stock.self, Shelf.self])
        let context = container.newContext()
        let stock = Stock(context: context)
        stock.sku = "B-2"
        try context.save()
        context.mergePolicy = .overwrite
        let imported = Stock(context: context)
        imported.sku = "B-2"
        let shelf = Shelf(context: context)
        shelf.name = "new"
        shelf.featured = imported
        try context.save()
        #expect(shelf.featured === stock)
        let reader = container.newContext()
        let stored = try #require(try reader.fetch(Shelf.self).first)
        #expect(stored.featured?.objectID == stock.objectID)
    }

    @Test("overwrite: external data of the survivor is replaced, also when it was not read yet")
    func overwriteExternalData() throws {
        let fixture = UpsertFixture(kind: .file)
        let container = try fixture.open()
        let old = Data(repeating: 1, count: ExternalStorage.minimumByteCount + 10)
        let new = Data(repeating: 2, count: ExternalStorage.minimumByteCount + 20)
        let writer = container.newContext()
        for name in ["Spots", "Waves"] {
            let configuration = insertConfiguration(name, into: writer)
            configuration.thumbnail = old
        }
        try writer.save()

        let context = container.newContext()
        context.mergePolicy = .overwrite
        // Loaded, with the thumbnails not read: the merge must not write the old blob back.
        let loaded = try context.fetch(Configuration.self)
        #expect(loaded.allSatisfy { !$0.name.isEmpty })
        let spots = insertConfiguration("Spots", into: context)
        spots.thumbnail = new
        insertConfiguration("Waves", into: context)
        try context.save()

        let reader = container.newContext()
        let thumbnails = Dictionary(
            uniqueKeysWithValues: try reader.fetch(Configuration.self).map {
                ($0.name, $0.thumbnail)
            }
        )
        let expected: [String: Data?] = ["Spots": new, "Waves": nil]
        #expect(thumbnails == expected)
    }

    @Test(
        "other contexts merge an upsert as an update of the survivor",
        arguments: TestStoreKind.available
    )
    func otherContextsMergeTheSurvivor(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let writer = container.newContext()
        let original = insertConfiguration("Spots", into: writer)
        try writer.save()
        let observer = container.newContext()
        let observed = try #require(
            try observer.existingObject(with: original.objectID) as? Configuration
        )
        #expect(!observed.isFault)
        let context = container.newContext()
        context.mergePolicy = .overwrite
        var broadcast: ObjectChanges?
        context.onDidSave { broadcast = $0 }
        insertConfiguration("Spots", seed: 77, into: context)
        try context.save()
        let changes = try #require(broadcast)
        observer.mergeChanges(from: changes)
        #expect(observed.seed == 77)
        #expect(try observer.count(FetchRequest<Configuration>()) == 1)
    }

    @Test(
        "an insert committed by another context during the save is resolved, not an error",
        arguments: TestStoreKind.available
    )
    func concurrentInsertDuringSave(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: [Ledger.self])
        let setup = container.newContext()
        let saved = Ledger(context: setup)
        saved.code = "a"
        try setup.save()

        let context = container.newContext()
        context.mergePolicy = .overwrite
        let updating = Ledger(context: context)
        updating.code = "a"
        updating.amount = 1
        let inserting = Ledger(context: context)
        inserting.code = "b"
        inserting.amount = 2
        // The saved "a" gets `willSave()` after this save resolved its inserts and before it
        // commits: the moment for another context to commit a "b" of its own.
        let other = container.newContext()
        var otherError: (any Error)?
        var otherID: ObjectID?
        Ledger.onWillSave = { object in
            guard !object.isInserted, object.managedObjectContext === context else { return }
            Ledger.onWillSave = nil
            let competing = Ledger(context: other)
            competing.code = "b"
            competing.amount = 3
            otherID = competing.objectID
            do { try other.save() } catch { otherError = error }
        }
        defer { Ledger.onWillSave = nil }
        var changes = ObjectChanges()
        context.onDidSave { changes = $0 }
        try context.save()

        #expect(otherError == nil)
        let competingID = try #require(otherID)
        #expect(Set(changes.updated) == [saved.objectID, competingID])
        #expect(changes.inserted.isEmpty)
        let amounts = Dictionary(
            uniqueKeysWithValues: try container.newContext().fetch(Ledger.self).map {
                ($0.code, $0.amount)
            }
        )
        #expect(amounts == ["a": 1, "b": 2])
    }

    // MARK: - Store wins (.rollback)

    @Test(
        "rollback: an insert that matches a saved object is dropped and the store is unchanged",
        arguments: StoreKind.allCases
    )
    func rollbackDropsDuplicate(kind: StoreKind) throws {
        let fixture = UpsertFixture(kind: kind)
        let container = try fixture.open()
        let writer = container.newContext()
        let original = insertConfiguration("Spots", into: writer)
        original.feed = 0.01
        let kept = Snapshot(context: writer)
        kept.configuration = original
        try writer.save()
        let id = original.objectID

        let context = container.newContext()
        context.mergePolicy = .rollback
        var saved = ObjectChanges()
        context.onDidSave { saved = $0 }
        let imported = insertConfiguration("Spots", into: context)
        imported.feed = 0.5
        let orphan = Snapshot(context: context)
        orphan.step = 7
        orphan.configuration = imported
        try context.save()

        #expect(imported.objectID == id)
        #expect(imported.managedObjectContext == nil)
        #expect(imported.feed == 0.5, "the dropped instance keeps the values it had")
        #expect(orphan.configuration == nil, "relationships to the dropped object are cleared")
        #expect(saved.inserted == [orphan.objectID])
        #expect(saved.updated.isEmpty)
        let reader = container.newContext()
        let stored = try #require(try reader.existingObject(with: id) as? Configuration)
        #expect(stored.feed == 0.01)
        #expect(stored.snapshots.count == 1)
        #expect(try reader.count(FetchRequest<Configuration>()) == 1)
        #expect(try reader.count(FetchRequest<Snapshot>()) == 2)
    }

    @Test(
        "rollback: a save whose only change is a duplicate writes nothing",
        arguments: TestStoreKind.available
    )
    func rollbackOnlyDuplicate(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        insertConfiguration("Spots", into: context)
        try context.save()
        context.mergePolicy = .rollback
        var saved: ObjectChanges?
        context.onDidSave { saved = $0 }
        insertConfiguration("Spots", into: context)
        try context.save()
        #expect(saved?.isEmpty == true)
        #expect(!context.hasChanges)
        #expect(try context.count(FetchRequest<Configuration>()) == 1)
    }

    // MARK: - Pending inserts against each other

    @Test(
        "two pending inserts: the first keeps its ID; the last values win with overwrite",
        arguments: StoreKind.allCases
    )
    func pendingOverwrite(kind: StoreKind) throws {
        let fixture = UpsertFixture(kind: kind)
        let container = try fixture.open()
        let context = container.newContext()
        context.mergePolicy = .overwrite
        var saved = ObjectChanges()
        context.onDidSave { saved = $0 }
        let objects = (1...3).map { seed in
            let object = insertConfiguration("Spots", seed: UInt64(seed), into: context)
            return object
        }
        try context.save()
        #expect(saved.inserted == [objects[0].objectID])
        #expect(saved.updated.isEmpty)
        #expect(objects.allSatisfy { $0.objectID == objects[0].objectID })
        #expect(objects[0].managedObjectContext === context)
        #expect(objects[1].managedObjectContext == nil && objects[2].managedObjectContext == nil)
        let reader = container.newContext()
        let all = try reader.fetch(Configuration.self)
        #expect(all.map(\.seed) == [3])
    }

    @Test(
        "two pending inserts: the first wins with rollback; a saved object beats both",
        arguments: TestStoreKind.available
    )
    func pendingRollback(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        context.mergePolicy = .rollback
        let first = insertConfiguration("Spots", seed: 1, into: context)
        insertConfiguration("Spots", seed: 2, into: context)
        try context.save()
        #expect(try context.fetch(Configuration.self).map(\.seed) == [1])

        context.mergePolicy = .overwrite
        let third = insertConfiguration("Spots", seed: 3, into: context)
        let fourth = insertConfiguration("Spots", seed: 4, into: context)
        var saved = ObjectChanges()
        context.onDidSave { saved = $0 }
        try context.save()
        #expect(saved.updated == [first.objectID] && saved.inserted.isEmpty)
        #expect(first.seed == 4)
        #expect(third.objectID == first.objectID && fourth.objectID == first.objectID)
    }

    // MARK: - Compound constraints

    @Test(
        "a compound constraint upserts only when every attribute matches",
        arguments: StoreKind.allCases
    )
    func compoundConstraint(kind: StoreKind) throws {
        let fixture = UpsertFixture(kind: kind)
        let container = try fixture.open()
        let context = container.newContext()
        for (row, column) in [(0, 0), (0, 1), (1, 0)] {
            let cell = Cell(context: context)
            cell.row = row
            cell.column = column
        }
        try context.save()
        let ids = Dictionary(
            uniqueKeysWithValues: try context.fetch(Cell.self).map {
                ("\($0.row),\($0.column)", $0.objectID)
            }
        )

        context.mergePolicy = .overwrite
        var saved = ObjectChanges()
        context.onDidSave { saved = $0 }
        for (row, column, value) in [(0, 1, 0.5), (1, 1, 0.25), (1, 0, 0.75)] {
            let cell = Cell(context: context)
            cell.row = row
            cell.column = column
            cell.value = value
        }
        try context.save()
        #expect(Set(saved.updated) == [ids["0,1"], ids["1,0"]])
        #expect(saved.inserted.count == 1)

        context.mergePolicy = .rollback
        let dropped = Cell(context: context)
        dropped.row = 0
        dropped.column = 1
        dropped.value = 9
        try context.save()

        let reader = container.newContext()
        let values = Dictionary(
            uniqueKeysWithValues: try reader.fetch(Cell.self).map {
                ("\($0.row),\($0.column)", $0.value)
            }
        )
        #expect(values == ["0,0": 0, "0,1": 0.5, "1,0": 0.75, "1,1": 0.25])
    }

    // MARK: - Randomized

    /// What the test expects a save to hold for one unique name.
    struct Expected: Equatable {
        var id: ObjectID
        var seed: UInt64
        /// The steps of the object's snapshots.
        var snapshots: Set<Int> = []
    }

    @Test(
        "random inserts of a few names with snapshots, updates, deletes, saves and reopens agree with a model",
        arguments: [MergePolicy.error, .overwrite, .rollback],
        [1, 2, UInt64(Date().timeIntervalSince1970)]
    )
    func randomized(policy: MergePolicy, seed: UInt64) throws {
        let steps =
            ProcessInfo.processInfo.environment["OBJECTLOG_RANDOM_STEPS"].flatMap(Int.init) ?? 200
        var generator = SeededGenerator(seed: seed)
        let fixture = UpsertFixture(kind: .file)
        var container = try fixture.open()
        var changes: ObjectChanges?
        func makeContext() -> ManagedObjectContext {
            let context = container.newContext()
            context.mergePolicy = policy
            context.onDidSave { changes = $0 }
            return context
        }
        var context = makeContext()
        let names = ["a", "b", "c", "d", "e"]
        var saved: [String: Expected] = [:]
        var inserts: [(name: String, seed: UInt64, object: Configuration, snapshot: Int?)] = []
        // Saved snapshots without a configuration, by step; every snapshot has its own step.
        var orphans: Set<Int> = []
        var nextStep = 0
        var updates: [String: UInt64] = [:]
        var deletes: Set<String> = []
        let label = "seed \(seed), policy \(policy)"

        for step in 0..<steps {
            let roll = Int.random(in: 0..<100, using: &generator)
            let name = names.randomElement(using: &generator) ?? "a"
            let value = UInt64.random(in: 0..<1000, using: &generator)
            if roll < 45 {
                let object = insertConfiguration(name, seed: value, into: context)
                var step: Int?
                if Bool.random(using: &generator) {
                    let snapshot = Snapshot(context: context)
                    snapshot.step = nextStep
                    snapshot.configuration = object
                    step = nextStep
                    nextStep += 1
                }
                inserts.append((name, value, object, step))
            } else if roll < 60, let id = saved[name]?.id, !deletes.contains(name) {
                let object = try context.object(with: id, as: Configuration.self)
                object.seed = value
                updates[name] = value
            } else if roll < 68, let id = saved[name]?.id, !deletes.contains(name) {
                context.delete(try context.object(with: id))
                deletes.insert(name)
                updates[name] = nil
            } else if roll < 95 {
                var expected = saved.filter { !deletes.contains($0.key) }
                for (name, value) in updates { expected[name]?.seed = value }
                var updated = Set(updates.keys.compactMap { expected[$0]?.id })
                var inserted: Set<ObjectID> = []
                var collides = false
                var expectedOrphans = orphans
                for insert in inserts {
                    let added = Set(insert.snapshot.map { [$0] } ?? [])
                    if let existing = expected[insert.name] {
                        collides = true
                        if policy == .overwrite {
                            expected[insert.name]?.seed = insert.seed
                            expected[insert.name]?.snapshots.formUnion(added)
                            if !inserted.contains(existing.id) { updated.insert(existing.id) }
                        } else {
                            expectedOrphans.formUnion(added)
                        }
                    } else {
                        expected[insert.name] = Expected(
                            id: insert.object.objectID,
                            seed: insert.seed,
                            snapshots: added
                        )
                        inserted.insert(insert.object.objectID)
                    }
                }
                changes = nil
                if policy == .error && collides {
                    let error = try #require(throws: ObjectLogError.self, "\(label), step \(step)")
                    {
                        try context.save()
                    }
                    #expect(error.code == .uniqueness, "\(label), step \(step)")
                    context.rollback()
                } else {
                    try context.save()
                    saved = expected
                    orphans = expectedOrphans
                    let hasChanges = !(inserts.isEmpty && updates.isEmpty && deletes.isEmpty)
                    #expect((changes != nil) == hasChanges, "\(label), step \(step)")
                    let reported = changes ?? ObjectChanges()
                    func configurations(_ ids: [ObjectID]) -> [ObjectID] {
                        ids.filter { $0.entityName == "Configuration" }
                    }
                    #expect(
                        Set(configurations(reported.inserted)) == inserted,
                        "\(label), step \(step)"
                    )
                    #expect(
                        Set(configurations(reported.updated)) == updated,
                        "\(label), step \(step)"
                    )
                    #expect(
                        configurations(reported.deleted).count == deletes.count,
                        "\(label), step \(step)"
                    )
                    for insert in inserts {
                        #expect(
                            insert.object.objectID == expected[insert.name]?.id,
                            "\(label), step \(step): \(insert.name)"
                        )
                    }
                }
                inserts = []
                updates = [:]
                deletes = []
                let reader = container.newContext()
                let stored = try reader.fetch(Configuration.self)
                let actual = Dictionary(
                    stored.map {
                        (
                            $0.name,
                            Expected(
                                id: $0.objectID,
                                seed: $0.seed,
                                snapshots: Set($0.snapshots.map(\.step))
                            )
                        )
                    },
                    uniquingKeysWith: { first, _ in first }
                )
                #expect(stored.count == actual.count, "\(label), step \(step): duplicates")
                #expect(actual == saved, "\(label), step \(step)")
                let snapshots = try reader.fetch(Snapshot.self)
                #expect(
                    Set(snapshots.filter { $0.configuration == nil }.map(\.step)) == orphans,
                    "\(label), step \(step): orphans"
                )
                #expect(
                    snapshots.count == orphans.count
                        + saved.values.map(\.snapshots.count).reduce(0, +),
                    "\(label), step \(step): snapshots"
                )
            } else {
                context.rollback()
                inserts = []
                updates = [:]
                deletes = []
                try container.close()
                container = try fixture.open()
                context = makeContext()
            }
        }
    }

    // MARK: - What stays an error

    @Test(
        "an updated object that collides with another saved object fails under every policy",
        arguments: [MergePolicy.error, .overwrite, .rollback]
    )
    func updateCollisionFails(policy: MergePolicy) throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let context = container.newContext()
        insertConfiguration("Spots", into: context)
        let second = insertConfiguration("Stripes", into: context)
        try context.save()
        context.mergePolicy = policy
        second.name = "Spots"
        let error = try #require(throws: ObjectLogError.self) { try context.save() }
        #expect(error.code == .uniqueness)
        #expect(error.message.contains(#"name = "Spots""#))
        #expect(second.isUpdated)
        #expect(try container.newContext().count(FetchRequest<Configuration>()) == 2)
    }

    @Test(
        "an insert that matches two different objects on two constraints fails the save",
        arguments: [MergePolicy.overwrite, .rollback]
    )
    func ambiguousInsertFails(policy: MergePolicy) throws {
        let container = try PersistentContainer.inMemory(for: [Specimen.self])
        let context = container.newContext()
        let first = Specimen(context: context)
        first.code = "A"
        first.label = "alpha"
        let second = Specimen(context: context)
        second.code = "B"
        second.label = "beta"
        try context.save()
        context.mergePolicy = policy
        let imported = Specimen(context: context)
        imported.code = "A"
        imported.label = "beta"
        let error = try #require(throws: ObjectLogError.self) { try context.save() }
        #expect(error.code == .uniqueness)
        #expect(imported.isInserted && imported.managedObjectContext === context)
        // Matching one object on one constraint and nothing on the other is an upsert.
        imported.label = "gamma"
        try context.save()
        let codes = try container.newContext().fetch(Specimen.self).map { "\($0.code)/\($0.label)" }
        #expect(
            Set(codes) == (policy == .overwrite ? ["A/gamma", "B/beta"] : ["A/alpha", "B/beta"])
        )
    }

    @Test(
        "an insert may take a value that this save moves away from or deletes",
        arguments: TestStoreKind.available
    )
    func valuesLeavingInTheSameSave(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        context.mergePolicy = .overwrite
        let renamed = insertConfiguration("Spots", into: context)
        let deleted = insertConfiguration("Waves", into: context)
        try context.save()
        renamed.name = "Mazes"
        context.delete(deleted)
        let spots = insertConfiguration("Spots", into: context)
        let waves = insertConfiguration("Waves", into: context)
        // The renamed object now holds "Mazes": a new "Mazes" merges into it.
        insertConfiguration("Mazes", seed: 5, into: context)
        var saved = ObjectChanges()
        context.onDidSave { saved = $0 }
        try context.save()
        #expect(Set(saved.inserted) == [spots.objectID, waves.objectID])
        #expect(saved.updated == [renamed.objectID])
        #expect(saved.deleted == [deleted.objectID])
        #expect(renamed.seed == 5)
        let names = try container.newContext().fetch(Configuration.self).map(\.name)
        #expect(Set(names) == ["Spots", "Waves", "Mazes"] && names.count == 3)
    }
}

/// Entities for to-one and inverse-less relationship upserts.
final class Stock: ManagedObject {
    @Attribute(.unique) var sku = ""
    @Attribute var quantity = 0
    @Relationship(inverse: \Shelf.stock) var shelf: Shelf?
}

final class Shelf: ManagedObject {
    @Attribute var name = ""
    @Relationship var stock: Set<Stock>
    @Relationship var featured: Stock?
}

/// An entity whose `willSave()` runs a test's closure, to act in the middle of a save.
final class Ledger: ManagedObject {
    @Attribute(.unique) var code = ""
    @Attribute var amount = 0

    /// Called from `willSave()`; only the concurrency test sets it.
    nonisolated(unsafe) static var onWillSave: ((Ledger) -> Void)?

    override func willSave() { Self.onWillSave?(self) }
}
