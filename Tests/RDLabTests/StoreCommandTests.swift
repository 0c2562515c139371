import Foundation
import ReactionDiffusion
import Testing
import Thumbnails

@Suite("rdlab saves, lists, shows, edits, renames and deletes configurations")
struct StoreCommandTests {
    @Test("run --save keeps every setting, parameter and the exact final state")
    func saveAndShow() throws {
        let lab = try LabFixture()
        let run = try lab.succeed([
            "run", "--model", "gray-scott", "--preset", "Spots", "--set", "f=0.04", "--width", "24",
            "--height", "16", "--steps", "20", "--boundary", "periodic", "--save", "first",
            "--npy", lab.path("run.npy"),
        ])
        #expect(run.lines.last == "saved 'first' at step 20 in \(lab.store)")

        let shown = try lab.json(["show", "first"]) as? [String: Any] ?? [:]
        #expect(shown["name"] as? String == "first")
        #expect(shown["model"] as? String == "gray-scott")
        #expect(shown["preset"] as? String == "Spots")
        #expect(shown["width"] as? Int == 24)
        #expect(shown["height"] as? Int == 16)
        #expect(shown["precision"] as? String == "unorm8")
        #expect(shown["boundary"] as? String == "periodic")
        #expect(shown["steps"] as? Int == 20)
        #expect(shown["autoSaved"] as? Bool == false)
        var expected = Preset.named("Spots", for: .grayScott)!.parameters
        expected.f = 0.04
        let parameters = shown["parameters"] as? [String: Any] ?? [:]
        // Only Gray-Scott's own parameters.
        #expect(parameters.count == 4)
        for name in Model.grayScott.parameterNames {
            let value = (parameters[name] as? NSNumber)?.floatValue
            #expect(value == expected.value(forName: name), "\(name)")
        }
        let snapshots = shown["snapshots"] as? [[String: Any]] ?? []
        #expect(snapshots.count == 1)
        // unorm8: one byte per chemical per cell.
        #expect(snapshots.first?["stateBytes"] as? Int == 2 * 24 * 16)
        #expect((snapshots.first?["thumbnailBytes"] as? Int ?? 0) > 0)

        let files = try lab.succeed([
            "show", "first", "--npy", lab.path("show.npy"), "--png", lab.path("show.png"),
        ])
        #expect(files.lines.contains("wrote \(lab.path("show.npy"))"))
        let saved = try NumPyFormat.read(contentsOf: lab.path("show.npy"))
        #expect(saved == (try NumPyFormat.read(contentsOf: lab.path("run.npy"))))
        let picture = try Image(
            pngBytes: [UInt8](try Data(contentsOf: URL(fileURLWithPath: lab.path("show.png"))))
        )
        #expect(picture.width == 24 && picture.height == 16)
        #expect(try lab.verify())
    }

    @Test("list shows the last run first, then names in order; --json lists the same")
    func list() throws {
        let lab = try LabFixture()
        for name in ["beta", "alpha"] {
            try lab.succeed([
                "run", "--model", "belousov-zhabotinsky", "--size", "12", "--steps", "3", "--save",
                name,
            ])
        }
        let text = try lab.succeed(["list"]).lines
        #expect(text.count == 4)
        #expect(text[0].hasPrefix("NAME"))
        #expect(text[1].hasPrefix("autosave (last run)  belousov-zhabotinsky"))
        #expect(text[2].hasPrefix("alpha "))
        #expect(text[3].hasPrefix("beta "))
        #expect(try lab.names() == ["autosave", "alpha", "beta"])
    }

    @Test("--replace overwrites a configuration of the same name; its old snapshots go")
    func replace() throws {
        let lab = try LabFixture()
        try lab.succeed([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "2", "--save", "x",
        ])
        try lab.succeed(["resume", "x", "--steps", "2"])
        try lab.succeed([
            "run", "--model", "fitzhugh-nagumo", "--size", "10", "--steps", "1", "--save", "x",
            "--replace",
        ])
        let shown = try lab.json(["show", "x"]) as? [String: Any] ?? [:]
        #expect(shown["model"] as? String == "fitzhugh-nagumo")
        #expect(shown["snapshotCount"] as? Int == 1)
        // x's snapshot and the last run's: the two replaced ones of x are gone.
        #expect(try lab.objects("Snapshot").count == 2)
    }

