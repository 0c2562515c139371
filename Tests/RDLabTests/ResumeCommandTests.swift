import Foundation
import ReactionDiffusion
import Testing

@Suite("rdlab resume continues exactly as if the run had never stopped")
struct ResumeCommandTests {
    @Test(
        "run N + resume M is bit-identical to one run of N + M steps",
        arguments: [
            ["--model", "gray-scott", "--preset", "Worms"],
            ["--model", "gray-scott", "--precision", "float32", "--boundary", "periodic"],
            ["--model", "fitzhugh-nagumo", "--precision", "float32"],
            ["--model", "fitzhugh-nagumo", "--preset", "SpiralCoral"],
            ["--model", "belousov-zhabotinsky", "--boundary", "periodic"],
        ]
    )
    func bitIdentical(options: [String]) throws {
        let lab = try LabFixture()
        let grid = ["--width", "32", "--height", "24"]
        try lab.succeed(
            ["run"] + options + grid + [
                "--steps", "70", "--no-save", "--npy", lab.path("whole.npy"),
            ]
        )
        try lab.succeed(
            ["run"] + options + grid + ["--steps", "25", "--save", "part", "--threads", "1"]
        )
        let resumed = try lab.succeed(["resume", "part", "--steps", "30", "--threads", "2"])
        #expect(resumed.lines.first?.contains("from step 25 to step 55") == true)
        try lab.succeed(["resume", "part", "--steps", "15", "--npy", lab.path("resumed.npy")])

        let whole = try NumPyFormat.read(contentsOf: lab.path("whole.npy"))
        let pieces = try NumPyFormat.read(contentsOf: lab.path("resumed.npy"))
        #expect(whole.values.map(\.bitPattern) == pieces.values.map(\.bitPattern))
        // The state at the latest snapshot is the one written.
        try lab.succeed(["show", "part", "--npy", lab.path("shown.npy")])
        #expect(try NumPyFormat.read(contentsOf: lab.path("shown.npy")) == pieces)
        let shown = try lab.json(["show", "part"]) as? [String: Any] ?? [:]
        let steps = (shown["snapshots"] as? [[String: Any]] ?? []).compactMap { $0["step"] as? Int }
        #expect(steps == [25, 55, 70])
    }

    @Test("resume without a name continues the last run; --save makes a new configuration")
    func autosave() throws {
        let lab = try LabFixture()
        let grid = ["--model", "gray-scott", "--size", "16"]
        try lab.succeed(
            ["run"] + grid + ["--steps", "30", "--no-save", "--npy", lab.path("whole.npy")]
        )
        try lab.succeed(["run"] + grid + ["--steps", "10"])
        #expect(try lab.names() == ["autosave"])
        try lab.succeed(["resume", "--steps", "5"])
        let resumed = try lab.succeed([
            "resume", "--steps", "15", "--save", "kept", "--npy", lab.path("kept.npy"),
        ])
        #expect(resumed.lines.last == "saved 'kept' at step 30 in \(lab.store)")
        #expect(try lab.names() == ["autosave", "kept"])
        let kept = try NumPyFormat.read(contentsOf: lab.path("kept.npy"))
        #expect(kept == (try NumPyFormat.read(contentsOf: lab.path("whole.npy"))))
        let shown = try lab.json(["show", "kept"]) as? [String: Any] ?? [:]
        #expect(shown["steps"] as? Int == 30)
        #expect(shown["snapshotCount"] as? Int == 1)
        // The last run is now the resumed one, at step 30.
        let last = try lab.json(["show", "autosave"]) as? [String: Any] ?? [:]
        #expect(last["steps"] as? Int == 30)
    }

    @Test("resume uses edited parameters from the saved state on")
    func afterEdit() throws {
        let lab = try LabFixture()
        let grid = ["--model", "gray-scott", "--size", "16"]
        try lab.succeed(["run"] + grid + ["--steps", "10", "--save", "e"])
        try lab.succeed(["edit", "e", "--set", "f=0.02"])
        try lab.succeed(["resume", "e", "--steps", "10", "--npy", lab.path("edited.npy")])

        // The same continuation through the library, from the state saved at step 10.
        try lab.succeed(
            ["run"] + grid + ["--steps", "10", "--no-save", "--npy", lab.path("ten.npy")]
        )
        var parameters = Model.grayScott.defaultParameters
        parameters.f = 0.02
        let simulation = Simulation(
            model: .grayScott,
            parameters: parameters,
            field: try NumPyFormat.read(contentsOf: lab.path("ten.npy"))
        )
        simulation.step(count: 10)
        #expect(try NumPyFormat.read(contentsOf: lab.path("edited.npy")) == simulation.field)
    }
}
