import Foundation
import TestSupport
import Testing

/// Stores written by earlier versions of rdlab's model, kept in Fixtures/ (one per version):
/// each must open with today's rdlab, migrated, with everything in it intact.
@Suite("Stores written by every earlier rdlab model open, migrated, with nothing lost")
struct ModelFixtureTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures")

    /// A copy of the fixture store `name` (with its blobs) as the lab fixture's store.
    func copy(_ name: String, to lab: borrowing LabFixture) throws {
        let manager = FileManager.default
        let source = Self.fixtures.appendingPathComponent(name).path
        try manager.copyItem(atPath: source, toPath: lab.store)
        if manager.fileExists(atPath: source + "-blobs") {
            try manager.copyItem(atPath: source + "-blobs", toPath: lab.store + "-blobs")
        }
    }

    @Test("model 1: every configuration, snapshot, thumbnail and setting, and resume bit for bit")
    func modelOne() throws {
        let lab = try LabFixture()
        try copy("rdlab-model-1.olog", to: lab)
        #expect(try lab.names().sorted() == ["bz", "kept", "spots", "waves"])
        let spots = try lab.succeed(["show", "spots"]).standardOutput
        #expect(spots.contains("64 × 64, unorm8, zero boundary"))
        #expect(spots.contains("snapshots:   2"))
        #expect(spots.contains("thumbnail:   6250 bytes of PNG"))
        // Snapshot.timestamp is Snapshot.savedAt now: the first model's times are kept.
        #expect(spots.contains("step 300  2026-12-02T01:09:13Z"))
        // Its states were computed before rule 2: they migrate as rule 1's.
        #expect(spots.contains("bytes of state, unorm8 rule 1"))
        #expect(!spots.contains("unorm8 rule 2"))
        let settings = try lab.succeed(["settings"]).standardOutput
        #expect(settings.contains("author = Ada Lovelace"))
        #expect(settings.contains("default-size = 128"))
        #expect(settings.contains("default-model = fitzhugh-nagumo"))
        // The snapshots' states continue exactly where the first model left them.
        for name in ["spots", "waves", "bz"] {
            let output = lab.path("\(name).npy")
            try lab.succeed(["resume", name, "--steps", "60", "--npy", output])
            let expected = Self.fixtures.appendingPathComponent("rdlab-model-1-resume-\(name).npy")
            #expect(
                FileManager.default.contents(atPath: output) == (try Data(contentsOf: expected)),
                "resuming \(name) differs from the first model's result"
            )
        }
        #expect(try lab.verify())
        // The five snapshots the first model saved are all there, beside the resumed ones.
        let steps = try lab.objects("Snapshot").compactMap {
            ($0["attributes"] as? [String: Any])?["step"] as? Int
        }
        var original = [100, 200, 300, 400, 400]
        for step in steps {
            if let index = original.firstIndex(of: step) { original.remove(at: index) }
        }
        #expect(original.isEmpty, "snapshots lost: steps \(original)")
        // The migrated store keeps its model versions, the first one among them.
        let schema = try RDLabProcess.runObjectLog(["schema", lab.store, "--json"])
        #expect(schema.exitCode == 0)
        #expect(schema.standardOutput.contains("\"hash\": \"3a90e8f228b81de8\""))
    }

    @Test("model 2 (notes, tags, savedAt): configurations with their notes and tags")
    func modelTwo() throws {
        let lab = try LabFixture()
        try copy("rdlab-model-2.olog", to: lab)
        #expect(try lab.names().sorted() == ["autosave", "spots"])
        let spots = try lab.succeed(["show", "spots"]).standardOutput
        #expect(spots.contains("Turing spots, first try"))
        #expect(spots.contains("pattern"))
        #expect(try lab.succeed(["list", "--tag", "pattern"]).standardOutput.contains("spots"))
        // The thumbnails, kept inline by the second model, read the same through the third,
        // which keeps them in blobs: the same sizes and hashes as the fixture holds.
        #expect(Set(try thumbnails(lab)) == ["3552 f1ab27ef", "4642 e4b8f611"])
        try lab.succeed(["edit", "spots", "--notes", "edited by model 3"])
        #expect(Set(try thumbnails(lab)) == ["3552 f1ab27ef", "4642 e4b8f611"])
        #expect(try lab.verify())
    }

    /// Each configuration's thumbnail as "length sha256-prefix", as `objectlog dump` shows it.
    func thumbnails(_ lab: borrowing LabFixture) throws -> [String] {
        try lab.objects("Configuration").compactMap { object in
            guard let attributes = object["attributes"] as? [String: Any],
                let thumbnail = attributes["thumbnail"] as? [String: Any],
                let length = thumbnail["length"] as? Int,
                let hash = thumbnail["sha256"] as? String
            else { return nil }
            return "\(length) \(hash.prefix(8))"
        }
    }

    @Test("model 3 (thumbnails in blobs): configurations, settings, and resume bit for bit")
    func modelThree() throws {
        let lab = try LabFixture()
        try copy("rdlab-model-3.olog", to: lab)
        #expect(try lab.names().sorted() == ["autosave", "bz", "spots"])
        let spots = try lab.succeed(["show", "spots"]).standardOutput
        #expect(spots.contains("spots, with thumbnails in blobs"))
        #expect(spots.contains("thumbnail:   "))
        #expect(try lab.succeed(["settings"]).standardOutput.contains("author = Grace Hopper"))
        let output = lab.path("spots.npy")
        try lab.succeed(["resume", "spots", "--steps", "60", "--npy", output])
        let expected = Self.fixtures.appendingPathComponent("rdlab-model-3-resume-spots.npy")
        #expect(FileManager.default.contents(atPath: output) == (try Data(contentsOf: expected)))
        #expect(try lab.verify())
    }

    @Test("model 4 (the unorm8 rule per snapshot): rule 2 states resume by rule 2, bit for bit")
    func modelFour() throws {
        let lab = try LabFixture()
        try copy("rdlab-model-4.olog", to: lab)
        #expect(try lab.names().sorted() == ["autosave", "bz", "spots", "spots-float"])
        let spots = try lab.succeed(["show", "spots"]).standardOutput
        #expect(spots.contains("spots, unorm8 rule 2"))
        #expect(spots.contains("8192 bytes of state, unorm8 rule 2"))
        let json = try lab.succeed(["show", "spots", "--json"]).standardOutput
        #expect(json.contains("\"unorm8Rule\": 2") || json.contains("\"unorm8Rule\":2"))
        #expect(try lab.succeed(["settings"]).standardOutput.contains("author = Emmy Noether"))
        // Stores of the first three models resume by rule 1 (above); this one's states by the
        // rule they were saved with, 2, to the results that model's rdlab wrote.
        for (name, steps) in [("spots", "60"), ("bz", "40")] {
            let output = lab.path("\(name).npy")
            try lab.succeed(["resume", name, "--steps", steps, "--npy", output])
            let expected = Self.fixtures.appendingPathComponent("rdlab-model-4-resume-\(name).npy")
            #expect(
                FileManager.default.contents(atPath: output) == (try Data(contentsOf: expected)),
                "resuming \(name) differs from the fourth model's result"
            )
        }
        #expect(try lab.verify())
    }
}
