import Foundation
import ObjectLog
import TestSupport
import Testing

// A third version that drops `priority` and the whole `Tag` entity of the second.

final class ToolTag: ManagedObject {
    @Attribute var label = ""
    override class var entityName: String { "Tag" }
}

final class ToolNoteV3: ManagedObject {
    @Attribute(originalName: "title") var heading = ""
    @Attribute var stars: Int64 = 0
    override class var entityName: String { "Note" }
}

@Suite("objectlog schema: renames as renames, and --check-model says what an open would do")
struct SchemaCheckTests {
    /// A store at version 1 (three notes, two tags), and a store written by version 2 alone.
    func stores(in directory: TemporaryDirectory) throws -> (old: String, model: String) {
        let old = directory.file("old.olog")
        let container = try PersistentContainer(path: old, for: [ToolNoteV1.self, ToolTag.self])
        let context = container.newContext()
        for index in 1...3 { ToolNoteV1(context: context).title = "note \(index)" }
        for index in 1...2 { ToolTag(context: context).label = "tag \(index)" }
        try context.save()
        try container.close()
        let model = directory.file("model.olog")
        try PersistentContainer(path: model, for: [ToolNoteV3.self]).close()
        return (old, model)
    }

    @Test("a migrated store's versions list a rename once, and no change that changes nothing")
    func renames() throws {
        let directory = TemporaryDirectory()
        let (old, _) = try stores(in: directory)
        try PersistentContainer(
            path: old,
            for: [ToolNoteV2.self, ToolTag.self]
        ).close()
        let text = try runTool("schema", old)
        #expect(text.status == 0, "\(text.standardError)")
        let changes = text.lines.filter { $0.hasPrefix("  ") && !$0.contains("(tag ") }
        #expect(
            changes == [
                "  first version",
                "  property 'Note.heading' was renamed from 'title'",
                "  property 'Note.stars' changed: int8 -> int64",
                "  property 'Note.priority' was added",
            ]
        )
    }

    @Test(
        "--check-model lists each change and what it does, refuses undeclared removals, writes nothing"
    )
    func checkModel() throws {
        let directory = TemporaryDirectory()
        let (old, model) = try stores(in: directory)
        let before = directory.fileContents()
        let refused = try runTool("schema", old, "--check-model", model)
        #expect(refused.status == 1, "\(refused.standardError)")
        #expect(
            refused.lines.contains(
                "  entity 'Tag' was removed: deletes its 2 object(s)"
            )
        )
        #expect(
            refused.lines.contains(
                "  property 'Note.heading' was renamed from 'title': 3 object(s) keep their values"
            )
        )
        #expect(
            refused.lines.contains {
                $0.hasPrefix(
                    "  refused: entity 'Tag' was removed: deletes its 2 object(s); declare"
                )
            }
        )
        let declared = try runTool("schema", old, "--check-model", model, "--removing", "Tag")
        #expect(declared.status == 0, "\(declared.standardError)")
        #expect(declared.lines.first?.hasPrefix("migrates the store from model ") == true)
        #expect(
            declared.lines.contains(
                "  entity 'Tag' was removed: deletes its 2 object(s) (declared)"
            )
        )
        let json = try runTool("schema", old, "--check-model", model, "--removing", "Tag", "--json")
            .jsonObject()
        #expect(json["outcome"] as? String == "migrates")
        let changes = try #require(json["changes"] as? [[String: Any]])
        let removal = try #require(changes.first { $0["kind"] as? String == "entityRemoved" })
        #expect(removal["affectedObjects"] as? Int == 2)
        #expect(removal["declared"] as? Bool == true)
        #expect(removal["dropsStoredData"] as? Bool == true)
        // The model as JSON, as a store records it.
        let description = directory.file("model.json")
        try ManagedObjectModel([ToolNoteV3.self]).schema.canonicalJSON().write(
            to: URL(fileURLWithPath: description)
        )
        let fromJSON = try runTool("schema", old, "--check-model", description, "--removing", "Tag")
        #expect(fromJSON.status == 0, "\(fromJSON.standardError)")
        #expect(fromJSON.standardOutput == declared.standardOutput)
        // The other way round: the store was written by a newer version than the model's.
        try PersistentContainer(path: old, for: [ToolNoteV3.self], removing: ["Tag"]).close()
        let v1 = directory.file("v1.olog")
        try PersistentContainer(path: v1, for: [ToolNoteV1.self, ToolTag.self]).close()
        let after = directory.fileContents()
        let newer = try runTool("schema", old, "--check-model", v1)
        #expect(newer.status == 1)
        #expect(newer.standardOutput.contains("written by a newer version of its model"))
        #expect(directory.fileContents() == after)
        #expect(before.count > 0)
    }

    @Test("--check-model's bad input: one line, a usage or input exit code")
    func badInput() throws {
        let directory = TemporaryDirectory()
        let (old, model) = try stores(in: directory)
        let cases: [([String], Int32, String)] = [
            (["--removing", "Tag"], 64, "--removing needs --check-model"),
            (["--check-model", directory.file("none.olog")], 66, "no such model file or store"),
            (["--check-model", model, "--removing", "Note"], 64, "declares entity 'Note' removed"),
        ]
        for (arguments, status, message) in cases {
            let result = try runTool(arguments: ["schema", old] + arguments)
            #expect(result.status == status, "\(arguments): \(result.standardError)")
            #expect(result.standardError.split(separator: "\n").count == 1, "\(arguments)")
            #expect(result.standardError.contains(message), "\(arguments): \(result.standardError)")
        }
        let notJSON = directory.file("bad.json")
        try Data("{ not a model".utf8).write(to: URL(fileURLWithPath: notJSON))
        let result = try runTool("schema", old, "--check-model", notJSON)
        #expect(result.status == 65)
        #expect(result.standardError.hasPrefix("error: \(notJSON): not a model description"))
    }
}
