import Foundation
import ObjectLog
import ObjectLogStore
import StoreTestSupport
import TestSupport
import Testing

// Versions of one small model. Each version's classes name their entities explicitly, so two
// versions are two sets of Swift classes describing the same stored entities.

enum V1 {
    final class Note: ManagedObject {
        @Attribute var title = ""
        @Attribute var stars: Int8 = 0
        @Attribute var count: UInt8 = 0
        @Attribute var weight: Float = 0
        @Attribute var summary: String? = nil
        @Attribute var body = ""
        @Attribute var obsolete = 0
        @Attribute var attachment = Data()
        @Relationship var folder: Folder?
        override class var entityName: String { "Note" }
    }

    final class Folder: ManagedObject {
        @Attribute var name = ""
        @Relationship(inverse: \Note.folder) var notes: Set<Note>
        override class var entityName: String { "Folder" }
    }

    final class Scrap: ManagedObject {
        @Attribute var text = ""
        override class var entityName: String { "Scrap" }
    }

    static let entities: [ManagedObject.Type] = [Note.self, Folder.self, Scrap.self]
}

enum V2 {
    final class Note: ManagedObject {
        // Renamed from `title`.
        @Attribute(originalName: "title") var heading = ""
        // Int8 -> Int64, UInt8 -> UInt32, Float -> Double: widening.
        @Attribute var stars: Int64 = 0
        @Attribute var count: UInt32 = 0
        @Attribute var weight: Double = 0
        // Optional -> required, with a default for the nils.
        @Attribute var summary = "(none)"
        // Required -> optional.
        @Attribute var body: String? = nil
        // `obsolete` is gone; `priority` is new and takes its default.
        @Attribute var priority = 3
        // Moves to external storage.
        @Attribute(.externalStorage) var attachment = Data()
        // A renamed relationship; the folder's side changes its delete rule.
        @Relationship(deleteRule: .nullify) var parent: Folder?
        @Relationship var related: Set<Note>
        override class var entityName: String { "Note" }
        override class var originalPropertyNames: [String: String] { ["parent": "folder"] }
    }

    final class Folder: ManagedObject {
        @Attribute var name = ""
        @Relationship(inverse: \Note.parent, deleteRule: .cascade) var items: Set<Note>
        override class var entityName: String { "Folder" }
        override class var originalPropertyNames: [String: String] { ["items": "notes"] }
    }

    // Scrap is removed; Label is new.
    final class Label: ManagedObject {
        @Attribute var text = ""
        override class var entityName: String { "Label" }
    }

    static let entities: [ManagedObject.Type] = [Note.self, Folder.self, Label.self]
    /// What version 1 had that this version drops, with its objects and values.
    static let removals = ["Scrap", "Note.obsolete"]
}

enum V3 {
    // Renames stay declared while stores of the version before them may still be opened: a
    // version 1 store migrates to this version directly.
    final class Note: ManagedObject {
        @Attribute(originalName: "title") var heading = ""
        @Attribute var stars: Int64 = 0
        @Attribute var count: UInt32 = 0
        @Attribute var weight: Double = 0
        @Attribute var summary = "(none)"
        @Attribute var body: String? = nil
        @Attribute var priority = 3
        @Attribute(.externalStorage) var attachment = Data()
        @Attribute var pinned = false
        @Relationship var parent: Collection?
        @Relationship var related: Set<Note>
        override class var entityName: String { "Note" }
        override class var originalPropertyNames: [String: String] { ["parent": "folder"] }
    }

    // Folder renamed Collection.
    final class Collection: ManagedObject {
        @Attribute var name = ""
        @Relationship(inverse: \Note.parent, deleteRule: .cascade) var items: Set<Note>
        override class var entityName: String { "Collection" }
        override class var originalEntityName: String? { "Folder" }
        override class var originalPropertyNames: [String: String] { ["items": "notes"] }
    }

    final class Label: ManagedObject {
        @Attribute var text = ""
        override class var entityName: String { "Label" }
    }

    static let entities: [ManagedObject.Type] = [Note.self, Collection.self, Label.self]
}

/// A version that changes a type in a way that cannot be inferred.
enum Incompatible {
    final class Note: ManagedObject {
        @Attribute var title = 0
        @Attribute var stars: Int8 = 0
        @Attribute var count: UInt8 = 0
        @Attribute var weight: Float = 0
        @Attribute var summary: String? = nil
        @Attribute var body = ""
        @Attribute var obsolete = 0
        @Attribute var attachment = Data()
        @Relationship var folder: Folder?
        override class var entityName: String { "Note" }
    }

    final class Folder: ManagedObject {
        @Attribute var name = ""
        @Relationship(inverse: \Note.folder) var notes: Note?
        override class var entityName: String { "Folder" }
    }
}

