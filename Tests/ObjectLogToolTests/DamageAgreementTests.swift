import Foundation
import ObjectLogStore
import TestSupport
import Testing

/// Every command classifies damage the same way and shows the same state of a damaged store,
/// run as the built binary.
@Suite("One truth about a damaged store")
struct DamageAgreementTests {
    /// What info, history, verify, dump and meta say about `path`.
    private struct Views {
        var info: ToolRun, history: ToolRun, verify: ToolRun, dump: ToolRun, meta: ToolRun

        init(_ path: String) throws {
            info = try runTool("info", path, "--json")
            history = try runTool("history", path, "--json")
            verify = try runTool("verify", path, "--json")
            dump = try runTool("dump", path)
            meta = try runTool("meta", path, "--json")
        }

        var statuses: [Int32] { [info, history, verify, dump, meta].map(\.status) }
    }

    @Test(
        "a damaged superseded record under a current index: every command reports corruption and shows the store without that transaction"
    )
    func supersededRecordUnderIndex() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"))
        let path = fixture.path
        #expect(try StoreInspection(path: path).indexStatus == .current)
        // The first record of transaction 1 is object 1's first version, which transaction 2
        // replaced: the index no longer names it.
        let first = try #require(try StoreInspection(path: path).transactions.first)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes[Int(first.offset) + 1] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: path))

