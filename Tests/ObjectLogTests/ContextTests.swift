import Foundation
import ObjectLogStore
import StoreTestSupport
import TestSupport
import Testing

@testable import ObjectLog

@Suite("Context: insert, save, reopen, change tracking")
struct ContextTests {
    @Test(
        "every attribute type round-trips through a save and a reopen",
        arguments: TestStoreKind.persistent
    )
    func roundTrip(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let identifier = UUID()
        let created = Date(timeIntervalSinceReferenceDate: 123_456.789)
        let thumbnail = Data((0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        var id: ObjectID
        do {
            let container = try store.open(for: testEntities)
            let context = container.newContext()
            let configuration = Configuration(context: context)
            configuration.name = "Spots é✓"
            configuration.feed = 0.037
            configuration.timestep = 0.5
            configuration.width = -512
            configuration.seed = .max
            configuration.isFavorite = true
            configuration.created = created
            configuration.identifier = identifier
            configuration.homepage = URL(string: "https://example.org/a?b=c")
            configuration.notes = nil
            configuration.render = RenderSettings(palette: "magma", gamma: 2.2)
            configuration.thumbnail = thumbnail
            configuration.scratch = 99
            id = configuration.objectID
            #expect(context.hasChanges)
            try context.save()
            #expect(!context.hasChanges)
            try container.close()
        }
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        let object = try #require(try context.existingObject(with: id) as? Configuration)
        #expect(object.name == "Spots é✓")
        #expect(object.feed == 0.037)
        #expect(object.kill == 0.062)
        #expect(object.timestep == 0.5)
        #expect(object.width == -512)
        #expect(object.seed == .max)
        #expect(object.isFavorite)
        #expect(object.created == created)
        #expect(object.identifier == identifier)
        #expect(object.homepage == URL(string: "https://example.org/a?b=c"))
        #expect(object.notes == nil)
        #expect(object.render == RenderSettings(palette: "magma", gamma: 2.2))
        #expect(object.thumbnail == thumbnail)
        #expect(object.scratch == 0, "transient attributes are not saved")
    }

    @Test(
        "fetched objects are faults until read, and uniqued per context",
        arguments: TestStoreKind.available
    )
    func faultingAndUniquing(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let writer = container.newContext()
        for index in 0..<10 {
            let cell = Cell(context: writer)
            cell.row = index
            cell.value = Double(index) / 2
        }
        try writer.save()
        let reader = container.newContext()
        let cells = try reader.fetch(Cell.self)
        #expect(cells.count == 10)
        // A database store returns its objects loaded: their rows come with the query.
        let faults = kind != .postgreSQL
        #expect(cells.allSatisfy { $0.isFault == faults })
        #expect(try reader.count(FetchRequest<Cell>()) == 10)
        #expect(try reader.fetchIdentifiers(FetchRequest<Cell>()).count == 10)
        let first = cells[0]
        #expect(first.value == Double(first.row) / 2)
        #expect(!first.isFault)
        #expect(cells[1].isFault == faults)
        let again = try reader.object(with: first.objectID)
        #expect(again === first)
        #expect(try reader.fetch(Cell.self).first === first)
        #expect(reader.registeredObjects.count == 10)
    }

    @Test(
        "inserted, updated and deleted sets, changedValues and committedValues",
        arguments: TestStoreKind.available
    )
    func changeTracking(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        let kept = Cell(context: context)
        kept.row = 1
        let doomed = Cell(context: context)
        doomed.row = 2
        #expect(context.insertedObjects == [kept, doomed])
        #expect(context.changedValues(of: kept)["row"] as? Int == 1)
        try context.save()
        #expect(context.insertedObjects.isEmpty)
        #expect(!kept.isInserted)

        kept.value = 3.5
        #expect(kept.isUpdated)
        #expect(context.updatedObjects == [kept])
        let changed = context.changedValues(of: kept)
        #expect(changed.count == 1)
        #expect(changed["value"] as? Double == 3.5)
        #expect(context.committedValues(of: kept, forKeys: ["value"])["value"] as? Double == 0)
        context.delete(doomed)
        #expect(doomed.isDeleted)
        #expect(context.deletedObjects == [doomed])
        #expect(try context.count(FetchRequest<Cell>()) == 1)
        try context.save()
        #expect(!context.hasChanges)
        #expect(doomed.managedObjectContext == nil)
        #expect(context.committedValues(of: kept)["value"] as? Double == 3.5)
        #expect(try container.newContext().count(FetchRequest<Cell>()) == 1)
    }

    @Test(
        "every changed object keeps its own snapshot across saves, failures and refreshes",
        arguments: TestStoreKind.available
    )
    func snapshotsOfManyObjects(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        let cells = (0..<200).map { index in
            let cell = Cell(context: context)
            cell.row = index
            cell.value = Double(index)
            return cell
        }
        try context.save()
        for round in 1...3 {
            // Change all (the first change of each takes a snapshot), some of them twice.
            for (index, cell) in cells.enumerated() {
                cell.value = Double(index * 10 + round)
                if index % 3 == 0 { cell.column = round }
            }
            for (index, cell) in cells.enumerated() {
                let before: Double = round == 1 ? Double(index) : Double(index * 10 + round - 1)
                let committed = context.committedValues(of: cell)["value"] as? Double
                #expect(committed == before)
                let changed = context.changedValues(of: cell)
                #expect(changed["value"] as? Double == cell.value)
                let changesColumn = changed["column"] != nil
                #expect(changesColumn == (index % 3 == 0))
            }
            // A save refused by another context's change keeps every snapshot.
            let other = container.newContext()
            let rival = try other.object(with: cells[7].objectID, as: Cell.self)
            rival.value = -1
            try other.save()
            #expect(throws: ObjectLogError.self) { try context.save() }
            #expect(context.committedValues(of: cells[8])["value"] as? Double != cells[8].value)
            // Refreshing the conflicting object with its changes takes the store's values as
            // its new snapshot.
            context.refresh(cells[7], mergeChanges: true)
            #expect(context.committedValues(of: cells[7])["value"] as? Double == -1)
            #expect(context.changedValues(of: cells[7])["value"] as? Double == cells[7].value)
            try context.save()
            #expect(!context.hasChanges)
        }
        let values = try container.newContext().fetch(FetchRequest<Cell>()).map(\.value).sorted()
        let expected: [Double] = (0..<200).map { Double($0 * 10 + 3) }
        #expect(values == expected)
    }

    @Test("rollback discards inserts, updates and deletes", arguments: TestStoreKind.available)
    func rollback(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        let cell = Cell(context: context)
        cell.value = 1
        try context.save()
        cell.value = 2
        let extra = Cell(context: context)
        extra.row = 5
        let other = Cell(context: context)
        other.row = 6
        try context.save()
        other.value = 9
        context.delete(cell)
        let fresh = Cell(context: context)
        fresh.row = 7
        context.rollback()
        #expect(!context.hasChanges)
        #expect(fresh.managedObjectContext == nil)
        #expect(!cell.isDeleted)
        #expect(cell.value == 2)
        #expect(other.value == 0)
        #expect(try context.count(FetchRequest<Cell>()) == 3)
    }

    @Test(
        "reset forgets registered objects; refresh reloads or merges",
        arguments: TestStoreKind.available
    )
    func resetAndRefresh(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let first = container.newContext()
        let cell = Cell(context: first)
        cell.row = 1
        try first.save()
        first.reset()
        #expect(first.registeredObjects.isEmpty)
        #expect(cell.managedObjectContext == nil)

        let mine = try #require(try first.fetch(Cell.self).first)
        let second = container.newContext()
        let theirs = try #require(try second.fetch(Cell.self).first)
        theirs.value = 42
        try second.save()
        #expect(mine.row == 1)
        mine.column = 9
        first.refresh(mine, mergeChanges: true)
        #expect(mine.value == 42, "store values arrive for unchanged properties")
        #expect(mine.column == 9, "unsaved changes survive a merging refresh")
        first.refresh(mine, mergeChanges: false)
        #expect(mine.isFault)
        #expect(mine.column == 0)
        #expect(!first.hasChanges)
    }

    @Test(
        "existingObject throws for missing IDs; object(with:) gives a fault",
        arguments: TestStoreKind.available
    )
    func objectsByID(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        let missing = ObjectID(entityName: "Cell", key: 9999)
        #expect(throws: ObjectLogError.self) { try context.existingObject(with: missing) }
        do {
            _ = try context.existingObject(with: missing)
        } catch {
            #expect(error.code == .notFound)
            #expect(error.message.contains("Cell#9999"))
        }
        #expect(try context.object(with: missing).isFault)
    }

    @Test(
        "existingObjects loads many objects in one read; a missing one throws, leaving nothing",
        arguments: TestStoreKind.available
    )
    func manyObjectsByID(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let writer = container.newContext()
        let cells = (0..<50).map { index in
            let cell = Cell(context: writer)
            cell.row = index
            return cell
        }
        try writer.save()
        let ids = cells.reversed().map(\.objectID)
        let reader = container.newContext()
        reader.tracer = ContextTracer()
        let already = try reader.existingObject(with: ids[3], as: Cell.self)
        let loaded = try reader.existingObjects(with: ids, as: Cell.self)
        #expect(loaded.map(\.row) == Array((0..<50).reversed()), "in the order of the IDs")
        #expect(loaded.allSatisfy { !$0.isFault })
        #expect(loaded[3] === already, "a registered object is the one returned")
        #expect(reader.statistics.batchFaultLoads == 1, "one read for the 49 not yet loaded")

        let other = container.newContext()
        let missing = ObjectID(entityName: "Cell", key: 9999)
        do {
            _ = try other.existingObjects(with: [ids[0], missing], as: Cell.self)
            Issue.record("a missing object must throw")
        } catch {
            #expect(error.code == .notFound)
            #expect(error.objectID == missing)
        }
        #expect(
            !other.registeredObjects.contains { $0.objectID == missing },
            "no fault is left for a missing object"
        )
        other.delete(try other.existingObject(with: ids[1], as: Cell.self))
        #expect(throws: ObjectLogError.self) {
            try other.existingObjects(with: [ids[1]], as: Cell.self)
        }
        #expect(throws: ObjectLogError.self) {
            try other.existingObjects(with: [ids[2]], as: Snapshot.self)
        }
    }

    @Test("external data above the threshold is stored as a blob, small data stays inline")
    func externalStorage() throws {
        let directory = TemporaryDirectory()
        let container = try makeContainer(directory)
        let context = container.newContext()
        let big = Snapshot(context: context)
        big.state = Data(repeating: 3, count: ExternalStorage.minimumByteCount)
        let small = Snapshot(context: context)
        small.state = Data([1, 2, 3])
        try context.save()
        let blobs = try container.coordinator.logStore!.blobFiles()
        #expect(blobs.count == 1)
        let bigRecord = try #require(
            try container.coordinator.logStore!.readObject(big.objectID.key)
        )
        #expect(bigRecord.blobs.count == 1)
        #expect(bigRecord.payload.count < 100)
        let reader = container.newContext()
        let loaded = try reader.fetch(Snapshot.self)
        #expect(Set(loaded.map(\.state.count)) == [3, ExternalStorage.minimumByteCount])
    }
}

