import Foundation
import ObjectLogStore
import StoreTestSupport
import TestSupport
import Testing

@testable import ObjectLog

@Suite("Store metadata, model checks and notifications")
struct MetadataTests {
    @Test("metadata writes become durable with the next save; reserved keys are refused")
    func metadata() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("meta.objectlog")
        do {
            let container = try PersistentContainer(path: path, for: testEntities)
            try container.setMetadata(.string("dark"), forKey: "theme")
            #expect(container.metadata["theme"] == .string("dark"))
            #expect(try PersistentContainer.metadataForStore(at: path)["theme"] == nil)
            do {
                try container.setMetadata(
                    .string("x"),
                    forKey: PersistentStoreCoordinator.modelHashKey
                )
                Issue.record("reserved keys must be refused")
            } catch {
                #expect(error.code == .invalidArgument)
            }
            try container.newContext().save()
            #expect(try PersistentContainer.metadataForStore(at: path)["theme"] == .string("dark"))
            try container.close()
        }
        let stored = try PersistentContainer.metadataForStore(at: path)
        #expect(stored["theme"] == .string("dark"))
        let model = try ManagedObjectModel(testEntities)
        #expect(stored[PersistentStoreCoordinator.modelHashKey] == .string(model.versionHash))
        // The schema is a record of its own, named by hash in the metadata.
        #expect(stored[PersistentStoreCoordinator.modelKey] == nil)
        let store = try LogStore.open(path: path)
        defer { try? store.close() }
        let history = try #require(try ModelHistory.read(from: store))
        #expect(history.versions.map(\.hash) == [model.versionHash])
        #expect(history.current?.schema.entities.map(\.name) == model.schema.entities.map(\.name))
    }

    /// A document whose settings live in the store metadata.
    final class Document {
        var settings = ["zoom": 2.0]
        var saves = 0
    }

    @Test("a will-save hook copies per-document settings into the metadata")
    func willSaveHook() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("doc.objectlog")
        let container = try PersistentContainer(path: path, for: testEntities)
        let context = container.newContext()
        let document = Document()
        context.onWillSave { context in
            document.saves += 1
            let encoded = document.settings.mapValues { MetadataValue.double($0) }
            try context.coordinator.setMetadata(.dictionary(encoded), forKey: "rdlab.settings")
        }
        let cell = Cell(context: context)
        cell.row = 1
        try context.save()
        document.settings["zoom"] = 4
        try context.save()
        #expect(document.saves == 2)
        try container.close()
        let stored = try PersistentContainer.metadataForStore(at: path)
        #expect(stored["rdlab.settings"] == .dictionary(["zoom": .double(4)]))
    }

    final class EntityAdded: ManagedObject {
        @Attribute var label = ""
        @Attribute var extra = 0
        override class var entityName: String { "Tag" }
    }

    @Test("opening a store written with another model migrates it; the old model then refuses it")
    func modelChange() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("old.objectlog")
        try PersistentContainer(path: path, for: [Tag.self, Cell.self]).close()
        let migrated = try PersistentContainer(path: path, for: [EntityAdded.self])
        #expect(migrated.model.entity(named: "Cell") == nil)
        try migrated.close()
        do {
            _ = try PersistentContainer(path: path, for: [Tag.self, Cell.self])
            Issue.record("the older model must not open the migrated store")
        } catch {
            #expect(error.code == .modelMismatch)
        }
    }

    @Test(
        "will-save, did-save and objects-did-change report the saved IDs",
        arguments: TestStoreKind.available
    )
    func notifications(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        var events: [String] = []
        var saved: [ObjectChanges] = []
        context.onWillSave { _ in events.append("will") }
        context.onDidSave { changes in
            events.append("did")
            saved.append(changes)
        }
        context.onObjectsDidChange { _ in events.append("change") }
        let cell = Tag(context: context)
        try context.save()
        cell.label = "updated"
        let doomed = Tag(context: context)
        try context.save()
        context.delete(doomed)
        try context.save()
        #expect(
            events == ["will", "change", "did", "will", "change", "did", "will", "change", "did"]
        )
        #expect(saved[0].inserted == [cell.objectID])
        #expect(saved[1].updated == [cell.objectID] && saved[1].inserted == [doomed.objectID])
        #expect(saved[2].deleted == [doomed.objectID])
        #expect(saved[2].transactionNumber ?? 0 > saved[1].transactionNumber ?? .max)
    }
}

@Suite("Types re-exported for users of ObjectLog alone")
struct ReexportTests {
    @Test("metadata and store option types are reachable through ObjectLog")
    func names() throws {
        let value: ObjectLog.MetadataValue = .array([.integer(1), .string("a")])
        var options = ObjectLog.StoreOptions.inMemory
        options.durable = false
        let container = try PersistentContainer(path: "x", for: [Tag.self], options: options)
        try container.setMetadata(value, forKey: "list")
        let metadata: ObjectLog.Metadata = container.metadata
        #expect(metadata["list"] == value)
    }
}