    @Test("edit changes parameters and keeps the snapshots; unstable values need --force")
    func edit() throws {
        let lab = try LabFixture()
        try lab.succeed([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "2", "--save", "e",
        ])
        let edited = try lab.succeed(["edit", "e", "--set", "f=0.03", "--set", "K=0.061"])
        #expect(edited.lines == ["edited 'e': f 0.057031 → 0.03, k 0.063672 → 0.061"])
        var shown = try lab.json(["show", "e"]) as? [String: Any] ?? [:]
        var parameters = shown["parameters"] as? [String: Any] ?? [:]
        #expect((parameters["f"] as? NSNumber)?.floatValue == 0.03)
        #expect((parameters["k"] as? NSNumber)?.floatValue == 0.061)
        #expect(shown["snapshotCount"] as? Int == 1)

        let before = lab.contents()
        let unstable = try lab.rdlab(["edit", "e", "--set", "du=0.5"])
        #expect(unstable.exitCode == 64)
        #expect(unstable.errorLines.count == 1)
        #expect(unstable.errorLines.first?.hasSuffix("pass --force to accept them") == true)
        #expect(lab.contents() == before)

        try lab.succeed(["edit", "e", "--set", "du=0.5", "--force"])
        shown = try lab.json(["show", "e"]) as? [String: Any] ?? [:]
        parameters = shown["parameters"] as? [String: Any] ?? [:]
        #expect((parameters["du"] as? NSNumber)?.floatValue == 0.5)
    }

    @Test(
        "rename keeps the snapshots; delete removes the configuration and, by cascade, its snapshots"
    )
    func renameAndDelete() throws {
        let lab = try LabFixture()
        try lab.succeed([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "2", "--save", "a",
        ])
        try lab.succeed(["resume", "a", "--steps", "3"])
        try lab.succeed([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--save", "b",
        ])
        #expect(try lab.succeed(["rename", "a", "c"]).lines == ["renamed 'a' to 'c'"])
        #expect(try lab.names() == ["autosave", "b", "c"])
        let shown = try lab.json(["show", "c"]) as? [String: Any] ?? [:]
        #expect(shown["snapshotCount"] as? Int == 2)
        #expect(shown["steps"] as? Int == 5)

        let configurations = try lab.objects("Configuration")
        let c = try #require(
            configurations.first { ($0["attributes"] as? [String: Any])?["name"] as? String == "c" }
        )
        let cID = c["id"] as? Int
        let snapshotsBefore = try lab.objects("Snapshot")
        #expect(snapshotsBefore.count == 4)
        #expect(
            snapshotsBefore.filter {
                ($0["relationships"] as? [String: Any])?["configuration"] as? Int == cID
            }.count == 2
        )

        #expect(try lab.succeed(["delete", "c"]).lines == ["deleted 'c' and its 2 snapshots"])
        #expect(try lab.names() == ["autosave", "b"])
        let snapshotsAfter = try lab.objects("Snapshot")
        #expect(snapshotsAfter.count == 2)
        #expect(
            snapshotsAfter.allSatisfy {
                ($0["relationships"] as? [String: Any])?["configuration"] as? Int != cID
            }
        )
        #expect(try lab.verify())

        // Renaming the last run keeps it as an ordinary configuration.
        try lab.succeed(["rename", "autosave", "kept"])
        let kept = try lab.json(["show", "kept"]) as? [String: Any] ?? [:]
        #expect(kept["autoSaved"] as? Bool == false)
        #expect(try lab.names() == ["b", "kept"])
    }

    @Test("settings live in the store metadata, where objectlog meta reads them")
    func settings() throws {
        let lab = try LabFixture()
        #expect(
            try lab.succeed(["settings", "set", "author", "Ada Lovelace"]).lines == [
                "author = Ada Lovelace"
            ]
        )
        try lab.succeed(["settings", "set", "default-model", "fitzhugh-nagumo"])
        try lab.succeed(["settings", "set", "default-size", "12"])
        // Defaults apply to runs without --model and --size.
        try lab.succeed(["run", "--steps", "2", "--save", "defaults"])
        let shown = try lab.json(["show", "defaults"]) as? [String: Any] ?? [:]
        #expect(shown["model"] as? String == "fitzhugh-nagumo")
        #expect(shown["width"] as? Int == 12)

        #expect(
            try lab.succeed(["settings"]).lines == [
                "author = Ada Lovelace", "default-model = fitzhugh-nagumo", "default-size = 12",
                "last-opened = defaults",
            ]
        )
        #expect(try lab.succeed(["settings", "get", "default-size"]).lines == ["12"])

        let meta = try RDLabProcess.runObjectLog(["meta", lab.store, "get", "rdlab.author"])
        #expect(meta.exitCode == 0, "\(meta.standardError)")
        #expect(meta.standardOutput == "Ada Lovelace\n")
        let all = try RDLabProcess.runObjectLog(["meta", lab.store])
        #expect(all.standardOutput.contains("rdlab.defaultModel (string): fitzhugh-nagumo"))
        #expect(all.standardOutput.contains("rdlab.defaultSize (int"))
        #expect(all.standardOutput.contains("rdlab.lastOpened (string): defaults"))

        // Every save writes the current settings: the last opened follows a saving run, and
        // show, which only reads, leaves it.
        try lab.succeed([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--save", "other",
        ])
        try lab.succeed(["show", "defaults"])
        let last = try RDLabProcess.runObjectLog(["meta", lab.store, "get", "rdlab.lastOpened"])
        #expect(last.standardOutput == "other\n")
    }
}