@Suite("Lazily loaded external data")
struct LazyExternalDataTests {
    @Test("external data is read on first access only, and survives saves that do not read it")
    func lazyLoading() throws {
        let directory = TemporaryDirectory()
        let state = Data(
            (0..<(ExternalStorage.minimumByteCount * 2)).map { UInt8(truncatingIfNeeded: $0) }
        )
        let id: ObjectID
        do {
            let container = try makeContainer(directory)
            let context = container.newContext()
            let snapshot = Snapshot(context: context)
            snapshot.state = state
            snapshot.step = 1
            id = snapshot.objectID
            try context.save()
            try container.close()
        }
        do {
            let container = try makeContainer(directory)
            let context = container.newContext()
            let snapshot = try #require(try context.existingObject(with: id) as? Snapshot)
            #expect(snapshot.step == 1)
            #expect(
                context.externalReferences.count == 1,
                "the blob is not read with the other values"
            )
            snapshot.step = 2
            #expect(Array(context.changedValues(of: snapshot).keys) == ["step"])
            try context.save()
            #expect(context.externalReferences.count == 1)
            let predicate = try context.fetch(
                FetchRequest<Snapshot>(predicate: #Predicate { $0.step > 5 })
            )
            #expect(predicate.isEmpty)
            #expect(snapshot.state == state)
            // The read data is kept with its reference, so that a save writes it back as the
            // same blob without hashing it again.
            #expect(context.externalReferences.count == 1)
            #expect(context.externalReferences.values.first?.data == state)
            try container.close()
        }
        let container = try makeContainer(directory)
        let context = container.newContext()
        let snapshot = try #require(try context.existingObject(with: id) as? Snapshot)
        #expect(snapshot.step == 2)
        #expect(snapshot.state == state)
        #expect(try container.coordinator.logStore!.blobFiles().count == 1)
    }

