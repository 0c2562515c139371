import Foundation
import TestSupport
import Testing

/// Runs the built `rdlab` executable and captures what it prints.
struct RDLabProcess {
    struct Result {
        var exitCode: Int32
        var standardOutput: String
        var standardError: String

        var errorLines: [String] {
            standardError.split(separator: "\n").map(String.init)
        }

        var lines: [String] {
            standardOutput.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(
                String.init
            )
        }
    }

    /// The `rdlab` next to the test bundle in the build products directory.
    static let executable: URL? = {
        let candidates = [
            Bundle.main.bundleURL,
            Bundle.main.bundleURL.deletingLastPathComponent(),
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
        ].map { $0.appendingPathComponent("rdlab") }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }()

    /// The `objectlog` tool built beside `rdlab`.
    static let objectLogExecutable: URL? = executable.map {
        $0.deletingLastPathComponent().appendingPathComponent("objectlog")
    }

    /// Runs `rdlab` with `arguments`.
    ///
    /// The child never sees the test process's `RDLAB_STORE`, and runs in a fresh directory
    /// unless `directory` is given, so a test can never touch a store it did not choose.
    static func run(
        _ arguments: [String],
        environment: [String: String] = [:],
        directory: String? = nil
    ) throws -> Result {
        guard let executable else {
            Issue.record("rdlab was not built next to the tests; run `swift build` first")
            return Result(exitCode: -1, standardOutput: "", standardError: "")
        }
        return try run(executable, arguments, environment: environment, directory: directory)
    }

    /// Runs the `objectlog` tool with `arguments`.
    static func runObjectLog(_ arguments: [String]) throws -> Result {
        guard let objectLogExecutable,
            FileManager.default.isExecutableFile(atPath: objectLogExecutable.path)
        else {
            Issue.record("objectlog was not built next to the tests; run `swift build` first")
            return Result(exitCode: -1, standardOutput: "", standardError: "")
        }
        return try run(objectLogExecutable, arguments, environment: [:], directory: nil)
    }

    private static func run(
        _ executable: URL,
        _ arguments: [String],
        environment: [String: String],
        directory: String?
    ) throws -> Result {
        let scratch = TemporaryDirectory()
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        var childEnvironment = ProcessInfo.processInfo.environment
        childEnvironment["RDLAB_STORE"] = nil
        childEnvironment.merge(environment) { $1 }
        process.environment = childEnvironment
        process.currentDirectoryURL = URL(fileURLWithPath: directory ?? scratch.url.path)
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        // Read before waiting, so a full pipe cannot block the child.
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(
            exitCode: process.terminationStatus,
            standardOutput: String(decoding: outputData, as: UTF8.self),
            standardError: String(decoding: errorData, as: UTF8.self)
        )
    }
}

extension RDLabProcess {
    /// Runs `executable` with `arguments` in `directory` (a fresh one when `nil`), with the
    /// environment's `RDLAB_STORE` removed and `environment` added.
    static func runCommand(
        _ executable: URL,
        _ arguments: [String],
        environment: [String: String] = [:],
        directory: String? = nil
    ) throws -> Result {
        try run(executable, arguments, environment: environment, directory: directory)
    }

    /// Runs `rdlab` as the user `nobody` when the tests run as root (who may write any file), so
    /// that file permissions apply; as the tests' user otherwise.
    static func runUnprivileged(_ arguments: [String], directory: String) throws -> Result {
        guard let executable else {
            Issue.record("rdlab was not built next to the tests; run `swift build` first")
            return Result(exitCode: -1, standardOutput: "", standardError: "")
        }
        guard geteuid() == 0 else {
            return try run(executable, arguments, environment: [:], directory: directory)
        }
        return try run(
            URL(fileURLWithPath: "/usr/bin/setpriv"),
            ["--reuid=65534", "--regid=65534", "--clear-groups", executable.path] + arguments,
            environment: [:],
            directory: directory
        )
    }

    /// Starts `rdlab` in the background; the caller waits for it or kills it.
    static func start(
        _ arguments: [String],
        directory: String,
        environment: [String: String] = [:]
    ) throws -> BackgroundRun {
        guard let executable else {
            Issue.record("rdlab was not built next to the tests; run `swift build` first")
            throw CocoaError(.fileNoSuchFile)
        }
        return try BackgroundRun(
            executable,
            arguments,
            directory: directory,
            environment: environment
        )
    }
}

/// A child process running in the background, its output collected when it ends.
final class BackgroundRun {
    let process = Process()
    private let output = Pipe()
    private let error = Pipe()

    init(
        _ executable: URL,
        _ arguments: [String],
        directory: String,
        environment extra: [String: String] = [:]
    ) throws {
        process.executableURL = executable
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["RDLAB_STORE"] = nil
        environment.merge(extra) { $1 }
        process.environment = environment
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardOutput = output
        process.standardError = error
        try process.run()
    }

    var isRunning: Bool { process.isRunning }

    /// Waits for the process to end and returns what it printed.
    func wait() -> RDLabProcess.Result {
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return RDLabProcess.Result(
            exitCode: process.terminationStatus,
            standardOutput: String(decoding: outputData, as: UTF8.self),
            standardError: String(decoding: errorData, as: UTF8.self)
        )
    }

    /// Kills the process if it still runs.
    func kill() {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
    }

    deinit { kill() }
}
