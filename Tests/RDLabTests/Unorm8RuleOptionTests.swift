import Foundation
import ReactionDiffusion
import TestSupport
import Testing

/// `--unorm8-rule`: the rule a run's unorm8 steps follow reaches the solver, is kept with the
/// snapshots (so resuming continues by it), and is named wherever a command reproduces a state.
@Suite("rdlab run and demo --unorm8-rule, kept with the snapshots and named to reproduce them")
struct Unorm8RuleOptionTests {
    /// A Gray-Scott run from the seed: the model on which the rules compute differently.
    static let run = [
        "run", "--model", "gray-scott", "--preset", "Spots", "--width", "48", "--height", "32",
    ]

    /// What the library computes for ``run``: `rules` in turn, each for its number of steps.
    static func simulated(_ rules: (Unorm8Rule, Int)...) -> Field {
        var field = InitialState.make(
            for: .grayScott,
            width: 48,
            height: 32,
            seed: InitialState.defaultSeed
        )
        for (rule, steps) in rules {
            let simulation = Simulation(
                model: .grayScott,
                parameters: Preset.named("Spots", for: .grayScott)!.parameters,
                unorm8Rule: rule,
                field: field
            )
            simulation.step(count: steps)
            field = simulation.field
        }
        return field
    }

    /// The rule of each of the configuration's snapshots, in step order, from `show --json`.
    static func snapshotRules(_ name: String, in lab: borrowing LabFixture) throws -> [Int] {
        let shown = try lab.json(["show", name]) as? [String: Any] ?? [:]
        let snapshots = (shown["snapshots"] as? [[String: Any]] ?? []).sorted {
            ($0["step"] as? Int ?? 0) < ($1["step"] as? Int ?? 0)
        }
        return snapshots.compactMap { $0["unorm8Rule"] as? Int }
    }

    /// Each configuration's reproducing command in the gallery `browse` writes.
    static func galleryCommands(_ lab: borrowing LabFixture) throws -> [String: String] {
        let page = lab.path("gallery.html")
        try lab.succeed(["browse", "--html", page, "--sheet", lab.path("sheet.png")])
        let html = try String(contentsOfFile: page, encoding: .utf8)
        let configurations =
            try GalleryBrowserTests.data(inGallery: html)["configurations"] as? [[String: Any]]
            ?? []
        var commands: [String: String] = [:]
        for configuration in configurations {
            if let name = configuration["name"] as? String,
                let command = configuration["command"] as? String
            {
                commands[name] = command
            }
        }
        return commands
    }

    /// Runs a gallery command (plain words, no quoting) into a fresh store and returns the
    /// state it saved as `name`.
    static func stateOfRunning(_ command: String, saving name: String) throws -> Data? {
        let words = command.split(separator: " ").map(String.init)
        #expect(words.first == "rdlab" && !command.contains("'"), "\(command)")
        let other = try LabFixture()
        try other.succeed(Array(words.dropFirst()))
        try other.succeed(["show", name, "--npy", other.path("state.npy")])
        return FileManager.default.contents(atPath: other.path("state.npy"))
    }

    @Test("each rule reaches the solver and is saved with the snapshot; the rules' states differ")
    func runsByEachRule() throws {
        let lab = try LabFixture()
        var states: [Unorm8Rule: Field] = [:]
        for rule in Unorm8Rule.allCases {
            let name = "rule-\(rule.rawValue)"
            let result = try lab.succeed(
                Self.run + [
                    "--steps", "60", "--unorm8-rule=\(rule.rawValue)", "--save", name, "--npy",
                    lab.path("\(name).npy"),
                ]
            )
            let state = try NumPyFormat.read(contentsOf: lab.path("\(name).npy"))
            #expect(state == Self.simulated((rule, 60)))
            #expect(try Self.snapshotRules(name, in: lab) == [rule.rawValue])
            // The summary names a rule that is not the default, as the gallery's command does.
            #expect(
                result.lines.first?.contains(", unorm8 rule \(rule.rawValue), ")
                    == (rule != .current),
                "\(result.lines.first ?? "")"
            )
            states[rule] = state
        }
        // From the same seed the rules reach different states: the rule is worth choosing.
        #expect(states[.floatingPoint] != states[.fixedPoint])