    @Test(
        "a write before the first read discards unread external data, and only that data",
        arguments: TestStoreKind.persistent
    )
    func writeBeforeRead(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let state = Data(repeating: 7, count: ExternalStorage.minimumByteCount)
        let thumbnail = Data(repeating: 9, count: ExternalStorage.minimumByteCount + 1)
        let replacement = Data([1, 2, 3])
        let snapshotID: ObjectID
        let configurationID: ObjectID
        do {
            let container = try store.open(for: testEntities)
            let context = container.newContext()
            let configuration = Configuration(context: context)
            configuration.name = "lazy"
            configuration.thumbnail = thumbnail
            let snapshot = Snapshot(context: context)
            snapshot.state = state
            snapshot.configuration = configuration
            snapshotID = snapshot.objectID
            configurationID = configuration.objectID
            try context.save()
            try container.close()
        }
        do {
            let container = try store.open(for: testEntities)
            let context = container.newContext()
            let snapshot = try #require(try context.existingObject(with: snapshotID) as? Snapshot)
            let configuration = try #require(
                try context.existingObject(with: configurationID) as? Configuration
            )
            #expect(snapshot.step == 0 && configuration.name == "lazy")
            #expect(context.externalReferences.count == 2, "both blobs are unread")
            snapshot.state = replacement
            #expect(snapshot.state == replacement, "the write is not replaced by the blob")
            #expect(Array(context.changedValues(of: snapshot).keys) == ["state"])
            try context.save()
            #expect(snapshot.state == replacement)
            #expect(configuration.thumbnail == thumbnail, "other unread data still loads")
            try container.close()
        }
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        let snapshot = try #require(try context.existingObject(with: snapshotID) as? Snapshot)
        #expect(snapshot.state == replacement)
    }
}

