import Foundation
import Testing

/// A store with one damaged transaction in the middle, with the built `rdlab` and `objectlog`.
@Suite("rdlab reads a damaged store")
struct DamagedStoreTests {
    @Test(
        "list and show fall back to a read-only salvage with one warning naming objectlog repair; writes are refused until it is repaired"
    )
    func readsAfterDamage() throws {
        let lab = try LabFixture()
        for name in ["a", "b", "c"] {
            try lab.succeed([
                "run", "--model", "gray-scott", "--size", "8", "--steps", "2", "--save", name,
            ])
        }
        #expect(try lab.names() == ["autosave", "a", "b", "c"])
        // Transaction 1 records the model; 2, 3 and 4 save a, b and c.
        let history = try RDLabProcess.runObjectLog(["history", lab.store, "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(history.standardOutput.utf8))
        let transactions = (object as? [String: Any])?["transactions"] as? [[String: Any]] ?? []
        #expect(transactions.count == 4)
        let offset = try #require(transactions[2]["offset"] as? Int)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: lab.store))
        bytes[offset + 1] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: lab.store))

        let warning =
            "warning: the store '\(lab.store)' is damaged; showing what its intact transactions "
            + "hold, read-only: repair it with 'objectlog repair \(lab.store)' to write again"
        let list = try lab.rdlab(["list", "--json"])
        #expect(list.exitCode == 0, "\(list.standardError)")
        #expect(list.errorLines == [warning])
        let listed = try JSONSerialization.jsonObject(with: Data(list.standardOutput.utf8))
        // Without b's save, c's save is intact and a's automatic save is back beside c's (b's
        // run deleted it; that delete is lost with the rest of b's transaction).
        #expect(
            (listed as? [[String: Any]])?.compactMap { $0["name"] as? String } == [
                "autosave", "autosave", "a", "c",
            ]
        )
        let show = try lab.rdlab(["show", "c"])
        #expect(show.exitCode == 0, "\(show.standardError)")
        #expect(show.errorLines == [warning])
        #expect(show.lines.first == "name:        c")
        let missing = try lab.rdlab(["show", "b"])
        #expect(missing.exitCode == 66)

        let before = try Data(contentsOf: URL(fileURLWithPath: lab.store))
        let delete = try lab.rdlab(["delete", "a"])
        #expect(delete.exitCode == 65)
        #expect(
            delete.errorLines.last
                == "error: the store '\(lab.store)' is damaged, so it is read-only; repair it with "
                + "'objectlog repair \(lab.store)', then try again"
        )
        #expect(try Data(contentsOf: URL(fileURLWithPath: lab.store)) == before)

        let repair = try RDLabProcess.runObjectLog(["repair", lab.store])
        #expect(repair.exitCode == 0, "\(repair.standardError)")
        #expect(repair.lines.contains { $0.hasPrefix("lost: transaction 3 ") })
        #expect(repair.lines.contains { $0.contains("delete lost: the object is back") })
        #expect(try lab.names() == ["autosave", "autosave", "a", "c"])
        #expect(try lab.rdlab(["list"]).errorLines.isEmpty)
        try lab.succeed(["delete", "a"])
        try lab.succeed([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "2", "--save", "d",
        ])
        #expect(try lab.names() == ["autosave", "c", "d"])
        #expect(try lab.verify())
    }
}
