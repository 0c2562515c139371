import Foundation
import ObjectLog
import TestSupport
import Testing

@Suite("objectlog history --changes")
struct HistoryChangesTests {
    @Test("each transaction's changes, old → new, filtered by --since and --entity")
    func changes() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeEngineStore(at: directory.file("engine.objectlog"))
        let deletedKey = fixture.sampleKeys[0] - 1
        let updatedKey = fixture.sampleKeys[0]

        let all = try runTool("history", fixture.path, "--changes")
        #expect(all.status == 0, "\(all.standardError)")
        #expect(all.lines.filter { $0.hasPrefix("#") }.count == 3)
        #expect(
            all.lines.contains { $0.hasPrefix("#1 ") && $0.hasSuffix("model version recorded") }
        )
        #expect(all.lines.contains { $0.hasPrefix("  insert SampleGroup \(fixture.groupKey): ") })
        #expect(all.lines.contains("  update Sample \(updatedKey): ratio 0.25 → 9.5"))
        let deleted = try #require(
            all.lines.first { $0.hasPrefix("  delete Sample \(deletedKey)") }
        )
        #expect(deleted.contains("name \"sample 0\""))

        let later = try runTool("history", fixture.path, "--changes", "--since", "2")
        #expect(later.status == 0)
        #expect(later.lines.filter { $0.hasPrefix("#") }.map { $0.prefix(3) } == ["#3 "])
        #expect(!later.lines.contains { $0.contains("insert") })

        let groups = try runTool(
            "history",
            fixture.path,
            "--changes",
            "--entity",
            "SampleGroup",
            "--json"
        )
        #expect(groups.status == 0)
        let json = try groups.jsonObject()
        let transactions = try #require(json["transactions"] as? [[String: Any]])
        let changes = transactions.flatMap { ($0["changes"] as? [[String: Any]]) ?? [] }
        #expect(!changes.isEmpty)
        #expect(changes.allSatisfy { $0["entity"] as? String == "SampleGroup" })
        #expect(changes.first?["kind"] as? String == "insert")
        #expect((changes.first?["new"] as? [String: String])?["title"] == "\"Spots\"")
    }

    @Test("dump --as-of N prints the objects as they were then; the latest N is today's dump")
    func dumpAsOf() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeEngineStore(at: directory.file("engine.objectlog"))
        let deletedKey = fixture.sampleKeys[0] - 1
        let updatedKey = fixture.sampleKeys[0]
        let now = try runTool("dump", fixture.path)
        let latest = try runTool("dump", fixture.path, "--as-of", "3")
        #expect(latest.status == 0, "\(latest.standardError)")
        #expect(latest.lines == now.lines)

        let before = try runTool("dump", fixture.path, "--as-of", "2")
        #expect(before.status == 0, "\(before.standardError)")
        let objects = try EngineStoreTests.dumpedObjects(before)
        #expect(objects.count == 5)
        #expect(objects[deletedKey] != nil)
        let updated = try #require(objects[updatedKey]?["attributes"] as? [String: Any])
        #expect(updated["ratio"] as? Double == 0.25)
        let current = try EngineStoreTests.dumpedObjects(now)
        #expect(current[deletedKey] == nil)
        #expect((current[updatedKey]?["attributes"] as? [String: Any])?["ratio"] as? Double == 9.5)

        let empty = try runTool("dump", fixture.path, "--as-of", "1")
        #expect(empty.status == 0)
        #expect(empty.lines.isEmpty)
        let future = try runTool("dump", fixture.path, "--as-of", "9")
        #expect(future.status == 64)
        #expect(try runTool("compact", fixture.path).status == 0)
        let gone = try runTool("dump", fixture.path, "--as-of", "2")
        #expect(gone.status == 65)
        #expect(gone.standardError.contains("is gone"))
    }

    @Test("info says how much history the store keeps and from which transaction")
    func info() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeEngineStore(at: directory.file("engine.objectlog"))
        let plain = try runTool("info", fixture.path)
        #expect(
            plain.lines.contains("history:         kept until each compaction; from transaction #1")
        )
        #expect(try runTool("compact", fixture.path).status == 0)
        let folded = try runTool("info", fixture.path)
        #expect(
            folded.lines.contains(
                "history:         kept until each compaction; from transaction #4"
            )
        )

        let kept = directory.file("kept.objectlog")
        _ = try makeEngineStore(at: kept)
        let container = try PersistentContainer(path: kept, for: sampleEntities)
        try container.setHistoryRetention(.all)
        _ = try container.compact()
        try container.close()
        let all = try runTool("info", kept)
        #expect(
            all.lines.contains(
                "history:         every transaction kept; from transaction #1 (4 in the history file)"
            )
        )
        let json = try runTool("info", kept, "--json").jsonObject()
        let history = try #require(json["history"] as? [String: Any])
        #expect(history["retention"] as? String == "all")
        #expect(history["firstTransaction"] as? Int == 1)
        #expect(history["transactionsInHistoryFile"] as? Int == 4)
    }

    @Test("bad flags are usage errors; history a compaction folded away is a data error")
    func badInput() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeEngineStore(at: directory.file("engine.objectlog"))
        for arguments in [
            ["history", fixture.path, "--entity", "Sample"],
            ["history", fixture.path, "--changes", "--since", "two"],
            ["history", fixture.path, "--changes", "--entity", "Nothing"],
        ] {
            let run = try runTool(arguments: arguments)
            #expect(run.status == 64, "\(arguments)")
            #expect(run.standardError.split(separator: "\n").count == 1, "\(run.standardError)")
        }
        #expect(try runTool("compact", fixture.path).status == 0)
        let folded = try runTool("history", fixture.path, "--changes", "--since", "1")
        #expect(folded.status == 65)
        #expect(folded.standardError.contains("compaction"))
        let kept = try runTool("history", fixture.path, "--changes", "--since", "3")
        #expect(kept.status == 0)
        #expect(kept.lines == ["(no transactions)"])
    }
}
