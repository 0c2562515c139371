import Foundation
import ObjectLog
import StoreTestSupport
import TestSupport
import Testing

// Variants of three entities, each a set of Swift classes (classes cannot be made at run
// time): a model is one variant of each slot, and a chain of models is a random walk over them.

/// The entity that is renamed: `Tag`, then `Label`.
enum TagSlot: Int, CaseIterable {
    case tag, renamed, relabelled, absent

    final class Tag: ManagedObject {
        @Attribute var label = ""
        override class var entityName: String { "Tag" }
    }

    /// `Tag` renamed, keeping its objects.
    final class Label: ManagedObject {
        @Attribute var label = ""
        override class var entityName: String { "Label" }
        override class var originalEntityName: String? { "Tag" }
    }

    /// A `Label` that does not continue `Tag`, with an attribute more.
    final class FreshLabel: ManagedObject {
        @Attribute var label = ""
        @Attribute var color = 0
        override class var entityName: String { "Label" }
    }

    var type: ManagedObject.Type? {
        switch self {
        case .tag: Tag.self
        case .renamed: Label.self
        case .relabelled: FreshLabel.self
        case .absent: nil
        }
    }
}

/// The entity whose attributes change.
enum NoteSlot: Int, CaseIterable {
    case plain, added, renamedWidened, unique, optional

    final class Plain: ManagedObject {
        @Attribute var title = ""
        @Attribute var stars: Int32 = 0
        override class var entityName: String { "Note" }
    }

    final class Added: ManagedObject {
        @Attribute var title = ""
        @Attribute var stars: Int32 = 0
        @Attribute var pinned = false
        override class var entityName: String { "Note" }
    }

    final class RenamedWidened: ManagedObject {
        @Attribute(originalName: "title") var heading = ""
        @Attribute var stars: Int64 = 0
        override class var entityName: String { "Note" }
    }

    final class Unique: ManagedObject {
        @Attribute(.unique) var title = ""
        @Attribute var stars: Int32 = 0
        override class var entityName: String { "Note" }
    }

    final class Optional: ManagedObject {
        @Attribute var title: String? = nil
        @Attribute var stars: Int64 = 0
        override class var entityName: String { "Note" }
    }

    var type: ManagedObject.Type {
        switch self {
        case .plain: Plain.self
        case .added: Added.self
        case .renamedWidened: RenamedWidened.self
        case .unique: Unique.self
        case .optional: Optional.self
        }
    }
}

/// The entity that comes and goes, and gains a relationship.
enum BoxSlot: Int, CaseIterable {
    case absent, plain, related

    final class Plain: ManagedObject {
        @Attribute var size = 0
        override class var entityName: String { "Box" }
    }

    final class Related: ManagedObject {
        @Attribute var size = 0
        @Relationship var parent: Related?
        override class var entityName: String { "Box" }
    }

    var type: ManagedObject.Type? {
        switch self {
        case .absent: nil
        case .plain: Plain.self
        case .related: Related.self
        }
    }
}

/// One model of the walk.
struct SlotModel: Hashable, CustomStringConvertible {
    var tag: TagSlot
    var note: NoteSlot
    var box: BoxSlot

    static func random(using generator: inout SeededGenerator) -> SlotModel {
        SlotModel(
            tag: TagSlot.allCases.randomElement(using: &generator)!,
            note: NoteSlot.allCases.randomElement(using: &generator)!,
            box: BoxSlot.allCases.randomElement(using: &generator)!
        )
    }

    var types: [ManagedObject.Type] { [tag.type, note.type, box.type].compactMap { $0 } }

    /// Every name some variant has that this model lacks: what declaring every removal says.
    var absentNames: [String] {
        let all = [
            "Tag", "Label", "Box", "Label.color", "Note.title", "Note.heading", "Note.pinned",
            "Box.parent",
        ]
        let model = try? ManagedObjectModel(types)
        return all.filter { name in
            let parts = name.split(separator: ".").map(String.init)
            guard let entity = model?.entity(named: parts[0]) else { return true }
            return parts.count == 2 && entity.schema.property(named: parts[1]) == nil
        }
    }

    var description: String { "\(tag)/\(note)/\(box)" }
}

