import Foundation
import Testing

@Suite("rdlab history lists a configuration's edits; rdlab revert restores earlier values")
struct HistoryCommandTests {
    /// A lab with `spots` saved at f 0.03, k 0.06.
    static func makeLab() throws -> LabFixture {
        let lab = try LabFixture()
        try lab.succeed([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "2", "--set", "f=0.03",
            "--set", "k=0.06", "--save", "spots",
        ])
        return lab
    }

    /// `rdlab history NAME --json`'s edits.
    static func edits(_ lab: borrowing LabFixture, _ name: String) throws -> [[String: Any]] {
        let history = try lab.json(["history", name]) as? [String: Any] ?? [:]
        return history["edits"] as? [[String: Any]] ?? []
    }

    /// The text after `#N  DATE  ` of each line of `rdlab history NAME`, with N.
    static func lines(_ lab: borrowing LabFixture, _ name: String) throws -> [(UInt64, String)] {
        try lab.succeed(["history", name]).lines.map { line in
            let parts = line.split(separator: "  ", maxSplits: 2, omittingEmptySubsequences: true)
            let number = UInt64(parts[0].trimmingCharacters(in: .whitespaces).dropFirst()) ?? 0
            return (number, parts.count > 2 ? String(parts[2]) : "")
        }
    }