@Suite("Failed saves")
struct FailedSaveTests {
    @Test(
        "a store failure during save leaves the context's changes in place and the file as it was"
    )
    func storeFailure() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("fail.objectlog")
        let container = try PersistentContainer(path: path, for: testEntities)
        let context = container.newContext()
        let kept = Tag(context: context)
        kept.label = "saved"
        try context.save()
        kept.label = "changed"
        let added = Tag(context: context)
        added.label = "new"
        try container.close()
        do {
            try context.save()
            Issue.record("saving to a closed store must fail")
        } catch {
            #expect(error.code == .store)
        }
        #expect(context.hasChanges)
        #expect(added.isInserted && kept.isUpdated)
        #expect(kept.label == "changed")
        let reopened = try PersistentContainer(path: path, for: testEntities)
        let reader = reopened.newContext()
        #expect(try reader.fetch(Tag.self).map(\.label) == ["saved"])
    }
}

/// A `Codable` value whose encoding fails when told to (to make a save fail while encoding).
struct Fragile: Codable, Sendable {
    var refuses = false

    func encode(to encoder: any Encoder) throws {
        if refuses {
            throw EncodingError.invalidValue(
                self,
                .init(codingPath: encoder.codingPath, debugDescription: "refused")
            )
        }
        var container = encoder.singleValueContainer()
        try container.encode(refuses)
    }

    init(refuses: Bool = false) { self.refuses = refuses }

