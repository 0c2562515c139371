import Foundation
import ObjectLogStore
import StoreTestSupport
import TestSupport
import Testing

@testable import ObjectLog

@Suite("Relationships, delete rules and validation")
struct RelationshipTests {
    @Test(
        "setting either side updates the inverse side, and it survives a reopen",
        arguments: TestStoreKind.persistent
    )
    func inverses(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let configurationID: ObjectID
        do {
            let container = try store.open(for: testEntities)
            let context = container.newContext()
            let configuration = Configuration(context: context)
            configuration.name = "A"
            let first = Snapshot(context: context)
            first.step = 1
            first.configuration = configuration
            #expect(configuration.snapshots == [first])
            let second = Snapshot()
            second.step = 2
            configuration.snapshots.insert(second)
            #expect(second.managedObjectContext === context, "related objects join the context")
            #expect(second.configuration === configuration)
            let other = Configuration(context: context)
            other.name = "B"
            second.configuration = other
            #expect(configuration.snapshots == [first])
            #expect(other.snapshots == [second])
            configurationID = configuration.objectID
            try context.save()
            try container.close()
        }
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        let configuration = try #require(
            try context.existingObject(with: configurationID) as? Configuration
        )
        #expect(configuration.snapshots.map(\.step) == [1])
        #expect(configuration.snapshots.first?.configuration === configuration)
    }

    @Test(
        "cascade deletes destinations; nullify removes the object from the inverse",
        arguments: TestStoreKind.available
    )
    func cascadeAndNullify(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        let configuration = Configuration(context: context)
        let snapshots = insertSnapshots(3, of: configuration, into: context)
        try context.save()
        context.delete(snapshots[0])
        #expect(configuration.snapshots.count == 2, "nullify")
        context.delete(configuration)
        #expect(snapshots.allSatisfy { $0.isDeleted })
        try context.save()
        #expect(try context.count(FetchRequest<Snapshot>()) == 0)
        #expect(try container.newContext().count(FetchRequest<Configuration>()) == 0)
    }

    @Test("deny blocks a save naming the object and relationship; the context keeps its changes")
    func deny() throws {
        let container = try makeLogInMemoryContainer(for: testEntities)
        let context = container.newContext()
        let folder = Folder(context: context)
        let note = Note(context: context)
        note.folder = folder
        #expect(folder.notes == [note])
        try context.save()
        let transactions = container.coordinator.logStore!.transactionCount
        context.delete(folder)
        do {
            try context.save()
            Issue.record("a deny rule must fail the save")
        } catch {
            #expect(error.code == .validation)
            #expect(error.property == "notes")
            #expect(error.message.contains("\(folder.objectID)"))
            #expect(error.message.contains("deny"))
        }
        #expect(container.coordinator.logStore!.transactionCount == transactions)
        #expect(folder.isDeleted && context.hasChanges)
        context.delete(note)
        try context.save()
        #expect(try context.count(FetchRequest<Folder>()) == 0)
    }

    @Test(
        "required to-one and maximum counts are enforced at save",
        arguments: TestStoreKind.available
    )
    func counts(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        let orphan = Note(context: context)
        do {
            try context.save()
            Issue.record("a required relationship must fail the save")
        } catch {
            #expect(error.code == .validation)
            #expect(error.objectID == orphan.objectID)
            #expect(error.property == "folder")
            #expect(error.message.contains("required"))
        }
        let folder = Folder(context: context)
        orphan.folder = folder
        folder.tags = Set((0..<3).map { _ in Tag(context: context) })
        do {
            try context.save()
            Issue.record("a maximum count must fail the save")
        } catch {
            #expect(error.property == "tags")
            #expect(error.message.contains("maximum 2"))
        }
        folder.tags.removeFirst()
        try context.save()
    }

    @Test("ordered to-many keeps its order", arguments: TestStoreKind.available)
    func ordered(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        let folder = Folder(context: context)
        let notes = (0..<5).map { index in
            let note = Note(context: context)
            note.text = "\(index)"
            return note
        }
        folder.notes = notes.reversed()
        try context.save()
        let reader = container.newContext()
        let loaded = try #require(try reader.fetch(Folder.self).first)
        #expect(loaded.notes.map(\.text) == ["4", "3", "2", "1", "0"])
        #expect(loaded.notes.allSatisfy { $0.folder === loaded })
    }

    @Test(
        "unique attributes and compound constraints fail the save with entity, attributes and objects",
        arguments: TestStoreKind.available
    )
    func uniqueness(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        let first = Configuration(context: context)
        first.name = "Spots"
        try context.save()
        let second = Configuration(context: context)
        second.name = "Spots"
        do {
            try context.save()
            Issue.record("a duplicate unique value must fail the save")
        } catch {
            #expect(error.code == .uniqueness)
            #expect(error.message.contains("'Configuration'"))
            #expect(error.message.contains("'name'"))
            #expect(error.message.contains(#"name = "Spots""#))
            #expect(error.message.contains("\(second.objectID)"))
            #expect(error.message.contains("\(first.objectID)"))
        }
        #expect(second.isInserted)
        second.name = "Stripes"
        try context.save()
        first.name = "Stripes"
        second.name = "Spots"
        try context.save()

        let a = Cell(context: context)
        a.row = 1
        a.column = 2
        let b = Cell(context: context)
        b.row = 1
        b.column = 3
        try context.save()
        b.column = 2
        do {
            try context.save()
            Issue.record("a duplicate compound value must fail the save")
        } catch {
            #expect(error.message.contains("row = 1, column = 2"))
        }
        context.delete(a)
        try context.save()
        #expect(try context.count(FetchRequest<Cell>()) == 1)
    }
}
