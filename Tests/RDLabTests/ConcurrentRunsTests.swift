import Foundation
import Testing

@Suite("rdlab runs hold the store only to save: runs side by side, and edits during a run")
struct ConcurrentRunsTests {
    /// Steps that keep a 64 × 64 run going for a few seconds in a debug build.
    static let longSteps = "150000"

    @Test(
        "two runs into one store step side by side and both save; settings, show and edit work meanwhile"
    )
    func sideBySide() throws {
        let lab = try LabFixture()
        try lab.succeed([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--save", "first",
        ])
        let one = try RDLabProcess.start(
            [
                "run", "--model", "gray-scott", "--size", "64", "--steps", Self.longSteps,
                "--save", "one", "--store", lab.store,
            ],
            directory: lab.directory.path
        )
        let two = try RDLabProcess.start(
            [
                "run", "--model", "fitzhugh-nagumo", "--size", "64", "--steps", Self.longSteps,
                "--save", "two", "--store", lab.store,
            ],
            directory: lab.directory.path
        )
        Thread.sleep(forTimeInterval: 0.5)
        #expect(one.isRunning && two.isRunning)
        try lab.succeed(["settings", "set", "author", "Grace"])
        try lab.succeed(["show", "first"])
        try lab.succeed(["edit", "first", "--tag", "during", "--set", "f=0.05"])
        try lab.succeed(["list"])
        #expect(one.isRunning && two.isRunning, "the runs ended before the commands did")

        let first = one.wait()
        let second = two.wait()
        #expect(first.exitCode == 0, "\(first.standardError)")
        #expect(second.exitCode == 0, "\(second.standardError)")
        #expect(first.lines.last == "saved 'one' at step \(Self.longSteps) in \(lab.store)")
        #expect(second.lines.last == "saved 'two' at step \(Self.longSteps) in \(lab.store)")
        #expect(Set(try lab.names()) == ["autosave", "first", "one", "two"])
        let edited = try lab.json(["show", "first"]) as? [String: Any] ?? [:]
        #expect(edited["tags"] as? [String] == ["during"])
        #expect(try lab.succeed(["settings", "get", "author"]).lines == ["Grace"])
        #expect(try lab.verify())
    }

    @Test(
        "a name taken by another process during a run is re-checked at save: the run is kept as autosave"
    )
    func nameTakenDuringRun() throws {
        let lab = try LabFixture()
        let long = try RDLabProcess.start(
            [
                "run", "--model", "gray-scott", "--size", "64", "--steps", Self.longSteps,
                "--save", "x", "--store", lab.store,
            ],
            directory: lab.directory.path
        )
        Thread.sleep(forTimeInterval: 0.5)
        #expect(long.isRunning)
        try lab.succeed([
            "run", "--model", "belousov-zhabotinsky", "--size", "8", "--steps", "3", "--save", "x",
        ])
        let result = long.wait()
        #expect(result.exitCode == 65)
        #expect(
            result.errorLines == [
                "error: another process saved a configuration named 'x' while this run stepped; this run is kept as 'autosave' (keep it with 'rdlab rename autosave NEW')"
            ]
        )
        // The other process's x is untouched; the long run's state is the automatic save.
        let x = try lab.json(["show", "x"]) as? [String: Any] ?? [:]
        #expect(x["model"] as? String == "belousov-zhabotinsky")
        let autosave = try lab.json(["show", "autosave"]) as? [String: Any] ?? [:]
        #expect(autosave["model"] as? String == "gray-scott")
        #expect(autosave["steps"] as? Int == Int(Self.longSteps))
    }

    @Test("a resume whose configuration is deleted meanwhile keeps its state as autosave")
    func resumeOfDeleted() throws {
        let lab = try LabFixture()
        try lab.succeed([
            "run", "--model", "gray-scott", "--size", "64", "--steps", "1", "--save", "r",
        ])
        let resume = try RDLabProcess.start(
            ["resume", "r", "--steps", Self.longSteps, "--store", lab.store],
            directory: lab.directory.path
        )
        Thread.sleep(forTimeInterval: 0.5)
        #expect(resume.isRunning)
        try lab.succeed(["delete", "r"])
        let result = resume.wait()
        #expect(result.exitCode == 65)
        #expect(
            result.errorLines == [
                "error: 'r' was deleted or renamed while this run stepped; the new state is kept as 'autosave' (keep it with 'rdlab rename autosave NEW')"
            ]
        )
        let autosave = try lab.json(["show", "autosave"]) as? [String: Any] ?? [:]
        #expect(autosave["steps"] as? Int == 1 + Int(Self.longSteps)!)
    }
}
