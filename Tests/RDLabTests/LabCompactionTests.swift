import Foundation
import Testing

@Suite("rdlab keeps its store compact: edits do not pile up old versions")
struct LabCompactionTests {
    @Test("forty edits of three configurations leave at most about half the file reclaimable")
    func editsStayCompact() throws {
        let lab = try LabFixture()
        for name in ["a", "b", "c"] {
            try lab.succeed([
                "run", "--model", "gray-scott", "--size", "96", "--steps", "20", "--save", name,
            ])
        }
        for round in 0..<40 {
            let name = ["a", "b", "c"][round % 3]
            try lab.succeed(["edit", name, "--notes", "round \(round)"])
        }
        let info = try RDLabProcess.runObjectLog(["info", lab.store, "--json"])
        #expect(info.exitCode == 0)
        let report =
            try JSONSerialization.jsonObject(with: Data(info.standardOutput.utf8))
            as? [String: Any] ?? [:]
        let share = report["reclaimableShare"] as? Double ?? 1
        let generation = report["generation"] as? Int ?? 0
        // Compaction runs once half the file is reclaimable (past 256 KiB); the save that
        // crosses the line compacts, so the share stays near or below a half.
        #expect(generation > 1, "the store was never compacted")
        #expect(share < 0.6, "reclaimable share \(share)")
        let notes = try lab.json(["show", "b"]) as? [String: Any] ?? [:]
        #expect(notes["notes"] as? String == "round 37")
        #expect(try lab.verify())
    }
}
