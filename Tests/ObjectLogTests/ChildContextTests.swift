import Foundation
import StoreTestSupport
import Testing

@testable import ObjectLog

@Suite("Child contexts: saves into the parent, reads of its unsaved state, nesting")
struct ChildContextTests {
    /// The configuration names a fresh context on `container` fetches, sorted.
    private func savedNames(_ container: PersistentContainer) throws -> [String] {
        try container.newContext().fetch(Configuration.self).map(\.name).sorted()
    }

    /// `context`'s configurations, by name.
    private func names(_ context: ManagedObjectContext) throws -> [String] {
        try context.fetch(Configuration.self).map(\.name).sorted()
    }

    @Test(
        "a child's save goes into its parent, not the store, until the parent saves",
        arguments: TestStoreKind.available
    )
    func saveIntoParent(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let parent = container.newContext()
        let saved = Configuration(context: parent)
        saved.name = "A"
        try parent.save()

        let child = parent.newChildContext()
        #expect(child.parent === parent)
        #expect(parent.parent == nil)
        let edited = try #require(try child.existingObject(with: saved.objectID) as? Configuration)
        #expect(edited !== saved)
        edited.name = "B"
        let inserted = Configuration(context: child)
        inserted.name = "C"
        inserted.feed = 0.01
        try child.save()
        #expect(!child.hasChanges)

        #expect(saved.name == "B")
        #expect(parent.updatedObjects == [saved])
        let parentInserted = try #require(parent.insertedObjects.first as? Configuration)
        #expect(parentInserted.objectID == inserted.objectID)
        #expect(parentInserted.feed == 0.01)
        #expect(try savedNames(container) == ["A"], "nothing reached the store")

        try parent.save()
        #expect(try savedNames(container) == ["B", "C"])
        let fresh = container.newContext()
        let stored = try #require(
            try fresh.existingObject(with: inserted.objectID) as? Configuration
        )
        #expect(stored.name == "C")
    }

    @Test(
        "a child's fetches see the parent's unsaved inserts, updates and deletes",
        arguments: TestStoreKind.available
    )
    func fetchSeesParent(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let parent = container.newContext()
        for name in ["kept", "renamed", "deleted"] {
            Configuration(context: parent).name = name
        }
        try parent.save()
        let byName = Dictionary(
            uniqueKeysWithValues: try parent.fetch(Configuration.self).map { ($0.name, $0) }
        )
        let renamed = try #require(byName["renamed"])
        renamed.name = "new name"
        renamed.feed = 0.5
        parent.delete(try #require(byName["deleted"]))
        let added = Configuration(context: parent)
        added.name = "added"
        let snapshot = Snapshot(context: parent)
        snapshot.step = 7
        snapshot.configuration = added

        let child = parent.newChildContext()
        #expect(try names(child) == ["added", "kept", "new name"])
        #expect(try child.count(FetchRequest<Configuration>()) == 3)
        let matching = try child.fetch(
            FetchRequest<Configuration>(predicate: #Predicate { $0.feed > 0.1 })
        )
        #expect(matching.map(\.name) == ["new name"])
        let childAdded = try #require(
            try child.existingObject(with: added.objectID) as? Configuration
        )
        #expect(childAdded.snapshots.map(\.step) == [7])
        let deletedID = try #require(byName["deleted"]).objectID
        #expect(throws: ObjectLogError.self) { try child.existingObject(with: deletedID) }

        // A change the parent makes later shows in the child's next fetch.
        Configuration(context: parent).name = "later"
        #expect(try names(child) == ["added", "kept", "later", "new name"])
    }

    @Test("a child's fetch and bulk fault load on two threads read the parent's state")
    func parallelReads() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let parent = container.newContext()
        for row in 0..<400 {
            let cell = Cell(context: parent)
            cell.row = row
            cell.value = Double(row)
        }
        try parent.save()
        let cells = try parent.fetch(Cell.self).sorted { $0.row < $1.row }
        for cell in cells where cell.row % 2 == 0 { cell.value = -1 }
        for cell in cells where cell.row % 10 == 1 { parent.delete(cell) }

        let child = parent.newChildContext()
        child.tuning.parallelDecodingThreshold = 2
        child.tuning.parallelPartSize = 16
        child.tracer = ContextTracer()
        #expect(try child.fetch(Cell.self).count == 360)
        // Faults of every object, loaded all at once after a few one by one.
        let faults = child.newChildContext()
        faults.tuning = child.tuning
        faults.tracer = ContextTracer()
        let ids = try faults.fetchIdentifiers(FetchRequest<Cell>())
        #expect(ids.count == 360)
        var sum = 0.0
        let loaded = try ids.map { id throws(ObjectLogError) in
            try faults.object(with: id, as: Cell.self)
        }
        for cell in loaded { sum += cell.value }
        #expect(faults.tracer?.statistics.parallelDecodings == 1)
        var expected = 0.0
        for row in 0..<400 where row % 10 != 1 {
            expected += row % 2 == 0 ? -1 : Double(row)
        }
        #expect(sum == expected)
    }

    @Test("a child's rollback, or dropping it, leaves the parent as it was")
    func discard() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let parent = container.newContext()
        let configuration = Configuration(context: parent)
        configuration.name = "A"
        try parent.save()

        let child = parent.newChildContext()
        let draft = try #require(try child.fetch(Configuration.self).first)
        draft.name = "draft"
        Configuration(context: child).name = "new"
        child.rollback()
        #expect(!child.hasChanges)
        #expect(try names(child) == ["A"])
        try child.save()
        #expect(!parent.hasChanges)

        do {
            let dropped = parent.newChildContext()
            try #require(try dropped.fetch(Configuration.self).first).name = "dropped"
            Configuration(context: dropped).name = "dropped too"
        }
        #expect(!parent.hasChanges)
        #expect(configuration.name == "A")
        #expect(try names(parent) == ["A"])
    }

    @Test("children of children save one level up at a time", arguments: TestStoreKind.available)
    func grandchild(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let root = container.newContext()
        let parentOnly = Configuration(context: root)
        parentOnly.name = "root's unsaved"

        let child = root.newChildContext()
        let grandchild = child.newChildContext()
        #expect(grandchild.parent === child)
        #expect(try names(grandchild) == ["root's unsaved"])
        let seen = try #require(try grandchild.fetch(Configuration.self).first)
        seen.feed = 0.25
        let made = Configuration(context: grandchild)
        made.name = "grandchild's"
        try grandchild.save()

        #expect(child.hasChanges)
        #expect(try names(child) == ["grandchild's", "root's unsaved"])
        #expect(parentOnly.feed == 0.055, "the root has not seen it yet")
        #expect(root.insertedObjects == [parentOnly])

        try child.save()
        #expect(parentOnly.feed == 0.25)
        #expect(try names(root) == ["grandchild's", "root's unsaved"])
        #expect(try savedNames(container).isEmpty)

        try root.save()
        #expect(try savedNames(container) == ["grandchild's", "root's unsaved"])
        let fresh = container.newContext()
        let stored = try #require(try fresh.existingObject(with: made.objectID) as? Configuration)
        #expect(stored.name == "grandchild's")
    }

    @Test(
        "a child's delete cascades in the parent, and the parent's save writes it",
        arguments: TestStoreKind.available
    )
    func cascadeDelete(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let parent = container.newContext()
        let configuration = Configuration(context: parent)
        configuration.name = "Spots"
        let snapshot = Snapshot(context: parent)
        snapshot.configuration = configuration
        try parent.save()

        let child = parent.newChildContext()
        let doomed = try #require(try child.fetch(Configuration.self).first)
        child.delete(doomed)
        #expect(try child.count(FetchRequest<Snapshot>()) == 0)
        try child.save()
        #expect(configuration.isDeleted && snapshot.isDeleted)
        #expect(try container.newContext().count(FetchRequest<Snapshot>()) == 1)
        try parent.save()
        let fresh = container.newContext()
        #expect(try fresh.count(FetchRequest<Configuration>()) == 0)
        #expect(try fresh.count(FetchRequest<Snapshot>()) == 0)
    }

    @Test("the child's values win over the parent's, and inverses stay in step in the parent")
    func childWins() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let parent = container.newContext()
        let configuration = Configuration(context: parent)
        configuration.name = "A"
        try parent.save()

        let child = parent.newChildContext()
        let edited = try #require(try child.fetch(Configuration.self).first)
        #expect(edited.snapshots.isEmpty)
        // The parent changes the same object after the child read it.
        configuration.name = "parent's"
        let parentSnapshot = Snapshot(context: parent)
        parentSnapshot.configuration = configuration
        // The child's own change.
        edited.name = "child's"
        let childSnapshot = Snapshot(context: child)
        childSnapshot.configuration = edited
        try child.save()

        #expect(configuration.name == "child's")
        let applied = try #require(
            try parent.existingObject(with: childSnapshot.objectID) as? Snapshot
        )
        #expect(configuration.snapshots == [applied])
        #expect(applied.configuration === configuration)
        #expect(parentSnapshot.configuration == nil, "its inverse was taken away with it")
        try parent.save()
    }

    @Test("saving a change to an object the parent deleted since is a conflict")
    func conflictWithParentDelete() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let parent = container.newContext()
        let configuration = Configuration(context: parent)
        configuration.name = "A"
        try parent.save()

        let child = parent.newChildContext()
        let edited = try #require(try child.fetch(Configuration.self).first)
        edited.feed = 0.2
        parent.delete(configuration)
        #expect(throws: ObjectLogError.self) { try child.save() }
        #expect(configuration.isDeleted)
        #expect(child.hasChanges, "a failed save keeps the child's changes")
    }

    @Test("external data a child saves reaches the store only with the parent's save")
    func externalData() throws {
        let store = try TestStore(.logFile)
        let container = try store.open(for: testEntities)
        let parent = container.newContext()
        let child = parent.newChildContext()
        let snapshot = Snapshot(context: child)
        let bytes = Data((0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        snapshot.state = bytes
        try child.save()
        let inParent = try #require(try parent.existingObject(with: snapshot.objectID) as? Snapshot)
        #expect(inParent.state == bytes)
        try parent.save()
        let fresh = container.newContext()
        let stored = try #require(try fresh.existingObject(with: snapshot.objectID) as? Snapshot)
        #expect(stored.state == bytes)
    }

    @Test("a parent's undo manager records a child's save as one of its changes")
    func parentUndoesChildSave() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let parent = container.newContext()
        let configuration = Configuration(context: parent)
        configuration.name = "A"
        try parent.save()
        parent.undoManager = ContextUndoManager()

        let child = parent.newChildContext()
        try #require(try child.fetch(Configuration.self).first).name = "B"
        Configuration(context: child).name = "C"
        try child.save()
        #expect(try names(parent) == ["B", "C"])
        parent.undo()
        #expect(try names(parent) == ["A"])
        #expect(!parent.hasChanges)
    }

    @Test("a child of a background context lives in its perform call")
    func backgroundParent() async throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let background = container.newBackgroundContext()
        let id = try await background.perform { context in
            let child = context.newChildContext()
            let configuration = Configuration(context: child)
            configuration.name = "from a child"
            try child.save()
            try context.save()
            return configuration.objectID
        }
        let fresh = container.newContext()
        let stored = try #require(try fresh.existingObject(with: id) as? Configuration)
        #expect(stored.name == "from a child")
    }
}
