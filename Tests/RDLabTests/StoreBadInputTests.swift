import Foundation
import Testing

@Suite("rdlab refuses bad input against a store and leaves the store as it was")
struct StoreBadInputTests {
    @Test(
        "each bad command exits non-zero with one error line and changes nothing",
        arguments: [
            (
                ["run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--save", "a"], 65,
                "error: a configuration named 'a' already exists; pass --replace to overwrite it"
            ),
            (["run", "--model", "gray-scott", "--save"], 64, "error: missing value for '--save'"),
            (
                ["run", "--model", "gray-scott", "--save", " "], 64,
                "error: a configuration's name cannot be empty"
            ),
            (
                ["run", "--model", "gray-scott", "--save", "autosave"], 64,
                "error: 'autosave' is the automatic save of the last run"
            ),
            (
                ["run", "--model", "gray-scott", "--save", "x", "--no-save"], 64,
                "error: '--save' and '--no-save' contradict each other"
            ),
            (
                ["run", "--model", "gray-scott", "--replace"], 64,
                "error: '--replace' goes with '--save <name>'"
            ),
            (
                ["run", "--model", "gray-scott", "--set", "dv=0.3", "--save", "u"], 64,
                "error: dv = 0.3 is outside [0.0, 0.25]"
            ),
            (
                ["run", "--model", "gray-scott", "--set", "f=x", "--save", "u"], 64,
                "error: '--set f' needs a finite number, not 'x'"
            ),
            (
                ["run", "--model", "oregonator", "--save", "u"], 64,
                "error: unknown value 'oregonator' for '--model'"
            ),
            (
                ["run", "--model", "gray-scott", "--preset", "Zebra", "--save", "u"], 64,
                "error: gray-scott has no preset 'Zebra'"
            ),
            (["show"], 64, "error: missing the configuration's name"),
            (["show", "nope"], 66, "error: no configuration named 'nope' in "),
            (["show", "a", "b"], 64, "error: unexpected argument 'b'"),
            (
                ["show", "a", "--bogus"], 64,
                "error: unknown option '--bogus'; see 'rdlab show --help'"
            ),
            (["resume", "nope"], 66, "error: no configuration named 'nope' in "),
            (
                ["resume", "a", "--steps", "ten"], 64,
                "error: '--steps' needs an integer, not 'ten'"
            ),
            (
                ["resume", "a", "--save", "a"], 64,
                "error: '--save a' names the configuration being resumed"
            ),
            (["resume", "a", "--save", "autosave"], 64, "error: 'autosave' is the automatic save"),
            (["resume", "a", "--save", "a2", "--steps", "1"], 0, ""),
            (["edit", "a"], 64, "error: nothing to change"),
            (["edit", "a", "--set", "feed=1"], 64, "error: unknown parameter 'feed'"),
            (
                ["edit", "a", "--set", "f=abc"], 64,
                "error: '--set f' needs a finite number, not 'abc'"
            ),
            (["edit", "nope", "--set", "f=0.1"], 66, "error: no configuration named 'nope'"),
            (["rename", "a"], 64, "error: rename needs the old and the new name"),
            (["rename", "a", "autosave"], 64, "error: 'autosave' is the automatic save"),
            (["rename", "nope", "z"], 66, "error: no configuration named 'nope'"),
            (["rename", "autosave", "a"], 65, "error: a configuration named 'a' already exists"),
            (["delete"], 64, "error: missing the configuration's name"),
            (["delete", "nope"], 66, "error: no configuration named 'nope'"),
            (
                ["settings", "set", "default-model", "brusselator"], 64,
                "error: unknown model 'brusselator'"
            ),
            (
                ["settings", "set", "default-size", "big"], 64,
                "error: the default size must be an integer"
            ),
            (["settings", "set", "colour", "red"], 64, "error: unknown setting 'colour'"),
            (
                ["settings", "set", "last-opened", "nope"], 66,
                "error: no configuration named 'nope'"
            ),
            (["settings", "get", "author"], 1, "error: 'author' is not set"),
            (["settings", "frobnicate"], 64, "error: unknown action 'frobnicate'"),
            (["list", "--format"], 64, "error: unknown option '--format'"),
            (["browse", "--html"], 64, "error: missing value for '--html'"),
        ] as [([String], Int32, String)]
    )
    func refused(arguments: [String], status: Int32, message: String) throws {
        let lab = try LabFixture()
        try lab.succeed([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "2", "--save", "a",
        ])
        let before = lab.contents()
        let result = try lab.rdlab(arguments)
        guard status != 0 else {
            // The control case: the same kind of command does change the store when it is right.
            #expect(result.exitCode == 0, "\(result.standardError)")
            #expect(lab.contents() != before)
            return
        }
        #expect(result.exitCode == status, "\(result.standardError)")
        #expect(result.standardOutput == "")
        #expect(result.errorLines.count == 1, "\(result.standardError)")
        #expect(result.errorLines.first?.hasPrefix(message) == true, "\(result.standardError)")
        #expect(lab.contents() == before)
    }