@Suite("Migration never loses data by accident")
struct MigrationSafetyTests {
    @Test(
        "an older app opening a store after an entity rename is refused; nothing is lost",
        arguments: TestStoreKind.persistent
    )
    func renameThenOlderApp(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        try writeStore(store, for: [TagSlot.Tag.self]) { context in
            TagSlot.Tag(context: context).label = "swift"
        }
        do {
            let container = try store.open(for: [TagSlot.Label.self])
            #expect(try container.newContext().fetch(TagSlot.Label.self).map(\.label) == ["swift"])
            try container.close()
        }
        let before = try store.contents()
        for readOnly in [false, true] {
            #expect {
                _ = try store.open(for: [TagSlot.Tag.self], readOnly: readOnly)
            } throws: { error in
                let error = try #require(error as? ObjectLogError)
                return error.code == .modelMismatch
                    && error.message.contains("written by a newer version of its model")
                    && error.message.contains("version 1 of 2")
            }
            #expect(try store.contents() == before)
        }
        let preview = try store.migrationPreview(for: [TagSlot.Tag.self])
        #expect(preview.outcome == .refused)
        #expect(preview.storeIsNewer)
        #expect(preview.olderRecordedVersion == 1)
        let container = try store.open(for: [TagSlot.Label.self])
        #expect(try container.newContext().fetch(TagSlot.Label.self).map(\.label) == ["swift"])
        try container.close()
    }

    /// Random walks over the slot models: each step either migrates or is refused with the
    /// store unchanged, as the preview said; after each step, every model the store recorded
    /// before the current one is refused as older, with the store unchanged.
    @Test(
        "random chains of model edits: every older version is refused, the store unchanged",
        arguments: TestStoreKind.persistent,
        1...24
    )
    func randomChains(kind: TestStoreKind, seed: UInt64) throws {
        var generator = SeededGenerator(seed: seed)
        let store = try TestStore(kind)
        var current = SlotModel.random(using: &generator)
        var recorded = [current]
        var serial = 0
        func addObjects(_ container: PersistentContainer, _ model: SlotModel) throws {
            let context = container.newContext()
            for type in model.types {
                let object = type.init()
                try context.insert(object)
                serial += 1
                switch object {
                case let note as NoteSlot.RenamedWidened: note.heading = "note \(serial)"
                case let note as NoteSlot.Plain: note.title = "note \(serial)"
                case let note as NoteSlot.Added: note.title = "note \(serial)"
                case let note as NoteSlot.Unique: note.title = "note \(serial)"
                case let note as NoteSlot.Optional: note.title = "note \(serial)"
                default: break
                }
            }
            try context.save()
        }
        do {
            let container = try store.open(for: current.types)
            try addObjects(container, current)
            try container.close()
        }
        for step in 1...6 {
            let candidate = SlotModel.random(using: &generator)
            let declares = Bool.random(using: &generator)
            let removing = declares ? candidate.absentNames : []
            let context = "seed \(seed), step \(step): \(current) -> \(candidate)"
            let before = try store.contents()
            let preview = try store.migrationPreview(for: candidate.types, removing: removing)
            #expect(try store.contents() == before, "the preview wrote: \(context)")
            let isOlder = candidate != current && recorded.contains(candidate)
            #expect(preview.storeIsNewer == isOlder, "\(context): \(preview)")
            do {
                let container = try store.open(for: candidate.types, removing: removing)
                #expect(!isOlder, "an older model opened the store: \(context)")
                #expect(preview.outcome != .refused, "\(context): \(preview)")
                try addObjects(container, candidate)
                try container.close()
                if !recorded.contains(candidate) { recorded.append(candidate) }
                current = candidate
            } catch let error as ObjectLogError {
                #expect(error.code == .modelMismatch, "\(context): \(error)")
                #expect(try store.contents() == before, "a refusal wrote: \(context)")
                #expect(preview.outcome == .refused, "\(context): \(preview)")
                if declares, !isOlder {
                    // Every removal is declared: only what cannot be inferred is refused.
                    #expect(
                        preview.changes.contains { $0.kind == .notInferred },
                        "\(context): \(error)"
                    )
                }
            }
            for older in recorded where older != current {
                let before = try store.contents()
                do {
                    _ = try store.open(for: older.types, removing: older.absentNames)
                    Issue.record("\(older) opened the store written by \(current): \(context)")
                } catch {
                    #expect(
                        "\(error)".contains("written by a newer version"),
                        "\(older) against \(current), \(context): \(error)"
                    )
                }
                #expect(try store.contents() == before, "\(older): \(context)")
            }
        }
    }

    /// The walks of ``randomChains(kind:seed:)`` on a store file and on a database side by side:
    /// each step migrates both or refuses both, with the same preview, and then every object
    /// reads the same on both, value for value.
    @Test(
        "random chains: a database migrates and refuses as a file does, to the same objects",
        .enabled(if: TestServer.runs, TestServer.skipReason),
        arguments: 1...24
    )
    func randomChainsAgree(seed: UInt64) throws {
        var generator = SeededGenerator(seed: seed)
        let file = try TestStore(.logFile)
        let database = try TestStore(.postgreSQL)
        var current = SlotModel.random(using: &generator)
        var serial = 0
        func addObjects(_ containers: [PersistentContainer], _ model: SlotModel) throws {
            serial += 1
            for container in containers {
                let context = container.newContext()
                for type in model.types {
                    let object = type.init()
                    try context.insert(object)
                    switch object {
                    case let note as NoteSlot.RenamedWidened:
                        note.heading = "note \(serial)"
                        note.stars = Int64(serial) << 40
                    case let note as NoteSlot.Plain:
                        note.title = "note \(serial)"
                        note.stars = -Int32(serial)
                    case let note as NoteSlot.Added:
                        note.title = "note \(serial)"
                        note.pinned = serial.isMultiple(of: 2)
                    case let note as NoteSlot.Unique: note.title = "note \(serial)"
                    case let note as NoteSlot.Optional:
                        note.title = serial.isMultiple(of: 3) ? nil : "note \(serial)"
                    case let tag as TagSlot.Tag: tag.label = "tag \(serial)"
                    case let label as TagSlot.Label: label.label = "label \(serial)"
                    case let label as TagSlot.FreshLabel:
                        label.label = "fresh \(serial)"
                        label.color = serial
                    case let box as BoxSlot.Plain: box.size = serial
                    case let box as BoxSlot.Related: box.size = serial
                    default: break
                    }
                }
                try context.save()
            }
        }
        /// Every object of the store, as the engine reads it, without keys (each store hands
        /// out its own).
        func objects(_ container: PersistentContainer) throws -> [String] {
            let inspector = try StoreInspector(store: container.coordinator.store)
            return try inspector.objects().map { object in
                object.entity + ": "
                    + object.values.map { "\($0.name)=\($0.value)" }.joined(separator: ", ")
            }.sorted()
        }
        do {
            let containers = try [file.open(for: current.types), database.open(for: current.types)]
            try addObjects(containers, current)
            for container in containers { try container.close() }
        }
        for step in 1...8 {
            let candidate = SlotModel.random(using: &generator)
            let removing = Bool.random(using: &generator) ? candidate.absentNames : []
            let context = "seed \(seed), step \(step): \(current) -> \(candidate)"
            let previews = try [file, database].map {
                try $0.migrationPreview(for: candidate.types, removing: removing)
            }
            #expect(previews[0].description == previews[1].description, "\(context)")
            var opened: [PersistentContainer] = []
            var refusals: [String] = []
            for store in [file, database] {
                do {
                    opened.append(try store.open(for: candidate.types, removing: removing))
                } catch {
                    refusals.append("\((error as? ObjectLogError)?.code.rawValue ?? "\(error)")")
                }
            }
            #expect(refusals.count == 0 || refusals.count == 2, "\(context): \(refusals)")
            #expect(Set(refusals).count <= 1, "\(context): \(refusals)")
            guard opened.count == 2 else {
                for container in opened { try container.close() }
                continue
            }
            #expect(try objects(opened[0]) == objects(opened[1]), "\(context)")
            try addObjects(opened, candidate)
            #expect(try objects(opened[0]) == objects(opened[1]), "\(context), after a save")
            for container in opened { try container.close() }
            current = candidate
        }
    }

    @Test(
        "a class left out of the model is refused with its object count; nothing is written",
        arguments: TestStoreKind.persistent
    )
    func forgottenClass(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        try writeStore(store, for: [TagSlot.Tag.self, NoteSlot.Plain.self]) { context in
            for index in 0..<3 { TagSlot.Tag(context: context).label = "t\(index)" }
            NoteSlot.Plain(context: context).title = "kept"
        }
        let before = try store.contents()
        #expect {
            _ = try store.open(for: [NoteSlot.Plain.self])
        } throws: { error in
            let error = try #require(error as? ObjectLogError)
            return error.code == .modelMismatch && error.errors.isEmpty
                && error.message.contains("entity 'Tag' was removed: deletes its 3 object(s)")
                && error.message.contains("removing: [\"Tag\"]")
        }
        #expect(try store.contents() == before)
        // Declared, the removal is made.
        let preview = try store.migrationPreview(for: [NoteSlot.Plain.self], removing: ["Tag"])
        #expect(preview.outcome == .migrates)
        #expect(
            preview.changes == [
                SchemaChange(
                    kind: .entityRemoved,
                    entity: "Tag",
                    affectedObjects: 3,
                    isDeclared: true
                )
            ]
        )
        let container = try store.open(for: [NoteSlot.Plain.self], removing: ["Tag"])
        #expect(try container.newContext().fetch(NoteSlot.Plain.self).map(\.title) == ["kept"])
        // The removed entity's objects are gone (the note and the model versions remain).
        #expect(try container.coordinator.store.liveCount(entity: nil) == 1 + 2)
        try container.close()
        // A removed entity without objects needs no declaration.
        let empty = try TestStore(kind)
        try empty.open(for: [NoteSlot.Plain.self, TagSlot.Tag.self]).close()
        try empty.open(for: [NoteSlot.Plain.self]).close()
    }

    @Test(
        "a removed attribute is refused unless declared, or unless its entity has no objects",
        arguments: TestStoreKind.persistent
    )
    func removedAttribute(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        try writeStore(store, for: [NoteSlot.Added.self, BoxSlot.Related.self]) { context in
            for index in 0..<2 { NoteSlot.Added(context: context).title = "n\(index)" }
            _ = BoxSlot.Related(context: context)
        }
        let before = try store.contents()
        do {
            // Two removals: both are named, each once.
            _ = try store.open(for: [NoteSlot.Plain.self])
            Issue.record("a removed attribute was dropped without a declaration")
        } catch {
            let error = try #require(error as? ObjectLogError)
            #expect(error.code == .modelMismatch)
            #expect(error.message.hasSuffix("2 changes are refused"))
            let lines = error.errors.map(\.message)
            #expect(
                lines == [
                    "property 'Note.pinned' was removed: drops its values in 2 object(s); declare the "
                        + "removal (removing: [\"Note.pinned\"]) to drop them, or keep it in the "
                        + "model",
                    "entity 'Box' was removed: deletes its 1 object(s); declare the removal "
                        + "(removing: [\"Box\"]) to delete them, or keep it in the model",
                ]
            )
            // Each failure once in what is printed.
            let text = error.description
            #expect(text.components(separatedBy: "'Note.pinned'").count == 2, "\(text)")
            #expect(text.components(separatedBy: "'Box'").count == 2, "\(text)")
        }
        #expect(try store.contents() == before)
        // Declared, the attribute's values go; the entity's objects stay with the entity.
        let container = try store.open(
            for: [NoteSlot.Plain.self, BoxSlot.Related.self],
            removing: ["Note.pinned"]
        )
        let context = container.newContext()
        #expect(try context.fetch(NoteSlot.Plain.self).map(\.title).sorted() == ["n0", "n1"])
        #expect(try context.fetch(BoxSlot.Related.self).count == 1)
        try container.close()
        // An entity without objects loses an attribute with no declaration.
        let empty = try TestStore(kind)
        try empty.open(for: [NoteSlot.Plain.self, BoxSlot.Related.self]).close()
        try empty.open(for: [NoteSlot.Plain.self, BoxSlot.Plain.self]).close()
    }

    @Test(
        "migratesStoreAutomatically: false refuses any migration; a plan still migrates",
        arguments: TestStoreKind.persistent
    )
    func noAutomaticMigration(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        try writeStore(store, for: [NoteSlot.Plain.self]) { context in
            NoteSlot.Plain(context: context).title = "kept"
        }
        let before = try store.contents()
        #expect {
            _ = try store.open(for: [NoteSlot.Added.self], migratesStoreAutomatically: false)
        } throws: { error in
            (error as? ObjectLogError)?.message.contains("automatic migration is off") == true
        }
        #expect(try store.contents() == before)
        // The same model opens as it is.
        try store.open(for: [NoteSlot.Plain.self], migratesStoreAutomatically: false).close()
        let plan = MigrationPlan(
            versions: [
                ModelVersion("1", [NoteSlot.Plain.self]),
                ModelVersion("2", [NoteSlot.Added.self]),
            ],
            stages: [.lightweight(from: "1", to: "2")]
        )
        try store.open(plan: plan, migratesStoreAutomatically: false).close()
        let container = try store.open(
            for: [NoteSlot.Added.self],
            migratesStoreAutomatically: false
        )
        let notes = try container.newContext().fetch(NoteSlot.Added.self)
        #expect(notes.map(\.title) == ["kept"])
        #expect(notes.map(\.pinned) == [false])
        try container.close()
    }

    @Test(
        "a plan's stage declares its removals, and may return to an earlier model",
        arguments: TestStoreKind.persistent
    )
    func planDeclares(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        try writeStore(store, for: [NoteSlot.Added.self]) { context in
            let note = NoteSlot.Added(context: context)
            note.title = "a"
            note.pinned = true
        }
        let plan = MigrationPlan(
            versions: [
                ModelVersion("1", [NoteSlot.Added.self]),
                ModelVersion("2", [NoteSlot.Plain.self]),
            ],
            stages: [.lightweight(from: "1", to: "2")]
        )
        try store.open(plan: plan).close()
        let back = MigrationPlan(
            versions: [
                ModelVersion("2", [NoteSlot.Plain.self]),
                ModelVersion("3", [NoteSlot.Added.self]),
            ],
            stages: [.lightweight(from: "2", to: "3")]
        )
        let container = try store.open(plan: back)
        let notes = try container.newContext().fetch(NoteSlot.Added.self)
        // The dropped value does not come back: the attribute starts again at its default.
        #expect(notes.map(\.title) == ["a"])
        #expect(notes.map(\.pinned) == [false])
        try container.close()
        let schema = try store.migrationPreview(for: [NoteSlot.Added.self])
        #expect(schema.outcome == .opensUnchanged)
    }

    @Test("declared removals must be names the model does not have")
    func badDeclarations() {
        for removal in ["", "Note.", ".x", "a.b.c", "Note", "Note.title"] {
            #expect(throws: ObjectLogError.self, "\(removal)") {
                _ = try ManagedObjectModel([NoteSlot.Plain.self], removing: [removal])
            }
        }
    }

    @Test(
        "the preview lists renames as renames, with what each change does to the objects",
        arguments: TestStoreKind.persistent
    )
    func previewLines(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        try writeStore(store, for: [TagSlot.Tag.self, NoteSlot.Plain.self]) { context in
            TagSlot.Tag(context: context).label = "x"
            let note = NoteSlot.Plain(context: context)
            note.title = "y"
            note.stars = -7
        }
        let before = try store.contents()
        let preview = try store.migrationPreview(
            for: [TagSlot.Label.self, NoteSlot.RenamedWidened.self]
        )
        #expect(try store.contents() == before)
        #expect(preview.outcome == .migrates)
        #expect(
            preview.changes.map(\.description).sorted() == [
                "entity 'Label' was renamed from 'Tag': 1 object(s) keep their values",
                "property 'Note.heading' was renamed from 'title': 1 object(s) keep their values",
                "property 'Note.stars' changed: int32 -> int64: converts its values in 1 object(s)",
            ]
        )
        // The open makes the changes the preview listed.
        let container = try store.open(for: [TagSlot.Label.self, NoteSlot.RenamedWidened.self])
        let context = container.newContext()
        #expect(try context.fetch(TagSlot.Label.self).map(\.label) == ["x"])
        let notes = try context.fetch(NoteSlot.RenamedWidened.self)
        #expect(notes.map(\.heading) == ["y"])
        #expect(notes.map(\.stars) == [-7])
        try container.close()
    }
}
