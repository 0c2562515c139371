import Foundation
import Testing

@Suite("rdlab list --deleted and undelete restore a deleted configuration from the history")
struct UndeleteCommandTests {
    /// A lab with `spots` (two snapshots, tags and notes) whose blobs no other object shares:
    /// the last run, which saved the same state, was replaced by another.
    static func makeLab() throws -> LabFixture {
        let lab = try LabFixture()
        try lab.succeed([
            "run", "--model", "gray-scott", "--size", "40", "--steps", "2", "--save", "spots",
        ])
        try lab.succeed(["resume", "spots", "--steps", "3"])
        try lab.succeed(["edit", "spots", "--tag", "paper", "--notes", "kept\nfor later"])
        try lab.succeed(["run", "--model", "fitzhugh-nagumo", "--size", "8", "--steps", "1"])
        return lab
    }

    /// The stored objects of `entity` that belong to the configuration called `name`, without
    /// their keys (which a restore changes) and with their values as `objectlog dump` shows
    /// them: data by length and SHA-256.
    static func stored(_ lab: borrowing LabFixture, _ name: String) throws -> [String] {
        let configurations = try lab.objects("Configuration")
        let configuration = try #require(
            configurations.first {
                ($0["attributes"] as? [String: Any])?["name"] as? String == name
            }
        )
        let key = configuration["id"] as? Int
        var attributes = configuration["attributes"] as? [String: Any] ?? [:]
        attributes["modified"] = nil
        var result = [try canonical(attributes)]
        let snapshots = try lab.objects("Snapshot").filter {
            ($0["relationships"] as? [String: Any])?["configuration"] as? Int == key
        }
        result += try snapshots.map { try canonical($0["attributes"] as? [String: Any] ?? [:]) }
            .sorted()
        return result
    }

    static func canonical(_ value: [String: Any]) throws -> String {
        String(
            decoding: try JSONSerialization.data(withJSONObject: value, options: .sortedKeys),
            as: UTF8.self
        )
    }

    @Test("a deleted configuration comes back with its snapshots, states and thumbnail bytes")
    func undelete() throws {
        let lab = try Self.makeLab()
        let before = try Self.stored(lab, "spots")
        #expect(before.count == 3)
        try lab.succeed(["show", "spots", "--npy", lab.path("before.npy")])
        let shownBefore = try lab.json(["show", "spots"]) as? [String: Any] ?? [:]

        #expect(
            try lab.succeed(["delete", "spots"]).lines == ["deleted 'spots' and its 2 snapshots"]
        )
        #expect(try lab.names() == ["autosave"])
        let listed = try lab.succeed(["list", "--deleted"]).lines
        #expect(listed.count == 2)
        #expect(listed.first == "NAME   MODEL       SNAPSHOTS  DELETED               TRANSACTION")
        let row = listed[1].split(separator: " ", omittingEmptySubsequences: true)
        #expect(row.count == 5)
        #expect(row[0] == "spots" && row[1] == "gray-scott" && row[2] == "2")
        let deleted = try lab.json(["list", "--deleted"]) as? [[String: Any]] ?? []
        #expect(deleted.count == 1)
        #expect(deleted.first?["name"] as? String == "spots")
        #expect(deleted.first?["snapshotCount"] as? Int == 2)
        #expect(deleted.first?["tags"] as? [String] == ["paper"])
        let deletedIn = try #require(deleted.first?["transaction"] as? Int)
        #expect(row[4] == "#\(deletedIn)")
        #expect(deleted.first?["deleted"] as? String == String(row[3]))
        // Replaced configurations (each run's automatic save) are not listed as deleted.
        #expect(!listed.contains { $0.hasPrefix("autosave") })
        let tagged = try lab.json(["list", "--deleted", "--tag", "PAPER"]) as? [[String: Any]]
        #expect(tagged?.count == 1)
        let untagged = try lab.json(["list", "--deleted", "--tag", "other"]) as? [[String: Any]]
        #expect(untagged?.isEmpty == true)

        let restored = try lab.succeed(["undelete", "spots"])
        #expect(
            restored.lines == [
                "undeleted 'spots' and its 2 snapshots (deleted in transaction #\(deletedIn), "
                    + "restored in #\(deletedIn + 1))"
            ]
        )
        #expect(try lab.names() == ["autosave", "spots"])
        // Every value, the states and thumbnails (by length and SHA-256) included.
        #expect(try Self.stored(lab, "spots") == before)
        let shownAfter = try lab.json(["show", "spots"]) as? [String: Any] ?? [:]
        for key in ["parameters", "tags", "notes", "created", "snapshots", "steps"] {
            #expect(
                try Self.canonical([key: shownAfter[key] as Any])
                    == Self.canonical([key: shownBefore[key] as Any]),
                "\(key)"
            )
        }
        try lab.succeed(["show", "spots", "--npy", lab.path("after.npy")])
        let beforeState = try #require(FileManager.default.contents(atPath: lab.path("before.npy")))
        #expect(FileManager.default.contents(atPath: lab.path("after.npy")) == beforeState)
        #expect(
            try lab.succeed(["list", "--deleted"]).lines == [
                "no deleted configurations in the history \(lab.store) keeps (for 30 days)"
            ]
        )
        // The restore is in the history; a compaction now keeps its blobs.
        let history = try lab.json(["history", "spots"]) as? [String: Any] ?? [:]
        let edits = history["edits"] as? [[String: Any]] ?? []
        #expect(edits.first?["transaction"] as? Int == deletedIn + 1)
        #expect(edits.first?["snapshotsAdded"] as? Int == 2)
        let compact = try RDLabProcess.runObjectLog(["compact", lab.store])
        #expect(compact.exitCode == 0, "\(compact.standardError)")
        try lab.succeed(["show", "spots", "--npy", lab.path("compacted.npy")])
        #expect(FileManager.default.contents(atPath: lab.path("compacted.npy")) == beforeState)
        #expect(try lab.verify())
    }

    @Test(
        "undelete restores the last configuration deleted under the name; a taken name is refused"
    )
    func names() throws {
        let lab = try Self.makeLab()
        try lab.succeed(["delete", "spots"])
        try lab.succeed([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--save", "spots",
        ])
        // The name is taken again: the deletion is no longer listed, and undelete says why.
        #expect((try lab.json(["list", "--deleted"]) as? [[String: Any]])?.isEmpty == true)
        let before = lab.contents()
        let taken = try lab.rdlab(["undelete", "spots"])
        #expect(taken.exitCode == 65)
        #expect(
            taken.errorLines == [
                "error: a configuration named 'spots' exists again; rename it ('rdlab rename "
                    + "spots NEW') or delete it, then undelete 'spots'"
            ]
        )
        #expect(lab.contents() == before)
        // Deleting the new one makes it the one to restore.
        try lab.succeed(["delete", "spots"])
        #expect(
            try lab.succeed(["undelete", "spots"]).lines.first?.hasPrefix(
                "undeleted 'spots' and its 1 snapshot "
            ) == true
        )
        let shown = try lab.json(["show", "spots"]) as? [String: Any] ?? [:]
        #expect(shown["width"] as? Int == 8)
        #expect(shown["tags"] as? [String] == [])
    }

    @Test(
        "undelete refuses what it cannot restore with one line, its status, and no change",
        arguments: [
            (["undelete"], 64, "error: missing the configuration's name"),
            (["undelete", "spots", "more"], 64, "error: unexpected argument 'more'"),
            (
                ["undelete", "nope"], 66,
                "error: no deleted configuration named 'nope' in the history the store"
            ),
            (
                ["undelete", "autosave"], 65,
                "error: a configuration named 'autosave' exists again"
            ),
            (["list", "--deleted", "--tag"], 64, "error: missing value for '--tag'"),
        ] as [([String], Int32, String)]
    )
    func refused(arguments: [String], status: Int32, message: String) throws {
        let lab = try Self.makeLab()
        try lab.succeed(["delete", "spots"])
        let before = lab.contents()
        let result = try lab.rdlab(arguments)
        #expect(result.exitCode == status, "\(result.standardError)")
        #expect(result.standardOutput == "")
        #expect(result.errorLines.count == 1, "\(result.standardError)")
        #expect(result.errorLines.first?.hasPrefix(message) == true, "\(result.standardError)")
        #expect(lab.contents() == before)
    }

    @Test("history and revert of a deleted name point to undelete")
    func deletedName() throws {
        let lab = try Self.makeLab()
        try lab.succeed(["delete", "spots"])
        let deleted = try lab.json(["list", "--deleted"]) as? [[String: Any]] ?? []
        let number = try #require(deleted.first?["transaction"] as? Int)
        for arguments in [["history", "spots"], ["revert", "spots", "--to", "2"]] {
            let result = try lab.rdlab(arguments)
            #expect(result.exitCode == 66)
            #expect(
                result.errorLines == [
                    "error: no configuration named 'spots' in '\(lab.store)': it was deleted in "
                        + "transaction #\(number); 'rdlab undelete spots' restores it"
                ]
            )
        }
    }

    @Test(
        "beyond the history kept the deletion is gone; a missing blob is reported, not half-restored"
    )
    func beyondTheHistory() throws {
        let lab = try Self.makeLab()
        // The state of the snapshot at step 2, in a blob file no live object refers to after
        // the delete.
        let state = try #require(
            try Self.stored(lab, "spots").compactMap { text -> String? in
                let object =
                    try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
                guard object?["step"] as? Int == 2 else { return nil }
                return (object?["state"] as? [String: Any])?["sha256"] as? String
            }.first
        )
        try lab.succeed(["delete", "spots"])
        // A blob removed behind the store's back: the restore needs every one.
        let blobs = lab.store + "-blobs"
        let orphan = state
        let moved = lab.path("moved-blob")
        try FileManager.default.moveItem(atPath: blobs + "/" + orphan, toPath: moved)
        let before = lab.contents()
        let missing = try lab.rdlab(["undelete", "spots"])
        #expect(missing.exitCode == 65)
        #expect(missing.errorLines.count == 1)
        #expect(missing.errorLines.first?.hasPrefix("error: cannot undelete 'spots': ") == true)
        #expect(missing.errorLines.first?.contains("is no longer kept by the store") == true)
        #expect(lab.contents() == before)
        #expect(try lab.names() == ["autosave"])
        try FileManager.default.moveItem(atPath: moved, toPath: blobs + "/" + orphan)

        // Kept across a compaction: the deletion is still listed.
        let kept = try RDLabProcess.runObjectLog(["compact", lab.store])
        #expect(kept.exitCode == 0, "\(kept.standardError)")
        let deleted = try lab.json(["list", "--deleted"]) as? [[String: Any]] ?? []
        let deletedIn = try #require(deleted.first?["transaction"] as? Int)
        // Once the history no longer keeps it (after 30 days), the next compaction drops it.
        try purgeHistory(of: lab.store, through: deletedIn)
        let compact = try RDLabProcess.runObjectLog(["compact", lab.store])
        #expect(compact.exitCode == 0, "\(compact.standardError)")
        #expect(
            try lab.succeed(["list", "--deleted"]).lines == [
                "no deleted configurations in the history \(lab.store) keeps (for 30 days)"
            ]
        )
        let gone = try lab.rdlab(["undelete", "spots"])
        #expect(gone.exitCode == 66)
        #expect(
            gone.errorLines == [
                "error: no deleted configuration named 'spots' in the history the store "
                    + "'\(lab.store)' keeps (for 30 days); see 'rdlab list --deleted'"
            ]
        )
    }
}
