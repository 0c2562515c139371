import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL server from `tools/postgres-test-server`: a new cluster in a temporary
/// directory, on a Unix socket only (with a hot standby streaming from it), which ``stop()``
/// stops and removes.
struct ThrowawayPostgresServer: Sendable {
    /// The cluster's directory (`OBJECTLOG_TEST_POSTGRES_DIR`).
    let directory: String
    /// Its connection URL (`OBJECTLOG_TEST_POSTGRES_URL`), which holds no password.
    let url: String
    private let script: URL

    /// Starts a server with `tools/postgres-test-server start`.
    ///
    /// - Throws: If the script cannot be found (run from the package's directory, or set
    ///   `OBJECTLOG_TEST_POSTGRES_URL`) or fails; its own errors go to standard error.
    static func start() throws -> ThrowawayPostgresServer {
        let script = try locateScript()
        let process = Process()
        process.executableURL = script
        process.arguments = ["start"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(
            decoding: pipe.fileHandleForReading.readDataToEndOfFile(),
            as: UTF8.self
        )
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchmarkFailure(
                "\(script.path) could not start a server (exit \(process.terminationStatus))"
            )
        }
        // Its output is shell: `export NAME='value'`, one a line.
        var values: [String: String] = [:]
        for line in output.split(separator: "\n") where line.hasPrefix("export ") {
            let assignment = line.dropFirst("export ".count)
            guard let equals = assignment.firstIndex(of: "=") else { continue }
            values[String(assignment[..<equals])] = String(
                assignment[assignment.index(after: equals)...]
            )
            .trimmingCharacters(in: CharacterSet(charactersIn: "'"))
        }
        guard let directory = values["OBJECTLOG_TEST_POSTGRES_DIR"],
            let url = values["OBJECTLOG_TEST_POSTGRES_URL"]
        else {
            throw BenchmarkFailure("\(script.path) started no server that it named")
        }
        return ThrowawayPostgresServer(directory: directory, url: url, script: script)
    }

    /// Stops the server and removes its directory (`tools/postgres-test-server stop DIR`).
    func stop() {
        let process = Process()
        process.executableURL = script
        process.arguments = ["stop", directory]
        do {
            try process.run()
            process.waitUntilExit()
        } catch {
            print("warning: could not stop the PostgreSQL server in \(directory): \(error)")
        }
    }

    /// Stops the server when the process is interrupted or terminated (SIGINT, SIGTERM, SIGHUP),
    /// then exits with 128 + the signal's number; keep the sources until the server is stopped.
    func stopOnSignals() -> [any DispatchSourceSignal] {
        [SIGINT, SIGTERM, SIGHUP].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                print("\ninterrupted: stopping the PostgreSQL server in \(directory)")
                stop()
                exit(128 + number)
            }
            source.resume()
            return source
        }
    }

    /// `tools/postgres-test-server` in the current directory, or in the package that holds
    /// this executable (`.build/release/objectlog-bench`).
    private static func locateScript() throws -> URL {
        let relative = "tools/postgres-test-server"
        var candidates = [URL(fileURLWithPath: FileManager.default.currentDirectoryPath)]
        var directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent()
        while directory.path != "/" {
            candidates.append(directory)
            directory.deleteLastPathComponent()
        }
        for candidate in candidates {
            let script = candidate.appendingPathComponent(relative)
            if FileManager.default.isExecutableFile(atPath: script.path) { return script }
        }
        throw BenchmarkFailure(
            "cannot find \(relative): run from the package's directory, or set OBJECTLOG_TEST_POSTGRES_URL"
        )
    }
}