    init(from decoder: any Decoder) throws {
        refuses = try decoder.singleValueContainer().decode(Bool.self)
    }
}

final class Holder: ManagedObject {
    @Attribute var name = ""
    @Attribute var fragile = Fragile()
}

extension FailedSaveTests {
    @Test("a value that cannot be encoded fails the save, which writes none of its objects")
    func encodingFailure() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("encode.objectlog")
        let container = try PersistentContainer(path: path, for: [Holder.self])
        let context = container.newContext()
        let saved = Holder(context: context)
        saved.name = "saved"
        try context.save()
        // Objects before and after the failing one in the same save, and an update.
        let before = Holder(context: context)
        before.name = "before"
        let failing = Holder(context: context)
        failing.name = "failing"
        failing.fragile = Fragile(refuses: true)
        let after = Holder(context: context)
        after.name = "after"
        saved.name = "renamed"
        do {
            try context.save()
            Issue.record("a value whose encoding throws must fail the save")
        } catch {
            #expect(error.code == .invalidValue)
            #expect(error.message.contains("fragile"))
        }
        #expect(before.isInserted && failing.isInserted && after.isInserted && saved.isUpdated)
        let reader = container.newContext()
        #expect(try reader.fetch(Holder.self).map(\.name) == ["saved"])
        // Fixed, the same context saves everything.
        failing.fragile = Fragile()
        try context.save()
        let names = try container.newContext().fetch(Holder.self).map(\.name).sorted()
        #expect(names == ["after", "before", "failing", "renamed"])
    }
}

/// An entity that stamps itself when saved, as rdlab's configurations do.
final class Stamped: ManagedObject {
    @Attribute var title = ""
    @Attribute var saves = 0
    @Attribute var modified = Date(timeIntervalSinceReferenceDate: 0)

    override func willSave() {
        saves += 1
        modified = Date()
    }
}

@Suite("Object lifecycle hooks")
struct LifecycleTests {
    @Test(
        "willSave runs for inserted and updated objects and its changes are saved",
        arguments: TestStoreKind.available
    )
    func willSaveStamps(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: [Stamped.self])
        let context = container.newContext()
        let object = Stamped(context: context)
        try context.save()
        #expect(object.saves == 1)
        #expect(object.modified > Date(timeIntervalSinceReferenceDate: 0))
        try context.save()
        #expect(object.saves == 1, "unchanged objects are not saved again")
        object.title = "renamed"
        try context.save()
        #expect(object.saves == 2)
        #expect(!context.hasChanges)
        let reader = container.newContext()
        #expect(try reader.fetch(Stamped.self).first?.saves == 2)
    }

    @Test(
        "an object that another's willSave changes is saved in the same save",
        arguments: TestStoreKind.available
    )
    func willSaveChangesAnother(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: [Counter.self])
        let context = container.newContext()
        let first = Counter(context: context)
        let second = Counter(context: context)
        try context.save()
        // Updating `first` alone; its willSave also changes `second`, which was not updated.
        first.partner = second
        first.value = 1
        try context.save()
        #expect(!context.hasChanges)
        let values = try container.newContext().fetch(Counter.self).map(\.value).sorted()
        #expect(values == [1, 100])
    }
}

@Suite("Reflection")
struct ReflectionTests {
    @Test(
        "dumping a container, a context and an object works (test failure reports do it)",
        arguments: TestStoreKind.available
    )
    func dumpDoesNotStop(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: [Counter.self])
        let context = container.newContext()
        let counter = Counter(context: context)
        try context.save()
        var text = ""
        dump(container, to: &text, maxDepth: 8)
        dump(context, to: &text, maxDepth: 8)
        dump(counter, to: &text, maxDepth: 8)
        #expect(text.contains("PersistentStoreCoordinator"))
        #expect(text.contains("LockedValue"))
    }
}

/// An entity whose willSave changes another object.
final class Counter: ManagedObject {
    @Attribute var value = 0
    /// Not saved: the object whose value this one's save sets (for the test above).
    var partner: Counter?

    override func willSave() {
        if let partner, partner.value != 100 { partner.value = 100 }
    }
}