/// A version whose changes cannot be inferred in two more ways: an attribute that becomes a
/// relationship, and a relationship whose destination is another entity.
enum IncompatibleKinds {
    final class Note: ManagedObject {
        @Relationship var title: Folder?
        @Attribute var stars: Int8 = 0
        @Attribute var count: UInt8 = 0
        @Attribute var weight: Float = 0
        @Attribute var summary: String? = nil
        @Attribute var body = ""
        @Attribute var obsolete = 0
        @Attribute var attachment = Data()
        @Relationship var folder: Note?
        override class var entityName: String { "Note" }
    }

    final class Folder: ManagedObject {
        @Attribute var name = ""
        override class var entityName: String { "Folder" }
    }
}

/// V1 with a uniqueness constraint on the title.
enum V1Unique {
    final class Note: ManagedObject {
        @Attribute(.unique) var title = ""
        @Attribute var stars: Int8 = 0
        @Attribute var count: UInt8 = 0
        @Attribute var weight: Float = 0
        @Attribute var summary: String? = nil
        @Attribute var body = ""
        @Attribute var obsolete = 0
        @Attribute var attachment = Data()
        @Relationship var folder: Folder?
        override class var entityName: String { "Note" }
    }

    final class Folder: ManagedObject {
        @Attribute var name = ""
        @Relationship(inverse: \Note.folder) var notes: Set<Note>
        override class var entityName: String { "Folder" }
    }
}

@Suite("Lightweight migration: a store outlives its model")
struct MigrationTests {
    /// Writes version 1 into `container`: two folders, three notes (one without summary), one
    /// scrap, and a metadata value.
    func writeVersion1(into container: PersistentContainer, duplicateTitles: Bool = false) throws {
        let context = container.newContext()
        let inbox = V1.Folder(context: context)
        inbox.name = "Inbox"
        let archive = V1.Folder(context: context)
        archive.name = "Archive"
        for index in 0..<3 {
            let note = V1.Note(context: context)
            note.title = duplicateTitles ? "same" : "note \(index)"
            note.stars = Int8(-100 + index)
            note.count = UInt8(250 + index)
            note.weight = 1.5 + Float(index)
            note.summary = index == 1 ? nil : "summary \(index)"
            note.body = "body \(index)"
            note.obsolete = 42
            note.attachment = Data(repeating: UInt8(index), count: index == 2 ? 20_000 : 10)
            note.folder = index == 0 ? archive : inbox
        }
        let scrap = V1.Scrap(context: context)
        scrap.text = "gone"
        try context.save()
        try container.setMetadata(.string("kept"), forKey: "user.setting")
        try context.save()
        try container.close()
    }

    /// Writes a version 1 store file at `path`.
    func writeVersion1(at path: String, duplicateTitles: Bool = false) throws {
        try writeVersion1(
            into: PersistentContainer(path: path, for: V1.entities),
            duplicateTitles: duplicateTitles
        )
    }

    /// Writes a version 1 store of `store`'s kind.
    func writeVersion1(_ store: TestStore, duplicateTitles: Bool = false) throws {
        try writeVersion1(into: store.open(for: V1.entities), duplicateTitles: duplicateTitles)
    }

    func checkVersion2(_ container: PersistentContainer) throws {
        let context = container.newContext()
        let notes = try context.fetch(V2.Note.self).sorted { $0.heading < $1.heading }
        #expect(notes.map(\.heading) == ["note 0", "note 1", "note 2"])
        #expect(notes.map(\.stars) == [-100, -99, -98])
        #expect(notes.map(\.count) == [250, 251, 252])
        #expect(notes.map(\.weight) == [1.5, 2.5, 3.5])
        #expect(notes.map(\.summary) == ["summary 0", "(none)", "summary 2"])
        #expect(notes.map(\.body) == ["body 0", "body 1", "body 2"])
        #expect(notes.map(\.priority) == [3, 3, 3])
        #expect(notes.map(\.attachment.count) == [10, 10, 20_000])
        #expect(notes[2].attachment.allSatisfy { $0 == 2 })
        #expect(notes.map { $0.parent?.name } == ["Archive", "Inbox", "Inbox"])
        #expect(notes.allSatisfy { $0.related.isEmpty })
        let folders = try context.fetch(V2.Folder.self).sorted { $0.name < $1.name }
        #expect(folders.map(\.name) == ["Archive", "Inbox"])
        #expect(folders.map(\.items.count) == [1, 2])
        #expect(try context.count(FetchRequest<V2.Label>()) == 0)
        #expect(container.metadata["user.setting"] == .string("kept"))
    }

