import Foundation
import Testing

@Suite("rdlab keeps its store compact: edits write only what changed, and old versions go")
struct LabCompactionTests {
    func fileSize(_ path: String) throws -> Int {
        try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
    }

    /// The store's `objectlog info --json` report.
    func info(_ lab: borrowing LabFixture) throws -> [String: Any] {
        let info = try RDLabProcess.runObjectLog(["info", lab.store, "--json"])
        #expect(info.exitCode == 0)
        return try JSONSerialization.jsonObject(with: Data(info.standardOutput.utf8))
            as? [String: Any] ?? [:]
    }

    /// The size of the configuration's thumbnail, as `rdlab show` gives it.
    func thumbnailBytes(_ lab: borrowing LabFixture, _ name: String) throws -> Int? {
        let output = try lab.succeed(["show", name]).standardOutput
        guard let line = output.split(separator: "\n").first(where: { $0.contains("thumbnail:") })
        else { return nil }
        return line.split(separator: " ").compactMap { Int($0) }.first
    }

    @Test("edits and renames write the configuration's small record, not its thumbnail")
    func editsWriteLittle() throws {
        let lab = try LabFixture()
        for name in ["a", "b", "c"] {
            try lab.succeed([
                "run", "--model", "gray-scott", "--size", "96", "--steps", "20", "--save", name,
            ])
        }
        let thumbnail = try #require(try thumbnailBytes(lab, "b"))
        #expect(thumbnail > 1_000)
        let before = try fileSize(lab.store)
        for round in 0..<30 {
            let name = ["a", "b", "c"][round % 3]
            try lab.succeed(["edit", name, "--notes", "round \(round)"])
        }
        try lab.succeed(["rename", "c", "d"])
        let grown = try fileSize(lab.store) - before
        // Each save appends one configuration record and its commit: far less than the
        // thumbnail each of them would rewrite if it were inline.
        #expect(grown < 31 * thumbnail / 2, "31 saves grew the store by \(grown) bytes")
        let shown = try lab.json(["show", "b"]) as? [String: Any] ?? [:]
        #expect(shown["notes"] as? String == "round 28")
        #expect(try thumbnailBytes(lab, "b") == thumbnail)
        #expect(try lab.verify())
    }

    @Test("forty edits of long notes leave at most about half the file reclaimable")
    func editsStayCompact() throws {
        let lab = try LabFixture()
        for name in ["a", "b", "c"] {
            try lab.succeed([
                "run", "--model", "gray-scott", "--size", "64", "--steps", "20", "--save", name,
            ])
        }
        // Notes of 16 KB (a long lab notebook entry) are kept in the record: each edit writes
        // them again, so the old versions add up past the 256 KiB from which rdlab compacts.
        let page = String(repeating: "observed spots splitting; ", count: 630)
        for round in 0..<40 {
            let name = ["a", "b", "c"][round % 3]
            try lab.succeed(["edit", name, "--notes", "round \(round): \(page)"])
        }
        let report = try info(lab)
        let share = report["reclaimableShare"] as? Double ?? 1
        let generation = report["generation"] as? Int ?? 0
        // Compaction runs once half the file is reclaimable (past 256 KiB); the save that
        // crosses the line compacts, so the share stays near or below a half.
        #expect(generation > 1, "the store was never compacted")
        #expect(share < 0.6, "reclaimable share \(share)")
        let notes = try lab.json(["show", "b"]) as? [String: Any] ?? [:]
        #expect((notes["notes"] as? String)?.hasPrefix("round 37: ") == true)
        #expect(try lab.verify())
    }
}
