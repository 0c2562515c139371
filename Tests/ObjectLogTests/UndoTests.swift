import Foundation
import StoreTestSupport
import Testing

@testable import ObjectLog

@Suite("Undo and redo: groups, levels, inserts, updates, deletes, relationships, saves")
struct UndoTests {
    /// A context with an undo manager, and a saved configuration named `name`.
    private func makeContext(
        _ container: PersistentContainer,
        levels: Int = 0
    ) -> ManagedObjectContext {
        let context = container.newContext()
        context.undoManager = ContextUndoManager(levelsOfUndo: levels)
        return context
    }

    /// The configurations a fresh context on `container` fetches, by name.
    private func savedNames(_ container: PersistentContainer) throws -> [String] {
        try container.newContext().fetch(Configuration.self).map(\.name).sorted()
    }

    @Test("a context has no undo manager until given one, and records nothing without it")
    func offByDefault() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let context = container.newContext()
        #expect(context.undoManager == nil)
        let configuration = Configuration(context: context)
        configuration.name = "A"
        context.processPendingChanges()
        context.undo()
        #expect(configuration.managedObjectContext === context)
        #expect(configuration.name == "A")
    }

    @Test("undo takes an insert back, redo makes it again", arguments: TestStoreKind.available)
    func insert(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = makeContext(container)
        let manager = try #require(context.undoManager)
        #expect(!manager.canUndo)
        let configuration = Configuration(context: context)
        configuration.name = "Spots"
        let id = configuration.objectID
        context.processPendingChanges()
        #expect(manager.canUndo)

        context.undo()
        #expect(configuration.managedObjectContext == nil)
        #expect(!context.hasChanges)
        #expect(context.insertedObjects.isEmpty)
        #expect(try context.fetch(Configuration.self).isEmpty)
        #expect(manager.canRedo)

        context.redo()
        #expect(configuration.managedObjectContext === context)
        #expect(configuration.objectID == id)
        #expect(configuration.name == "Spots")
        #expect(context.insertedObjects == [configuration])
        try context.save()
        #expect(try savedNames(container) == ["Spots"])
        #expect(try container.newContext().existingObject(with: id) is Configuration)
    }

    @Test(
        "undo puts attribute values back, exactly as clean when nothing was saved since",
        arguments: TestStoreKind.available
    )
    func update(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = makeContext(container)
        let configuration = Configuration(context: context)
        configuration.name = "A"
        configuration.feed = 0.01
        try context.save()

        configuration.name = "B"
        configuration.feed = 0.02
        context.processPendingChanges()
        configuration.feed = 0.03
        context.processPendingChanges()
        #expect(context.updatedObjects == [configuration])

        context.undo()
        #expect(configuration.name == "B")
        #expect(configuration.feed == 0.02)
        #expect(context.hasChanges)
        context.undo()
        #expect(configuration.name == "A")
        #expect(configuration.feed == 0.01)
        #expect(!context.hasChanges, "back to the saved values: nothing left to save")
        #expect(context.changedValues(of: configuration).isEmpty)

        context.redo()
        #expect(configuration.name == "B")
        #expect(configuration.feed == 0.02)
        #expect(context.updatedObjects == [configuration])
        #expect(Set(context.changedValues(of: configuration).keys) == ["name", "feed"])
        try context.save()
        #expect(try savedNames(container) == ["B"])
    }

    @Test(
        "undo of a delete brings back the objects its cascade deleted, with their links",
        arguments: TestStoreKind.available
    )
    func cascadeDelete(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = makeContext(container)
        let configuration = Configuration(context: context)
        configuration.name = "Spots"
        let first = Snapshot(context: context)
        first.step = 1
        first.configuration = configuration
        let second = Snapshot(context: context)
        second.step = 2
        second.configuration = configuration
        try context.save()

        context.delete(configuration)
        #expect(first.isDeleted && second.isDeleted, "the cascade ran")
        context.processPendingChanges()
        context.undo()
        #expect(!configuration.isDeleted && !first.isDeleted && !second.isDeleted)
        #expect(configuration.snapshots == [first, second])
        #expect(first.configuration === configuration)
        #expect(second.configuration === configuration)
        #expect(!context.hasChanges)
        #expect(try context.count(FetchRequest<Snapshot>()) == 2)

        context.redo()
        #expect(configuration.isDeleted && first.isDeleted && second.isDeleted)
        #expect(context.deletedObjects == [configuration, first, second])
        try context.save()
        let fresh = container.newContext()
        #expect(try fresh.count(FetchRequest<Configuration>()) == 0)
        #expect(try fresh.count(FetchRequest<Snapshot>()) == 0)
    }

    @Test(
        "undo of a relationship change keeps both sides in step",
        arguments: TestStoreKind.available
    )
    func relationshipWithInverse(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = makeContext(container)
        let spots = Configuration(context: context)
        spots.name = "Spots"
        let stripes = Configuration(context: context)
        stripes.name = "Stripes"
        let snapshot = Snapshot(context: context)
        snapshot.configuration = spots
        try context.save()

        snapshot.configuration = stripes
        #expect(spots.snapshots.isEmpty && stripes.snapshots == [snapshot])
        context.processPendingChanges()
        stripes.snapshots = []
        #expect(snapshot.configuration == nil)
        context.processPendingChanges()

        context.undo()
        #expect(snapshot.configuration === stripes)
        #expect(stripes.snapshots == [snapshot])
        context.undo()
        #expect(snapshot.configuration === spots)
        #expect(spots.snapshots == [snapshot])
        #expect(stripes.snapshots.isEmpty)
        #expect(!context.hasChanges)

        context.redo()
        try context.save()
        let fresh = container.newContext()
        let saved = try #require(try fresh.existingObject(with: snapshot.objectID) as? Snapshot)
        #expect(saved.configuration?.name == "Stripes")
        let savedStripes = try #require(saved.configuration)
        #expect(savedStripes.snapshots.map(\.objectID) == [snapshot.objectID])
    }

    @Test("undo of a nullifying delete puts the object back into the other side")
    func nullifyDelete() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let context = makeContext(container)
        let folder = Folder(context: context)
        let tag = Tag(context: context)
        folder.tags = [tag]
        let note = Note(context: context)
        note.folder = folder
        try context.save()

        context.delete(note)
        #expect(folder.notes.isEmpty, "the inverse was nullified")
        context.undo()
        #expect(folder.notes == [note])
        #expect(note.folder === folder)
        #expect(!context.hasChanges)
    }

    @Test("an explicit group, nested or not, is one level; processPendingChanges inside it is not")
    func explicitGrouping() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let context = makeContext(container)
        let manager = try #require(context.undoManager)
        let configuration = Configuration(context: context)
        configuration.name = "A"
        try context.save()

        configuration.name = "implicit"
        manager.beginUndoGrouping()
        #expect(manager.groupingLevel == 1)
        configuration.name = "B"
        context.processPendingChanges()
        let snapshot = Snapshot(context: context)
        snapshot.configuration = configuration
        manager.beginUndoGrouping()
        configuration.feed = 0.5
        manager.endUndoGrouping()
        #expect(manager.groupingLevel == 1)
        configuration.kill = 0.5
        manager.endUndoGrouping()
        #expect(manager.groupingLevel == 0)

        context.undo()
        #expect(
            configuration.name == "implicit",
            "the implicit group closed when the explicit one began"
        )
        #expect(configuration.feed == 0.055 && configuration.kill == 0.062)
        #expect(snapshot.managedObjectContext == nil)
        #expect(configuration.snapshots.isEmpty)
        context.undo()
        #expect(configuration.name == "A")
        #expect(!context.hasChanges)
        context.undo()
        #expect(configuration.isDeleted, "the saved insert, undone as a delete")
        #expect(!manager.canUndo)
    }

    @Test("a save inside an explicit group does not split it")
    func saveInsideGroup() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let context = makeContext(container)
        let manager = try #require(context.undoManager)
        manager.beginUndoGrouping()
        let configuration = Configuration(context: context)
        configuration.name = "A"
        try context.save()
        configuration.name = "B"
        manager.endUndoGrouping()
        context.undo()
        #expect(configuration.isDeleted, "the saved insert is undone as a delete")
        try context.save()
        #expect(try savedNames(container).isEmpty)
        #expect(!manager.canUndo)
    }

    @Test("levelsOfUndo keeps only the newest groups")
    func levelLimit() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let context = makeContext(container, levels: 2)
        let manager = try #require(context.undoManager)
        let configuration = Configuration(context: context)
        configuration.name = "0"
        try context.save()
        for name in ["1", "2", "3"] {
            configuration.name = name
            context.processPendingChanges()
        }
        context.undo()
        context.undo()
        #expect(!manager.canUndo)
        context.undo()
        #expect(configuration.name == "1", "the oldest group was forgotten")
        manager.levelsOfUndo = 1
        context.redo()
        context.redo()
        #expect(configuration.name == "3")
        context.undo()
        context.undo()
        #expect(configuration.name == "2", "lowering the limit dropped the older level")
    }

    @Test("a new change after an undo clears the redo levels")
    func newChangeClearsRedo() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let context = makeContext(container)
        let manager = try #require(context.undoManager)
        let configuration = Configuration(context: context)
        configuration.name = "A"
        context.processPendingChanges()
        configuration.name = "B"
        context.processPendingChanges()
        context.undo()
        #expect(manager.canRedo)
        configuration.name = "C"
        #expect(!manager.canRedo, "the open group has a change")
        context.redo()
        #expect(configuration.name == "C")
        context.undo()
        #expect(configuration.name == "A")
        #expect(manager.canRedo)
        context.redo()
        #expect(configuration.name == "C", "redo makes the new change, not the undone one")
    }

    @Test(
        "undo after a save makes new changes that the next save writes",
        arguments: TestStoreKind.available
    )
    func undoAfterSave(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = makeContext(container)
        let configuration = Configuration(context: context)
        configuration.name = "Spots"
        let snapshot = Snapshot(context: context)
        snapshot.configuration = configuration
        let id = configuration.objectID
        try context.save()

        // The insert, undone after its save: a delete to save.
        context.undo()
        #expect(context.deletedObjects == [configuration, snapshot])
        try context.save()
        #expect(try savedNames(container).isEmpty)

        // Undone again: back under the same IDs.
        context.redo()
        #expect(context.insertedObjects == [configuration, snapshot])
        try context.save()
        let fresh = container.newContext()
        let saved = try #require(try fresh.existingObject(with: id) as? Configuration)
        #expect(saved.name == "Spots")
        #expect(saved.snapshots.map(\.objectID) == [snapshot.objectID])

        // An update, undone after its save.
        configuration.name = "Stripes"
        try context.save()
        #expect(try savedNames(container) == ["Stripes"])
        context.undo()
        #expect(configuration.name == "Spots")
        #expect(context.updatedObjects == [configuration])
        try context.save()
        #expect(try savedNames(container) == ["Spots"])

        // A delete, undone after its save: the object is inserted again.
        context.delete(snapshot)
        try context.save()
        #expect(try container.newContext().count(FetchRequest<Snapshot>()) == 0)
        context.undo()
        #expect(snapshot.isInserted)
        #expect(snapshot.configuration === configuration)
        #expect(configuration.snapshots == [snapshot])
        try context.save()
        #expect(!context.hasChanges)
        try container.close()

        guard kind != .memory else { return }
        let reopened = try store.open(for: testEntities)
        let reader = reopened.newContext()
        let again = try #require(try reader.existingObject(with: id) as? Configuration)
        #expect(again.name == "Spots")
        #expect(again.snapshots.map(\.objectID) == [snapshot.objectID])
    }

    @Test("rollback and reset remove every level; undo without a level does nothing")
    func rollbackClears() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let context = makeContext(container)
        let manager = try #require(context.undoManager)
        let configuration = Configuration(context: context)
        configuration.name = "A"
        try context.save()
        configuration.name = "B"
        context.processPendingChanges()
        context.rollback()
        #expect(!manager.canUndo && !manager.canRedo)
        context.undo()
        #expect(configuration.name == "A")
        configuration.name = "C"
        context.reset()
        #expect(!manager.canUndo)
    }

    @Test("changes to objects made before the manager was set are not undone, later ones are")
    func managerSetLate() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let context = container.newContext()
        let configuration = Configuration(context: context)
        configuration.name = "before"
        context.undoManager = ContextUndoManager()
        configuration.name = "after"
        context.undo()
        #expect(configuration.name == "before")
        #expect(configuration.isInserted)
    }

    @Test("an object whose insert was undone can be inserted again by hand, once")
    func insertAfterUndo() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let context = makeContext(container)
        let configuration = Configuration(context: context)
        configuration.name = "A"
        context.undo()
        try context.insert(configuration)
        #expect(context.insertedList.count { $0 === configuration } == 1)
        try context.save()
        #expect(try savedNames(container) == ["A"])
    }

    @Test("objects-did-change handlers hear of an undo")
    func undoNotifies() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let context = makeContext(container)
        nonisolated(unsafe) var heard: [ObjectChanges] = []
        context.onObjectsDidChange { heard.append($0) }
        let configuration = Configuration(context: context)
        context.undo()
        #expect(heard.last?.deleted == [configuration.objectID])
        context.redo()
        #expect(heard.last?.inserted == [configuration.objectID])
    }
}