    @Test(
        "every inferred change: renames, widening, optionality, defaults, storage, entities",
        arguments: TestStoreKind.persistent
    )
    func inferredChanges(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        try writeVersion1(store)
        let container = try store.open(for: V2.entities, removing: V2.removals)
        try checkVersion2(container)
        // The removed entity's objects are gone, and new objects save beside the old ones.
        #expect(try container.coordinator.store.liveCount(entity: nil) == 5 + 2)
        let context = container.newContext()
        let label = V2.Label(context: context)
        label.text = "new"
        let note = try context.fetch(V2.Note.self).first { $0.heading == "note 1" }
        note?.priority = 1
        try context.save()
        try container.close()

        let reopened = try store.open(for: V2.entities, removing: V2.removals)
        let again = reopened.newContext()
        #expect(try again.fetch(V2.Note.self).map(\.priority).sorted() == [1, 3, 3])
        #expect(try again.fetch(V2.Label.self).map(\.text) == ["new"])
        let history = try #require(try ModelHistory.read(from: reopened.coordinator.store))
        #expect(history.versions.count == 2)
        #expect(history.versions.last?.hash == reopened.model.versionHash)
        try reopened.close()
    }

    @Test("migration writes one small transaction and rewrites no object")
    func noRewrite() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("notes.objectlog")
        try writeVersion1(at: path)
        let before = try LogStore.open(path: path, options: .readOnlyExisting)
        let (transactions, bytes) = (before.transactionCount, before.fileBytes)
        try before.close()
        let container = try PersistentContainer(path: path, for: V2.entities, removing: V2.removals)
        let store = container.coordinator.logStore!
        #expect(store.transactionCount == transactions + 1)
        // The new schema, and a delete of the removed entity's object: a few KB at most.
        #expect(store.fileBytes - bytes < 8192)
        try container.close()
    }

    @Test("compaction rewrites older records in the current layout")
    func compactionRewrites() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("notes.objectlog")
        try writeVersion1(at: path)
        let container = try PersistentContainer(path: path, for: V2.entities, removing: V2.removals)
        try container.coordinator.logStore!.compact()
        try checkVersion2(container)
        try container.close()
        // After compaction no record is older than the current version: raw reads see the
        // current layout without any translation installed.
        let raw = try LogStore.open(path: path, options: .readOnlyExisting)
        defer { try? raw.close() }
        let schema = try #require(try ModelHistory.read(from: raw)?.current?.schema)
        let note = try #require(schema.entity(named: "Note"))
        var decoded = 0
        try raw.forEachLiveObject(entity: note.tag) { _, _, payload in
            let values = try StoreInspector.decode(payload: payload, entity: note)
            #expect(values.map(\.name).contains("priority"))
            decoded += 1
        }
        #expect(decoded == 3)
        let reopened = try PersistentContainer(path: path, for: V2.entities, removing: V2.removals)
        try checkVersion2(reopened)
        try reopened.close()
    }

    @Test(
        "three versions: each older store opens with the newest model",
        arguments: TestStoreKind.persistent
    )
    func threeVersions(kind: TestStoreKind) throws {
        // From version 1 directly to version 3, and through version 2.
        let direct = try TestStore(kind)
        try writeVersion1(direct)
        let stepped = try TestStore(kind)
        try writeVersion1(stepped)
        try stepped.open(for: V2.entities, removing: V2.removals).close()
        for store in [direct, stepped] {
            let container = try store.open(for: V3.entities, removing: V2.removals)
            let context = container.newContext()
            let notes = try context.fetch(V3.Note.self).sorted { $0.heading < $1.heading }
            #expect(notes.map(\.heading) == ["note 0", "note 1", "note 2"])
            #expect(notes.map(\.stars) == [-100, -99, -98])
            #expect(notes.map(\.summary) == ["summary 0", "(none)", "summary 2"])
            #expect(notes.map(\.attachment.count) == [10, 10, 20_000])
            #expect(notes.map(\.pinned) == [false, false, false])
            #expect(notes.map { $0.parent?.name } == ["Archive", "Inbox", "Inbox"])
            let collections = try context.fetch(V3.Collection.self).sorted { $0.name < $1.name }
            #expect(collections.map(\.name) == ["Archive", "Inbox"])
            #expect(collections.map(\.items.count) == [1, 2])
            try container.close()
        }
    }

    @Test(
        "a change that cannot be inferred fails naming each one, and writes nothing",
        arguments: TestStoreKind.persistent
    )
    func refusal(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        try writeVersion1(store)
        let before = try store.contents()
        do {
            _ = try store.open(
                for: [Incompatible.Note.self, Incompatible.Folder.self],
                removing: ["Scrap"]
            )
            Issue.record("a type change must not be inferred")
        } catch {
            #expect((error as? ObjectLogError)?.code == .modelMismatch)
            let lines = (error as? ObjectLogError)?.errors.map(\.message) ?? []
            #expect(lines.count == 2)
            #expect(lines.contains { $0.contains("'Note.title': type string -> int64") })
            #expect(lines.contains { $0.contains("'Folder.notes': to-many -> to-one") })
        }
        #expect(try store.contents() == before)
        do {
            _ = try store.open(for: [IncompatibleKinds.Note.self, IncompatibleKinds.Folder.self])
            Issue.record("a kind change and a new destination must not be inferred")
        } catch {
            let lines = (error as? ObjectLogError)?.errors.map(\.message) ?? []
            #expect(lines.contains { $0.contains("'Note.title': attribute -> relationship") })
            #expect(lines.contains { $0.contains("'Note.folder': destination Folder -> Note") })
        }
        #expect(try store.contents() == before)
        // The old model still opens it.
        try store.open(for: V1.entities).close()
    }

    @Test(
        "a new uniqueness constraint the objects break fails naming them, and writes nothing",
        arguments: TestStoreKind.persistent
    )
    func newConstraint(kind: TestStoreKind) throws {
        let broken = try TestStore(kind)
        try writeVersion1(broken, duplicateTitles: true)
        let before = try broken.contents()
        let entities: [ManagedObject.Type] = [
            V1Unique.Note.self, V1Unique.Folder.self, V1.Scrap.self,
        ]
        do {
            _ = try broken.open(for: entities)
            Issue.record("duplicate titles must fail the new constraint")
        } catch {
            let error = try #require(error as? ObjectLogError)
            #expect(error.code == .uniqueness)
            #expect(error.message.contains("'Note' on 'title'"))
            #expect(error.message.contains("title = \"same\""))
        }
        #expect(try broken.contents() == before)

        let fine = try TestStore(kind)
        try writeVersion1(fine)
        let container = try fine.open(for: entities)
        let context = container.newContext()
        #expect(
            try context.fetch(V1Unique.Note.self).map(\.title).sorted() == [
                "note 0", "note 1", "note 2",
            ]
        )
        let duplicate = V1Unique.Note(context: context)
        duplicate.title = "note 0"
        let error = #expect(throws: ObjectLogError.self) { try context.save() }
        #expect(error?.code == .uniqueness)
        try container.close()
    }

    @Test(
        "a store written by a newer model version is refused by the older one, unchanged",
        arguments: TestStoreKind.persistent
    )
    func downgrade(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        try writeVersion1(store)
        try store.open(for: V2.entities, removing: V2.removals).close()
        let before = try store.contents()
        do {
            _ = try store.open(for: V1.entities)
            Issue.record("an older model must not open a newer store")
        } catch {
            #expect((error as? ObjectLogError)?.code == .modelMismatch)
            #expect("\(error)".contains("newer version of its model"))
        }
        #expect(try store.contents() == before)
    }

    @Test(
        "a read-only open writes nothing: a file migrates in memory, a database refuses",
        arguments: TestStoreKind.persistent
    )
    func readOnlyOpen(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        try writeVersion1(store)
        let before = try store.contents()
        let model = try ManagedObjectModel(V2.entities, removing: V2.removals)
        switch kind {
        case .postgreSQL:
            // Its tables hold version 1's rows, which it cannot read as version 2's.
            let error = #expect(throws: ObjectLogError.self) {
                try store.open(model: model, readOnly: true)
            }
            #expect(error?.code == .unsupported)
            #expect(
                error?.message.contains("a read-only open of this store cannot migrate") == true
            )
        default:
            let container = try store.open(model: model, readOnly: true)
            try checkVersion2(container)
            try container.close()
        }
        #expect(try store.contents() == before)
    }

    @Test("the model is stored once per version, not in every metadata change")
    func compactHistory() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("notes.objectlog")
        try writeVersion1(at: path)
        let metadata = try PersistentContainer.metadataForStore(at: path)
        #expect(metadata[PersistentStoreCoordinator.modelKey] == nil)
        let encoded = try #require(metadata[ModelHistory.versionsKey])
        #expect(encoded.description.utf8.count < 200)
        let container = try PersistentContainer(path: path, for: V1.entities)
        let bytes = container.coordinator.logStore!.fileBytes
        for value in 0..<10 {
            try container.setMetadata(.integer(Int64(value)), forKey: "user.counter")
            try container.newContext().save()
        }
        // Ten metadata saves of a small dictionary: well under the 6 KB a schema would cost each.
        #expect(container.coordinator.logStore!.fileBytes - bytes < 10 * 1024)
        try container.close()
    }
}