        let views = try Views(path)
        #expect(views.statuses == [65, 65, 65, 65, 65], "\(views.statuses)")
        for run in [views.info, views.history, views.dump, views.meta] {
            #expect(run.standardError.contains("corruption at offset \(first.offset)"))
        }
        // Without transaction 1, only transaction 2's update of object 1 is left.
        let info = try views.info.jsonObject()
        #expect(info["liveObjects"] as? Int == 1)
        #expect(views.dump.lines.count == 1)
        #expect(views.dump.standardOutput.contains("\"id\":1"))
        let verify = try views.verify.jsonObject()
        #expect(verify["liveObjects"] as? Int == 1)
        #expect(verify["clean"] as? Bool == false)
        let problems = try #require(verify["problems"] as? [[String: Any]])
        #expect(problems.map { $0["kind"] as? String } == ["corruption"])
        #expect(problems.first?["offset"] as? Int == Int(first.offset))
        // Transaction 1 also set the metadata: every view shows the header's (empty) one.
        #expect((info["metadata"] as? [String: Any])?.isEmpty == true)
        #expect((try views.meta.jsonObject()).isEmpty)
        #expect(try LogStore.readMetadata(path: path).isEmpty)
        let history = try views.history.jsonObject()
        #expect((history["transactions"] as? [Any])?.count == 1)
    }

    @Test(
        "damage in the last transaction's padding after the index covered it: info, meta and the metadata read agree on the older value"
    )
    func paddingOfLastTransactionUnderIndex() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"))
        let path = fixture.path
        let store = try openWriter(path)
        let start = store.fileBytes
        var transaction = Transaction()
        var metadata = store.metadata
        metadata["gridSize"] = .integer(1280)
        transaction.metadata = metadata
        try store.commit(transaction)
        let end = store.fileBytes
        try store.close()
        #expect(try StoreInspection(path: path).indexStatus == .current)
        // The padding record's zeros lie just before the 70-byte commit record.
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let target = Int(end) - 70 - 8
        #expect(target > Int(start) + 40)
        #expect(bytes[target] == 0)
        bytes[target] = 0x5A
        try bytes.write(to: URL(fileURLWithPath: path))

        let views = try Views(path)
        #expect(views.statuses == [65, 65, 65, 65, 65], "\(views.statuses)")
        let info = try views.info.jsonObject()
        #expect((info["metadata"] as? [String: Any])?["gridSize"] as? Int == 640)
        #expect((try views.meta.jsonObject())["gridSize"] as? Int == 640)
        let get = try runTool("meta", path, "get", "gridSize")
        #expect(get.status == 65)
        #expect(get.standardOutput == "640\n")
        #expect(try LogStore.readMetadata(path: path)["gridSize"] == .integer(640))
        #expect(views.info.standardError.contains("the index checkpoint shows was committed"))
        // An open through the index agrees: it reads the last indexed transaction again.
        for readOnly in [false, true] {
            var options = StoreOptions()
            options.readOnly = readOnly
            options.createIfMissing = false
            #expect(throws: StoreError.self) { try LogStore.open(path: path, options: options) }
        }
        var salvage = StoreOptions()
        salvage.salvage = true
        let salvaged = try LogStore.open(path: path, options: salvage)
        #expect(salvaged.metadata["gridSize"] == .integer(640))
        try salvaged.close()
    }

    @Test("verify --json prints its report when the index names a live record whose checksum fails")
    func verifyJSONWithDamagedLiveRecord() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"))
        let path = fixture.path
        // Transaction 2's first record is object 1's current version.
        let second = try StoreInspection(path: path).transactions[1]
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes[Int(second.offset) + 1] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: path))
        let run = try runTool("verify", path, "--json")
        #expect(run.status == 65)
        let report = try run.jsonObject()
        #expect(report["clean"] as? Bool == false)
        let problems = try #require(report["problems"] as? [[String: Any]])
        #expect(problems.first?["kind"] as? String == "corruption")
        #expect(problems.first?["offset"] as? Int == Int(second.offset))
        #expect(run.standardError.split(separator: "\n").count == 1)
    }

    @Test("a save another process has in flight is not a torn tail; once nobody writes, it is")
    func inFlightIsNotTorn() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"))
        let path = fixture.path
        let writer = try openWriter(path)
        // Half a transaction at the end, as a reader sees a save being written.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([0x12, 0x34, 0x56, 0x78, 0x01, 0x01, 0x01, 0x09, 0x40]))
        try handle.close()
        for command in ["info", "history", "verify", "dump", "meta"] {
            let run = try runTool(command, path)
            #expect(run.status == 0, "\(command): \(run.standardError)")
            #expect(run.standardError.isEmpty, "\(command): \(run.standardError)")
        }
        #expect(try StoreInspection(path: path).damage?.kind == .inFlight)
        #expect(try StoreInspection(path: path).isClean)
        try writer.close()
        let run = try runTool("info", path)
        #expect(run.status == 0)
        #expect(run.standardError.contains("torn tail"))
        #expect(try StoreInspection(path: path).damage?.kind == .tornTail)
    }

    @Test(
        "after a salvage drops the last transaction, info counts it as recover and a salvaging open do"
    )
    func droppedLastTransactionIsCounted() throws {
        let directory = TemporaryDirectory()
        let path = try copyFormatFixture("v2.0.olog", to: directory)
        #expect(try runTool("meta", path, "set", "k", "v").status == 0)
        // Transaction 3 starts at 1536 with its metadata record; byte 1636 lies in the record
        // after it, its padding. The index the meta command wrote covers transaction 3, so
        // the damage is corruption and a salvage drops transaction 3 after its intact commit.
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes[1636] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: path))
        let before = try FileState(path)

        let info = try runTool("info", path, "--json")
        #expect(info.status == 65)
        let damage = try #require(try info.jsonObject()["damage"] as? [String: Any])
        #expect(damage["kind"] as? String == "corruption")
        #expect(try info.jsonObject()["transactions"] as? Int == 3)
        #expect(try info.jsonObject()["transactionsInFile"] as? Int == 2)
        #expect(try runTool("info", path).standardOutput.contains("3 committed (2 in this file"))
        let history = try runTool("history", path, "--json").jsonObject()
        #expect(
            (history["transactions"] as? [[String: Any]])?.map { $0["number"] as? Int } == [1, 2]
        )

        var options = StoreOptions()
        options.salvage = true
        let salvaged = try LogStore.open(path: path, options: options)
        #expect(salvaged.transactionCount == 3)
        try salvaged.close()

        let output = directory.file("recovered.olog")
        let recover = try runTool("recover", path, "--output", output)
        #expect(recover.status == 0, "\(recover.standardError)")
        #expect(recover.standardOutput.contains("lost: transaction 3 "))
        let recovered = try runTool("info", output, "--json").jsonObject()
        #expect(recovered["transactions"] as? Int == 3)
        #expect(try FileState(path) == before)
    }

    @Test("info and history say nothing of a save in flight, in text or JSON")
    func inFlightIsNotListedAsDamage() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"))
        let path = fixture.path
        let writer = try openWriter(path)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([0x12, 0x34, 0x56, 0x78, 0x01, 0x01, 0x01, 0x09, 0x40]))
        try handle.close()
        #expect(try StoreInspection(path: path).damage?.kind == .inFlight)
        let info = try runTool("info", path, "--json")
        #expect(info.status == 0)
        #expect(try info.jsonObject()["damage"] is NSNull)
        let history = try runTool("history", path, "--json")
        #expect(history.status == 0)
        #expect(try history.jsonObject()["damage"] is NSNull)
        let text = try runTool("info", path)
        #expect(!text.standardOutput.contains("damage"), "\(text.standardOutput)")
        #expect(!text.standardOutput.contains("in flight"), "\(text.standardOutput)")
        try writer.close()
        // Once nobody writes, the same bytes are a torn tail, and both say so.
        let torn = try runTool("info", path, "--json")
        let damage = try torn.jsonObject()["damage"] as? [String: Any]
        #expect(damage?["kind"] as? String == "torn tail")
        #expect(try runTool("info", path).standardOutput.contains("damage:"))
    }
}