    @Test("a file that is not a store is refused with 65 and left alone")
    func notAStore() throws {
        let lab = try LabFixture()
        let junk = Data("this is a shopping list, not a store\n".utf8)
        try junk.write(to: URL(fileURLWithPath: lab.store))
        for arguments in [
            ["list"], ["show", "a"],
            ["run", "--model", "gray-scott", "--size", "8", "--steps", "1"],
            ["settings", "set", "author", "X"], ["delete", "a"], ["browse"],
        ] {
            let result = try lab.rdlab(arguments)
            #expect(result.exitCode == 65, "\(arguments)")
            #expect(result.errorLines.count == 1)
            #expect(
                result.errorLines.first?.hasPrefix(
                    "error: '\(lab.store)' is not an ObjectLog store (no OBJLOG magic at offset 0);"
                ) == true,
                "\(result.standardError)"
            )
        }
        #expect(FileManager.default.contents(atPath: lab.store) == junk)
    }

    @Test("an ObjectLog store of another program is refused with 65 and left alone")
    func foreignStore() throws {
        let lab = try LabFixture()
        // The store layer's format fixture: a valid store with objects but no rdlab model.
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(
                "ObjectLogStoreTests/Fixtures/v1.0.olog"
            )
        try FileManager.default.copyItem(atPath: fixture.path, toPath: lab.store)
        let before = lab.contents()
        for arguments in [
            ["list"],
            ["run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--save", "x"],
            ["settings", "set", "author", "X"], ["delete", "a"],
        ] {
            let result = try lab.rdlab(arguments)
            #expect(result.exitCode == 65, "\(arguments)")
            #expect(
                result.errorLines == [
                    "error: '\(lab.store)' is an ObjectLog store without rdlab's model (another program's data); choose another path with --store"
                ]
            )
        }
        #expect(lab.contents() == before)
    }

    @Test("a damaged store is refused for writing with 65, naming the damage and what to run")
    func damaged() throws {
        let lab = try LabFixture()
        try lab.succeed([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "2", "--save", "a",
        ])
        try lab.succeed([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "2", "--save", "b",
        ])
        // Flip a byte inside the first transaction that saved objects, which later ones follow.
        var bytes = try Data(contentsOf: URL(fileURLWithPath: lab.store))
        let history = try RDLabProcess.runObjectLog(["history", lab.store, "--json"])
        let listed = try JSONSerialization.jsonObject(with: Data(history.standardOutput.utf8))
        let transactions = (listed as? [String: Any])?["transactions"] as? [[String: Any]] ?? []
        let saving = transactions.first { ($0["inserted"] as? Int ?? 0) > 0 }
        let target = try #require(saving?["offset"] as? Int) + 40
        bytes[target] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: lab.store))
        let before = lab.contents()
        // Commands that only read fall back to a salvage (DamagedStoreTests); one that creates
        // or writes before reading is refused.
        let result = try lab.rdlab([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--save", "c",
        ])
        #expect(result.exitCode == 65, "\(result.standardError)")
        #expect(result.errorLines.count == 1)
        #expect(
            result.errorLines.first?.hasPrefix("error: the store '\(lab.store)' is damaged") == true
        )
        #expect(
            result.errorLines.first?.hasSuffix(
                "check it with 'objectlog verify \(lab.store)', then repair it with 'objectlog "
                    + "repair \(lab.store)'"
            ) == true
        )
        for arguments in [["delete", "b"], ["resume", "b"]] {
            let refused = try lab.rdlab(arguments)
            #expect(refused.exitCode == 65, "\(arguments): \(refused.standardError)")
            // Only list and show warn that they read a salvage; these are refused at the save.
            #expect(
                refused.errorLines.last
                    == "error: the store '\(lab.store)' is damaged, so it is read-only; repair it "
                    + "with 'objectlog repair \(lab.store)', then try again"
            )
        }
        #expect(lab.contents() == before)
    }

    @Test("commands that read a store do not create a missing one")
    func missingStore() throws {
        let lab = try LabFixture()
        for arguments in [
            ["list"], ["show", "a"], ["resume"], ["delete", "a"], ["settings"],
            ["edit", "a", "--set", "f=0.1"],
        ] {
            let result = try lab.rdlab(arguments)
            #expect(result.exitCode == 66, "\(arguments)")
            #expect(result.errorLines.first?.hasPrefix("error: no store at '\(lab.store)'") == true)
        }
        #expect(!FileManager.default.fileExists(atPath: lab.store))
        let unwritable = try RDLabProcess.run([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--store",
            "/nonexistent-rdlab-directory/lab.olog",
        ])
        #expect(unwritable.exitCode == 73)
        #expect(
            unwritable.errorLines == [
                "error: cannot create the store '/nonexistent-rdlab-directory/lab.olog': its directory does not exist; create it or choose another path with --store"
            ]
        )
    }

    @Test(
        "a running rdlab holds no lock: writers and readers go on; Ctrl-C then saves nothing and exits 130"
    )
    func runningAndInterrupted() throws {
        let lab = try LabFixture()
        try lab.succeed([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "2", "--save", "a",
        ])
        guard let executable = RDLabProcess.executable else {
            Issue.record("rdlab was not built")
            return
        }
        let long = Process()
        long.executableURL = executable
        long.arguments = [
            "run", "--model", "gray-scott", "--size", "16", "--steps", "1000000000", "--save",
            "never", "--store", lab.store,
        ]
        long.currentDirectoryURL = lab.directory.url
        let output = Pipe()
        let error = Pipe()
        long.standardOutput = output
        long.standardError = error
        try long.run()
        defer {
            // Never leave the long run behind, whatever failed.
            if long.isRunning { kill(long.processIdentifier, SIGKILL) }
        }
        // Give it time to check the store and start stepping.
        Thread.sleep(forTimeInterval: 1)
        #expect(long.isRunning)

        // Writers are not refused while it steps, and readers are welcome.
        #expect(try lab.rdlab(["delete", "nothing"]).exitCode == 66)
        try lab.succeed([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--save", "b",
        ])
        try lab.succeed(["edit", "a", "--tag", "during"])
        try lab.succeed(["settings", "set", "author", "Ada"])
        try lab.succeed(["list"])
        #expect(long.isRunning, "the long run ended early")
        let before = lab.contents()

        long.interrupt()
        // Ctrl-C is checked between chunks of steps; a few seconds are plenty even in debug.
        let stopBy = Date().addingTimeInterval(30)
        while long.isRunning && Date() < stopBy {
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(!long.isRunning, "Ctrl-C did not stop the run")
        if long.isRunning { kill(long.processIdentifier, SIGKILL) }
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = error.fileHandleForReading.readDataToEndOfFile()
        long.waitUntilExit()
        #expect(long.terminationReason == .exit)
        #expect(long.terminationStatus == 130)
        #expect(outputData.isEmpty)
        let message = String(decoding: errorData, as: UTF8.self)
        #expect(message.hasPrefix("error: interrupted after "), "\(message)")
        #expect(message.hasSuffix("steps; nothing was saved\n"), "\(message)")
        #expect(lab.contents() == before)
        #expect(try lab.names() == ["autosave", "a", "b"])
    }
}
