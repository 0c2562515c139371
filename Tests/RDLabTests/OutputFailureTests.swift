import Foundation
import TestSupport
import Testing

/// Standard output that cannot be written, with the built `rdlab` and `objectlog`: one error
/// line and exit 74, never a crash, and a run still saves.
@Suite("Output that cannot be written")
struct OutputFailureTests {
    /// Runs `executable` with standard output going to `standardOutput` (standard error to a
    /// pipe), and returns its exit status and standard error.
    static func run(
        _ executable: URL?,
        _ arguments: [String],
        standardOutput: FileHandle
    ) throws -> (status: Int32, errorLines: [String]) {
        let executable = try #require(executable, "the executable was not built next to the tests")
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = standardOutput
        let error = Pipe()
        process.standardError = error
        try process.run()
        let errorData = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let lines = String(decoding: errorData, as: UTF8.self).split(separator: "\n")
        return (process.terminationStatus, lines.map(String.init))
    }

    /// The writing end of a pipe whose reading end is already closed: every write fails with
    /// EPIPE (or kills a process that does not ignore SIGPIPE).
    static func closedPipe() throws -> (FileHandle, Pipe) {
        let pipe = Pipe()
        try pipe.fileHandleForReading.close()
        return (pipe.fileHandleForWriting, pipe)
    }

    @Test("rdlab presets into a full device: exit 74 and one error line")
    func rdlabFullDevice() throws {
        let full = try #require(FileHandle(forWritingAtPath: "/dev/full"))
        let result = try Self.run(RDLabProcess.executable, ["presets"], standardOutput: full)
        #expect(result.status == 74)
        #expect(
            result.errorLines == ["error: cannot write standard output: No space left on device"]
        )
    }

    @Test("rdlab run into a closed pipe: exit 74, one error line, and the run is saved")
    func rdlabClosedPipeStillSaves() throws {
        let directory = TemporaryDirectory()
        let store = directory.file("lab.olog")
        let (handle, pipe) = try Self.closedPipe()
        let result = try Self.run(
            RDLabProcess.executable,
            [
                "run", "--model", "gray-scott", "--size", "16", "--steps", "5", "--save", "kept",
                "--store", store,
            ],
            standardOutput: handle
        )
        _ = pipe
        #expect(result.status == 74)
        #expect(result.errorLines == ["error: cannot write standard output: Broken pipe"])
        let list = try RDLabProcess.run(["list", "--store", store])
        #expect(list.exitCode == 0)
        #expect(list.lines.contains { $0.hasPrefix("kept ") })
    }

    @Test("objectlog info into a full device: exit 74 and one error line")
    func objectlogFullDevice() throws {
        let directory = TemporaryDirectory()
        let store = directory.file("lab.olog")
        let saved = try RDLabProcess.run([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--store", store,
        ])
        try #require(saved.exitCode == 0)
        let full = try #require(FileHandle(forWritingAtPath: "/dev/full"))
        let result = try Self.run(
            RDLabProcess.objectLogExecutable,
            ["info", store],
            standardOutput: full
        )
        #expect(result.status == 74)
        #expect(
            result.errorLines == ["error: cannot write standard output: No space left on device"]
        )
    }

    @Test(
        "rdlab run with a --png or --npy that cannot be written stops before stepping or saving",
        arguments: ["--png", "--npy"]
    )
    func unwritableFileStopsFirst(option: String) throws {
        let directory = TemporaryDirectory()
        let store = directory.file("lab.olog")
        let base = [
            "run", "--model", "gray-scott", "--size", "16", "--steps", "5", "--save", "kept",
            "--store", store,
        ]
        let missing = try RDLabProcess.run(base + [option, directory.file("missing/x.out")])
        #expect(missing.exitCode == 73)
        #expect(
            missing.errorLines == [
                "error: cannot write '\(directory.file("missing/x.out"))': there is no directory "
                    + "'\(directory.file("missing"))'"
            ]
        )
        #expect(missing.standardOutput == "", "nothing was stepped or printed")
        #expect(!FileManager.default.fileExists(atPath: store), "no store was created")

        let folder = try RDLabProcess.run(base + [option, directory.path])
        #expect(folder.exitCode == 73)
        #expect(folder.errorLines == ["error: cannot write '\(directory.path)': it is a directory"])
        #expect(!FileManager.default.fileExists(atPath: store))
    }

    @Test("rdlab show --png into a directory says so (exit 73)")
    func showIntoDirectory() throws {
        let directory = TemporaryDirectory()
        let store = directory.file("lab.olog")
        let saved = try RDLabProcess.run([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--save", "kept",
            "--store", store,
        ])
        try #require(saved.exitCode == 0)
        let shown = try RDLabProcess.run([
            "show", "kept", "--store", store, "--png", directory.path,
        ])
        #expect(shown.exitCode == 73)
        #expect(shown.errorLines == ["error: cannot write '\(directory.path)': it is a directory"])
    }
}
