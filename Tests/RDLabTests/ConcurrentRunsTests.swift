import Foundation
import Testing

@Suite("rdlab runs hold the store only to save: runs side by side, and edits during a run")
struct ConcurrentRunsTests {
    /// The runs' steps: any number will do, since the runs are held before they save.
    static let longSteps = "200"

    /// Starts `rdlab` in the background, held after stepping and before saving until
    /// `release(_:)` is called with the same name (`RDLAB_TEST_HOLD_BEFORE_SAVE`), and waits
    /// until it is held: past its checks, its stepping done, not yet saving, whatever the
    /// machine's speed.
    func startHeld(
        _ arguments: [String],
        lab: borrowing LabFixture,
        name: String
    ) throws -> BackgroundRun {
        let hold = lab.path("hold-\(name)")
        let run = try RDLabProcess.start(
            arguments + ["--store", lab.store],
            directory: lab.directory.path,
            environment: ["RDLAB_TEST_HOLD_BEFORE_SAVE": hold]
        )
        let deadline = Date().addingTimeInterval(60)
        while !FileManager.default.fileExists(atPath: hold + ".waiting"), run.isRunning,
            Date() < deadline
        {
            Thread.sleep(forTimeInterval: 0.01)
        }
        #expect(FileManager.default.fileExists(atPath: hold + ".waiting"), "\(name) never got held")
        return run
    }

    func release(_ name: String, lab: borrowing LabFixture) {
        _ = FileManager.default.createFile(atPath: lab.path("hold-\(name)"), contents: nil)
    }

    @Test(
        "two runs into one store step side by side and both save; settings, show and edit work meanwhile"
    )
    func sideBySide() throws {
        let lab = try LabFixture()
        try lab.succeed([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--save", "first",
        ])
        let one = try startHeld(
            [
                "run", "--model", "gray-scott", "--size", "64", "--steps", Self.longSteps,
                "--save", "one",
            ],
            lab: lab,
            name: "one"
        )
        let two = try startHeld(
            [
                "run", "--model", "fitzhugh-nagumo", "--size", "64", "--steps", Self.longSteps,
                "--save", "two",
            ],
            lab: lab,
            name: "two"
        )
        #expect(one.isRunning && two.isRunning)
        try lab.succeed(["settings", "set", "author", "Grace"])
        try lab.succeed(["show", "first"])
        try lab.succeed(["edit", "first", "--tag", "during", "--set", "f=0.05"])
        try lab.succeed(["list"])
        #expect(one.isRunning && two.isRunning, "the runs ended before the commands did")
        release("one", lab: lab)
        release("two", lab: lab)

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
        let long = try startHeld(
            [
                "run", "--model", "gray-scott", "--size", "64", "--steps", Self.longSteps,
                "--save", "x",
            ],
            lab: lab,
            name: "long"
        )
        #expect(long.isRunning)
        try lab.succeed([
            "run", "--model", "belousov-zhabotinsky", "--size", "8", "--steps", "3", "--save", "x",
        ])
        release("long", lab: lab)
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
        let resume = try startHeld(
            ["resume", "r", "--steps", Self.longSteps],
            lab: lab,
            name: "resume"
        )
        #expect(resume.isRunning)
        try lab.succeed(["delete", "r"])
        release("resume", lab: lab)
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
