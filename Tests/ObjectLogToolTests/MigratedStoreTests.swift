import Foundation
import ObjectLog
import ObjectLogStore
import TestSupport
import Testing

// Two versions of a small model: version 2 renames `title`, widens `stars` and adds `priority`.

final class ToolNoteV1: ManagedObject {
    @Attribute var title = ""
    @Attribute var stars: Int8 = 0
    override class var entityName: String { "Note" }
}

final class ToolNoteV2: ManagedObject {
    @Attribute(originalName: "title") var heading = ""
    @Attribute var stars: Int64 = 0
    @Attribute var priority = 3
    override class var entityName: String { "Note" }
}

@Suite("objectlog on a migrated store: the current version's values, and every version")
struct MigratedStoreTests {
    func migratedStore(in directory: TemporaryDirectory) throws -> String {
        let path = directory.file("notes.olog")
        let container = try PersistentContainer(path: path, for: [ToolNoteV1.self])
        let context = container.newContext()
        for index in 1...3 {
            let note = ToolNoteV1(context: context)
            note.title = "note \(index)"
            note.stars = Int8(-index)
        }
        try context.save()
        try container.close()
        try PersistentContainer(path: path, for: [ToolNoteV2.self]).close()
        return path
    }

    @Test("dump shows the migrated values; schema lists both versions and what changed")
    func dumpAndSchema() throws {
        let directory = TemporaryDirectory()
        let path = try migratedStore(in: directory)
        let dump = try runTool("dump", path)
        #expect(dump.status == 0)
        let objects = try dump.standardOutput.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:]
        }
        #expect(objects.count == 3)
        let attributes = objects.compactMap { $0["attributes"] as? [String: Any] }
        #expect(
            Set(attributes.compactMap { $0["heading"] as? String }) == [
                "note 1", "note 2", "note 3",
            ]
        )
        #expect(Set(attributes.compactMap { $0["stars"] as? Int }) == [-1, -2, -3])
        #expect(attributes.allSatisfy { $0["priority"] as? Int == 3 })
        #expect(attributes.allSatisfy { $0["title"] == nil })

        let schema = try runTool("schema", path)
        #expect(schema.status == 0)
        #expect(schema.standardOutput.contains("version 1: "))
        #expect(schema.standardOutput.contains("version 2: "))
        #expect(schema.standardOutput.contains("current"))
        #expect(schema.standardOutput.contains("property 'Note.priority' was added"))
        let info = try runTool("info", path)
        #expect(info.standardOutput.contains("model version:   2, since transaction 3"))
        #expect(try runTool("verify", path).status == 0)
        // After compaction the records are in version 2's layout and read the same.
        #expect(try runTool("compact", path).status == 0)
        #expect(try runTool("dump", path).standardOutput == dump.standardOutput)
    }

    @Test("a store rewritten by a migration stage passes verify; dump shows the new values")
    func rewritten() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("notes.olog")
        let container = try PersistentContainer(path: path, for: [ToolNoteV1.self])
        let context = container.newContext()
        for index in 1...3 {
            let note = ToolNoteV1(context: context)
            note.title = "note \(index)"
            note.stars = Int8(index)
        }
        try context.save()
        try container.close()
        // The priority is computed from the stars, object by object.
        let plan = MigrationPlan(
            versions: [ModelVersion("1", [ToolNoteV1.self]), ModelVersion("2", [ToolNoteV2.self])],
            stages: [
                .rewrite(
                    from: "1",
                    to: "2",
                    entities: [
                        "Note": { old, new in
                            guard case .int(let stars)? = old["stars"] else { return }
                            new["priority"] = .int(10 * stars)
                        }
                    ]
                )
            ]
        )
        try PersistentContainer(path: path, plan: plan).close()
        #expect(try runTool("verify", path).status == 0)
        let dump = try runTool("dump", path)
        let attributes = try dump.standardOutput.split(separator: "\n").compactMap {
            (try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?[
                "attributes"
            ] as? [String: Any]
        }
        #expect(Set(attributes.compactMap { $0["priority"] as? Int }) == [10, 20, 30])
        #expect(Set(attributes.compactMap { $0["heading"] as? String }).count == 3)
        let schema = try runTool("schema", path)
        #expect(schema.standardOutput.contains("version 2: "))
    }

    @Test("schema of a store without a model exits 1 with one line")
    func noModel() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("raw.olog")
        try LogStore.open(path: path).close()
        let result = try runTool("schema", path)
        #expect(result.status == 1)
        #expect(result.standardError == "error: \(path): the store records no ObjectLog model\n")
    }
}
