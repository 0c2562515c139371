import Foundation
import ObjectLogStore
import TestSupport
import Testing

@Suite("info, verify and history")
struct InspectionCommandTests {
    @Test("info --json reports what the store holds")
    func infoJSON() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"), withBlob: true)
        let run = try runTool("info", fixture.path, "--json")
        #expect(run.status == 0, "\(run.standardError)")
        #expect(run.standardError.isEmpty)
        let info = try run.jsonObject()

        let store = try StoreAccessForTests.openReadOnly(fixture.path)
        #expect(info["formatVersion"] as? String == store.formatVersion)
        #expect(info["storeUUID"] as? String == store.storeUUID.uuidString)
        #expect(info["generation"] as? Int == Int(store.generation))
        #expect(info["transactions"] as? Int == fixture.transactions.count)
        #expect(info["fileBytes"] as? Int == Int(store.fileBytes))
        #expect(info["liveBytes"] as? Int == Int(store.liveBytes))
        #expect(info["reclaimableBytes"] as? Int == Int(store.fileBytes - store.liveBytes))
        #expect(info["blobCount"] as? Int == 1)
        #expect(info["blobBytes"] as? Int == fixture.blob!.bytes.count)
        #expect(info["indexStatus"] as? String == "current")
        #expect(info["liveObjects"] as? Int == fixture.objects.count)
        var expectedEntities: [String: Int] = [:]
        for object in fixture.objects.values {
            expectedEntities["entity \(object.entity)", default: 0] += 1
        }
        #expect(info["entities"] as? [String: Int] == expectedEntities)
        let metadata = try #require(info["metadata"] as? [String: Any])
        #expect(metadata["author"] as? String == "Ada")
        #expect(metadata["gridSize"] as? Int == 640)
        #expect(info["damage"] is NSNull)
        // Keys come in a fixed order, so the output can be compared textually.
        let keys = run.lines.filter { $0.hasPrefix("  \"") && !$0.hasPrefix("    ") }.map {
            $0.split(separator: "\"")[1]
        }
        #expect(
            keys.prefix(8) == [
                "path", "formatVersion", "storeUUID", "generation", "transactions",
                "transactionsInFile", "fileBytes", "liveBytes",
            ]
        )
    }

    @Test("info in text names the sizes, entities and metadata")
    func infoText() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"))
        let run = try runTool("info", fixture.path)
        #expect(run.status == 0)
        let text = run.standardOutput
        let store = try StoreAccessForTests.openReadOnly(fixture.path)
        #expect(text.contains("store UUID:      \(store.storeUUID.uuidString)\n"))
        #expect(text.contains("transactions:    \(fixture.transactions.count) committed"))
        #expect(text.contains("file bytes:      \(store.fileBytes) bytes"))
        #expect(text.contains("index:           current\n"))
        #expect(text.contains("  author (string): Ada\n"))
        #expect(text.contains("  gridSize (int): 640\n"))
        let ones = fixture.objects.values.filter { $0.entity == 1 }.count
        #expect(text.contains("  entity 1  \(ones)\n"))
    }

    @Test("verify passes a clean store with exit 0")
    func verifyClean() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"), withBlob: true)
        let run = try runTool("verify", fixture.path)
        #expect(run.status == 0)
        #expect(run.standardError.isEmpty)
        #expect(
            run.lines == [
                "ok: \(fixture.path): \(fixture.transactions.count) transaction(s), "
                    + "\(fixture.objects.count) live object(s), 1 referenced blob(s), index current"
            ]
        )
        let json = try runTool("verify", fixture.path, "--json").jsonObject()
        #expect(json["clean"] as? Bool == true)
        #expect((json["problems"] as? [Any])?.isEmpty == true)
    }

    @Test("verify reports a torn tail as such, with its offset, and exits 65")
    func verifyTornTail() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"))
        let offset = try appendTornTail(to: fixture.path)
        let run = try runTool("verify", fixture.path)
        #expect(run.status == 65)
        #expect(run.lines.count == 2)
        #expect(run.lines[0].hasPrefix("torn tail at offset \(offset): "))
        #expect(run.lines[1].hasPrefix("damaged: \(fixture.path): "))
        #expect(run.standardError == "error: \(fixture.path): 1 problem(s) found (torn tail)\n")

        let json = try runTool("verify", fixture.path, "--json")
        #expect(json.status == 65)
        let problems = try #require(try json.jsonObject()["problems"] as? [[String: Any]])
        #expect(problems.count == 1)
        #expect(problems[0]["kind"] as? String == "torn tail")
        #expect(problems[0]["offset"] as? Int == Int(offset))
    }

    @Test("verify reports corruption (not a torn tail) at the damaged record's offset")
    func verifyCorruption() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"))
        let offset = try corruptFirstRecord(of: fixture.path)
        let run = try runTool("verify", fixture.path)
        #expect(run.status == 65)
        #expect(run.lines[0].hasPrefix("corruption at offset \(offset): "))
        #expect(
            run.lines[0].contains(
                "transaction 1 cannot be read (the log goes on intact at offset 1024; "
                    + "'objectlog repair' keeps everything else)"
            )
        )
        #expect(!run.standardOutput.contains("torn tail"))
        #expect(run.standardError.contains("(corruption)"))
    }

    @Test("verify reports a missing and a damaged external blob and a damaged index")
    func verifyBlobsAndIndex() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"), withBlob: true)
        let blobPath = fixture.path + "-blobs/" + fixture.blob!.id.hex
        try Data("changed".utf8).write(to: URL(fileURLWithPath: blobPath))
        try Data("not an index".utf8).write(to: URL(fileURLWithPath: fixture.path + "-index"))
        let damaged = try runTool("verify", fixture.path)
        #expect(damaged.status == 65)
        #expect(damaged.lines.contains { $0.hasPrefix("index \(fixture.path)-index: ") })
        #expect(
            damaged.lines.contains {
                $0 == "blob \(blobPath): external blob does not match its SHA-256 name"
            }
        )
        #expect(damaged.standardError.contains("2 problem(s) found (blob, index)"))

        try FileManager.default.removeItem(atPath: blobPath)
        let missing = try runTool("verify", fixture.path)
        #expect(missing.status == 65)
        #expect(
            missing.lines.contains {
                $0 == "blob \(blobPath): external blob referenced by a live object is missing"
            }
        )
    }

    @Test("history lists each transaction's number, offset, time and counts")
    func history() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"), withBlob: true)
        let inspection = try StoreInspection(path: fixture.path)
        let run = try runTool("history", fixture.path)
        #expect(run.status == 0)
        #expect(run.lines.count == 1 + fixture.transactions.count)
        #expect(run.lines[0].contains("OFFSET"))
        for (index, expected) in fixture.transactions.enumerated() {
            let columns = run.lines[index + 1].split(
                separator: " ",
                omittingEmptySubsequences: true
            )
            #expect(columns[0] == "\(index + 1)")
            #expect(columns[1] == "\(inspection.transactions[index].offset)")
            #expect(columns[3] == "\(expected.inserted)")
            #expect(columns[4] == "\(expected.updated)")
            #expect(columns[5] == "\(expected.deleted)")
        }
        #expect(run.lines[1].hasSuffix("metadata changed"))

        let json = try runTool("history", fixture.path, "--json").jsonObject()
        let transactions = try #require(json["transactions"] as? [[String: Any]])
        #expect(transactions.count == fixture.transactions.count)
        for (index, expected) in fixture.transactions.enumerated() {
            #expect(transactions[index]["number"] as? Int == index + 1)
            #expect(
                transactions[index]["offset"] as? Int == Int(inspection.transactions[index].offset)
            )
            #expect(transactions[index]["inserted"] as? Int == expected.inserted)
            #expect(transactions[index]["updated"] as? Int == expected.updated)
            #expect(transactions[index]["deleted"] as? Int == expected.deleted)
            let date = try #require(transactions[index]["date"] as? String)
            let parsed = try Date(
                date,
                strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)
            )
            // The printed form keeps milliseconds, cut off: within one, give or take the
            // rounding of a `Date`'s seconds as a `Double`.
            #expect(abs(parsed.timeIntervalSince(inspection.transactions[index].date)) < 0.0011)
        }
    }

    @Test("history after compaction shows the compaction and the transactions after it")
    func historyAfterCompaction() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"))
        #expect(try runTool("compact", fixture.path).status == 0)
        #expect(try runTool("meta", fixture.path, "set", "k", "v").status == 0)
        let run = try runTool("history", fixture.path)
        #expect(run.lines.count == 3)
        #expect(
            run.lines[1].hasSuffix(
                "compaction: transactions up to #\(fixture.transactions.count) folded into their "
                    + "live state"
            )
        )
        #expect(run.lines[2].hasPrefix(numberColumn("\(fixture.transactions.count + 1)")))
    }

    @Test("info and history warn about a torn tail but succeed; corruption fails with 65")
    func damageInReadCommands() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"))
        let offset = try appendTornTail(to: fixture.path)
        for command in ["info", "history"] {
            let run = try runTool(command, fixture.path)
            #expect(run.status == 0)
            #expect(
                run.standardError.hasPrefix(
                    "warning: \(fixture.path): torn tail at offset \(offset)"
                )
            )
        }
        let info = try runTool("info", fixture.path, "--json").jsonObject()
        let damage = try #require(info["damage"] as? [String: Any])
        #expect(damage["kind"] as? String == "torn tail")
        #expect(damage["offset"] as? Int == Int(offset))
    }
}

/// `text` right-aligned in the history table's six-character number column.
private func numberColumn(_ text: String) -> String {
    String(repeating: " ", count: max(0, 6 - text.count)) + text
}

/// Read-only opens for checking what the tool printed.
enum StoreAccessForTests {
    static func openReadOnly(_ path: String) throws -> LogStore {
        var options = StoreOptions()
        options.readOnly = true
        options.createIfMissing = false
        return try LogStore.open(path: path, options: options)
    }
}