    @Test("history shows the save, then each edit's old → new values, snapshots and renames")
    func history() throws {
        let lab = try Self.makeLab()
        try lab.succeed([
            "edit", "spots", "--set", "f=0.035", "--notes", "round\nspots", "--tag", "paper",
        ])
        try lab.succeed(["edit", "spots", "--untag", "paper", "--set", "k=0.061"])
        try lab.succeed(["resume", "spots", "--steps", "1"])
        try lab.succeed(["rename", "spots", "dots"])
        // A save that changes nothing of it (another configuration's) is not its edit.
        try lab.succeed(["run", "--model", "gray-scott", "--size", "8", "--steps", "1"])

        let lines = try Self.lines(lab, "dots")
        #expect(
            lines.map(\.1) == [
                "saved as 'spots': gray-scott; f 0.03; k 0.06; du 0.155762; dv 0.0644; tags []; "
                    + "notes \"\"; +1 snapshot",
                "f 0.03 → 0.035; notes \"\" → \"round\\nspots\"; tags [] → [paper]",
                "k 0.06 → 0.061; tags [paper] → []",
                "+1 snapshot; new thumbnail",
                "renamed 'spots' → 'dots'",
            ]
        )
        // Transaction numbers grow, and are those objectlog history shows.
        let numbers = lines.map(\.0)
        #expect(numbers == numbers.sorted() && Set(numbers).count == 5)
        let objectlog = try RDLabProcess.runObjectLog(["history", lab.store, "--changes"])
        #expect(objectlog.lines.contains { $0.hasPrefix("#\(numbers[1])  ") })
        #expect(
            objectlog.standardOutput.contains(
                "update Configuration \(try Self.key(lab, "dots")): f 0.03 → 0.035"
            )
        )

        let edits = try Self.edits(lab, "dots")
        #expect(
            edits.map { $0["kind"] as? String } == ["created"]
                + Array(repeating: "edited", count: 4)
        )
        #expect(edits.map { $0["transaction"] as? Int } == numbers.map { Int($0) })
        let first = edits[1]["changes"] as? [[String: Any]] ?? []
        #expect(first.map { $0["property"] as? String } == ["f", "notes", "tags"])
        #expect(first[0]["old"] as? Double == 0.03)
        #expect(first[0]["new"] as? Double == 0.035)
        #expect(first[1]["new"] as? String == "round\nspots")
        #expect(first[2]["old"] as? [String] == [])
        #expect(first[2]["new"] as? [String] == ["paper"])
        #expect(edits[3]["snapshotsAdded"] as? Int == 1)
        #expect(edits[3]["thumbnailChanged"] as? Bool == true)
        let history = try lab.json(["history", "dots"]) as? [String: Any] ?? [:]
        #expect(history["complete"] as? Bool == true)
        #expect(history["name"] as? String == "dots")
    }

    /// The key of the configuration called `name`, from `objectlog dump`.
    static func key(_ lab: borrowing LabFixture, _ name: String) throws -> Int {
        let objects = try lab.objects("Configuration")
        let object = objects.first {
            ($0["attributes"] as? [String: Any])?["name"] as? String == name
        }
        return try #require(object?["id"] as? Int)
    }

    @Test("revert --to N restores parameters, tags and notes as a new save that history shows")
    func revert() throws {
        let lab = try Self.makeLab()
        try lab.succeed(["edit", "spots", "--tag", "paper", "--notes", "first"])
        let kept = try #require(try Self.edits(lab, "spots").last?["transaction"] as? Int)
        try lab.succeed([
            "edit", "spots", "--set", "f=0.04", "--set", "du=0.2", "--untag", "paper", "--tag",
            "draft", "--notes", "second",
        ])
        try lab.succeed(["resume", "spots", "--steps", "1"])
        let before = try lab.json(["show", "spots"]) as? [String: Any] ?? [:]
        #expect(before["tags"] as? [String] == ["draft"])

        let reverted = try lab.succeed(["revert", "spots", "--to", "#\(kept)"])
        let latest = try #require(try Self.edits(lab, "spots").last)
        let revertNumber = try #require(latest["transaction"] as? Int)
        #expect(revertNumber > kept)
        #expect(
            reverted.lines == [
                "reverted 'spots' to transaction #\(kept) in transaction #\(revertNumber): "
                    + "f 0.04 → 0.03; du 0.2 → 0.155762; tags [draft] → [paper]; "
                    + "notes \"second\" → \"first\""
            ]
        )
        let after = try lab.json(["show", "spots"]) as? [String: Any] ?? [:]
        let parameters = after["parameters"] as? [String: Double] ?? [:]
        #expect(parameters["f"] == 0.03)
        #expect(parameters["k"] == 0.06)
        #expect(parameters["du"] == 0.155762)
        #expect(after["tags"] as? [String] == ["paper"])
        #expect(after["notes"] as? String == "first")
        // Only parameters, tags and notes go back: the snapshots and name stay.
        #expect(after["snapshotCount"] as? Int == 2)
        #expect(after["steps"] as? Int == 3)

        // The history is kept, with the revert as its latest edit.
        let lines = try Self.lines(lab, "spots")
        #expect(lines.count == 5)
        #expect(
            lines.last?.1
                == "f 0.04 → 0.03; du 0.2 → 0.155762; notes \"second\" → \"first\"; "
                + "tags [draft] → [paper]"
        )
        #expect(lines.last?.0 == UInt64(revertNumber))

        // Reverting to the revert's own values saves nothing.
        let store = lab.contents()
        let again = try lab.succeed(["revert", "spots", "--to", "\(revertNumber)"])
        #expect(
            again.lines == [
                "'spots' already has the parameters, tags and notes it had after transaction "
                    + "#\(revertNumber); nothing to save"
            ]
        )
        #expect(lab.contents() == store)
        // And the revert can itself be reverted.
        try lab.succeed(["revert", "spots", "--to", "\(revertNumber - 1)"])
        let undone = try lab.json(["show", "spots"]) as? [String: Any] ?? [:]
        #expect(undone["tags"] as? [String] == ["draft"])
        #expect(undone["notes"] as? String == "second")
        #expect(try lab.verify())
    }

    @Test(
        "history and revert refuse bad input with one line, their status, and no change",
        arguments: [
            (["history"], 64, "error: missing the configuration's name"),
            (["history", "nope"], 66, "error: no configuration named 'nope'"),
            (["history", "spots", "--bogus"], 64, "error: unknown option '--bogus'"),
            (["revert", "spots"], 64, "error: missing '--to <transaction>'"),
            (
                ["revert", "spots", "--to", "soon"], 64,
                "error: '--to' needs a transaction number as 'rdlab history' shows it"
            ),
            (["revert", "spots", "--to", "-1"], 64, "error: '--to' needs a transaction number"),
            (["revert", "nope", "--to", "1"], 66, "error: no configuration named 'nope'"),
            (
                ["revert", "spots", "--to", "999"], 64,
                "error: transaction #999 is in the future: the store's latest is #"
            ),
            (
                ["revert", "spots", "--to", "1"], 64,
                "error: 'spots' did not exist yet in transaction #1: it was saved in #2; revert "
                    + "to #2 or later"
            ),
        ] as [([String], Int32, String)]
    )
    func refused(arguments: [String], status: Int32, message: String) throws {
        let lab = try Self.makeLab()
        let before = lab.contents()
        let result = try lab.rdlab(arguments)
        #expect(result.exitCode == status, "\(result.standardError)")
        #expect(result.standardOutput == "")
        #expect(result.errorLines.count == 1, "\(result.standardError)")
        #expect(result.errorLines.first?.hasPrefix(message) == true, "\(result.standardError)")
        #expect(lab.contents() == before)
    }

    @Test("once history is purged, history says earlier edits are gone; revert names what it can")
    func expired() throws {
        let lab = try Self.makeLab()
        try lab.succeed(["edit", "spots", "--set", "f=0.035"])
        // The history up to the edit (#3) is gone, as after 30 days; the purge's own save is #4.
        try purgeHistory(of: lab.store, through: 3)
        let compact = try RDLabProcess.runObjectLog(["compact", lab.store])
        #expect(compact.exitCode == 0, "\(compact.standardError)")
        try lab.succeed(["edit", "spots", "--set", "f=0.04"])

        let lines = try lab.succeed(["history", "spots"]).lines
        #expect(lines.count == 2)
        #expect(
            lines.first
                == "(earlier edits are no longer kept: the store keeps its history for 30 days, "
                + "from transaction #4)"
        )
        #expect(lines.last?.hasPrefix("#5  ") == true)
        #expect(lines.last?.hasSuffix("  f 0.035 → 0.04") == true)
        let history = try lab.json(["history", "spots"]) as? [String: Any] ?? [:]
        #expect(history["complete"] as? Bool == false)
        #expect(history["keptFromTransaction"] as? Int == 4)

        let before = lab.contents()
        let refused = try lab.rdlab(["revert", "spots", "--to", "2"])
        #expect(refused.exitCode == 65)
        #expect(
            refused.errorLines == [
                "error: the store's history goes back to transaction #3 (it keeps its history "
                    + "for 30 days), so 'spots' cannot go back to #2; revert to #3 or later "
                    + "('rdlab history spots' lists them)"
            ]
        )
        #expect(lab.contents() == before)
        // The earliest transaction it names is one it can go back to.
        try lab.succeed(["revert", "spots", "--to", "3"])
        let shown = try lab.json(["show", "spots"]) as? [String: Any] ?? [:]
        #expect((shown["parameters"] as? [String: Double])?["f"] == 0.035)
    }
}