        // Without the option a run uses today's default.
        try lab.succeed(
            Self.run + ["--steps", "60", "--save", "plain", "--npy", lab.path("plain.npy")]
        )
        #expect(try NumPyFormat.read(contentsOf: lab.path("plain.npy")) == states[.current])
        #expect(try Self.snapshotRules("plain", in: lab) == [Unorm8Rule.current.rawValue])
    }

    @Test("resume continues a rule 1 state by rule 1, bit for bit, and saves it as rule 1's")
    func resumeKeepsTheRule() throws {
        let lab = try LabFixture()
        try lab.succeed(Self.run + ["--steps", "25", "--unorm8-rule", "1", "--save", "part"])
        try lab.succeed(["resume", "part", "--steps", "35", "--npy", lab.path("resumed.npy")])
        let resumed = try NumPyFormat.read(contentsOf: lab.path("resumed.npy"))
        #expect(resumed == Self.simulated((.floatingPoint, 60)))
        // Continuing by today's default would have reached another state.
        #expect(resumed != Self.simulated((.floatingPoint, 25), (.current, 35)))
        #expect(try Self.snapshotRules("part", in: lab) == [1, 1])
        #expect(try Self.snapshotRules("autosave", in: lab) == [1])
    }

    @Test("the gallery's command names a rule other than the default, and reproduces the state")
    func galleryCommandNamesTheRule() throws {
        let lab = try LabFixture()
        try lab.succeed(Self.run + ["--steps", "30", "--unorm8-rule", "1", "--save", "one"])
        try lab.succeed(["resume", "one", "--steps", "30"])
        try lab.succeed(Self.run + ["--steps", "60", "--unorm8-rule", "2", "--save", "two"])
        try lab.succeed(Self.run + ["--steps", "60", "--precision", "float32", "--save", "float"])
        let commands = try Self.galleryCommands(lab)
        let base = (["rdlab"] + Self.run + ["--steps", "60"]).joined(separator: " ")
        #expect(commands["one"] == base + " --unorm8-rule 1 --save one")
        #expect(commands["two"] == base + " --save two")
        #expect(commands["float"] == base + " --precision float32 --save float")

        try lab.succeed(["show", "one", "--npy", lab.path("one.npy")])
        let saved = FileManager.default.contents(atPath: lab.path("one.npy"))
        let command = try #require(commands["one"])
        #expect(try Self.stateOfRunning(command, saving: "one") == saved)
        // The command as it was before it named the rule computes another state.
        let unnamed = command.replacingOccurrences(of: " --unorm8-rule 1", with: "")
        #expect(try Self.stateOfRunning(unnamed, saving: "one") != saved)
    }

    @Test("a Gray-Scott state saved before rule 2 is reproduced by its command, which names rule 1")
    func commandForAnEarlierStore() throws {
        let lab = try LabFixture()
        try ModelFixtureTests().copy("rdlab-model-1.olog", to: lab)
        let commands = try Self.galleryCommands(lab)
        let command = try #require(commands["spots"])
        #expect(command.contains(" --unorm8-rule 1 "), "\(command)")
        try lab.succeed(["show", "spots", "--npy", lab.path("spots.npy")])
        let saved = FileManager.default.contents(atPath: lab.path("spots.npy"))
        #expect(try Self.stateOfRunning(command, saving: "spots") == saved)
        let unnamed = command.replacingOccurrences(of: " --unorm8-rule 1", with: "")
        #expect(try Self.stateOfRunning(unnamed, saving: "spots") != saved)
        // A float32 state names no rule: its steps never round.
        #expect(commands["waves"]?.contains("--unorm8-rule") == false)
    }

    @Test("demo --unorm8-rule 1 runs every preset by rule 1, and its gallery names the rule")
    func demo() throws {
        let lab = try LabFixture()
        let result = try lab.succeed([
            "demo", "--size", "16", "--steps", "4", "--unorm8-rule", "1", "--html",
            lab.path("gallery.html"), "--sheet", lab.path("sheet.png"),
        ])
        #expect(result.lines.first?.contains(", unorm8 rule 1, ") == true)
        let names = try lab.names()
        #expect(names.count == Preset.all.count)
        for name in names {
            #expect(try Self.snapshotRules(name, in: lab) == [1], "\(name)")
        }
        let commands = try Self.galleryCommands(lab)
        #expect(commands.count == Preset.all.count)
        for (name, command) in commands {
            #expect(command.contains(" --unorm8-rule 1 "), "\(name): \(command)")
        }
    }

    @Test(
        "a value other than 1 or 2, or none, is a usage error on run and demo alike",
        arguments: [["run", "--model", "gray-scott"], ["demo"]]
    )
    func badValue(command: [String]) throws {
        let directory = LabFixture.makeDirectory()
        for value in ["0", "3", "01", "fixed", ""] {
            let result = try RDLabProcess.run(
                command + ["--unorm8-rule", value],
                directory: directory.path
            )
            #expect(result.exitCode == 64)
            #expect(result.standardOutput == "")
            #expect(
                result.errorLines == [
                    "error: unknown value '\(value)' for '--unorm8-rule'; use 1 (the original's "
                        + "8-bit rounding) or 2 (the default)"
                ]
            )
        }
        let missing = try RDLabProcess.run(command + ["--unorm8-rule"], directory: directory.path)
        #expect(missing.exitCode == 64)
        #expect(missing.errorLines == ["error: missing value for '--unorm8-rule'"])
        // Nothing was run or written.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test("with float32, whose states are never rounded to levels, a rule is refused")
    func float32() throws {
        let result = try RDLabProcess.run(
            Self.run + ["--precision", "float32", "--unorm8-rule", "2", "--no-save"]
        )
        #expect(result.exitCode == 64)
        #expect(
            result.errorLines == [
                "error: '--unorm8-rule' goes with unorm8 precision; a float32 state is not rounded "
                    + "to levels"
            ]
        )
    }

    @Test("help for run and demo lists the option and says which rule is the default and why")
    func help() throws {
        for command in ["run", "demo"] {
            let text = try RDLabProcess.run(["help", command]).standardOutput
            #expect(text.contains("[--unorm8-rule <1|2>]"), "\(command)")
            let option = try #require(text.range(of: "\n  --unorm8-rule <1|2>"), "\(command)")
            let next = text[option.upperBound...].range(of: "\n  -")?.lowerBound ?? text.endIndex
            let entry = text[option.upperBound..<next]
            #expect(entry.contains("2 (default: Gray-Scott in 16-bit fixed"), "\(entry)")
            #expect(entry.contains("faster than float32"), "\(entry)")
            #expect(entry.contains("1 (the original's"), "\(entry)")
        }
    }
}
