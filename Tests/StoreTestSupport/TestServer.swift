import Foundation
import ObjectLogPostgreSQL
import Testing

/// The PostgreSQL server the tests use.
///
/// `OBJECTLOG_TEST_POSTGRES_URL` names one (`.ci/run` starts one and sets it). Without it, the
/// tests start their own with `tools/postgres-test-server` when PostgreSQL is installed, and
/// stop it when the test process exits. When no server can be had, the tests that need one
/// are skipped, with the reason; with `OBJECTLOG_REQUIRE_POSTGRES=1` (as `.ci/run` sets) they
/// run, and fail.
public enum TestServer {
    public static let isRequired =
        ProcessInfo.processInfo.environment["OBJECTLOG_REQUIRE_POSTGRES"] == "1"

    /// The server's URL and its hot standby's, and why there is none when there is none.
    public static let found: (url: String?, standby: String?, problem: String) = {
        let environment = ProcessInfo.processInfo.environment
        if let url = environment["OBJECTLOG_TEST_POSTGRES_URL"] {
            return (url, environment["OBJECTLOG_TEST_POSTGRES_STANDBY_URL"], "")
        }
        return startOwnServer()
    }()

    public static var url: String? { found.url }

    /// Whether the tests that need a hot standby run.
    public static var standbyRuns: Bool { runs && (found.standby != nil || isRequired) }

    /// A new connection to the test server's hot standby.
    public static func connectToStandby() throws -> PostgresConnection {
        guard let standby = found.standby else {
            throw PostgresError(.connectionFailed, "no standby: \(found.problem)")
        }
        return try PostgresConnection(url: standby)
    }

    /// Whether the tests that need a server run.
    public static let runs: Bool = {
        if isRequired { return true }
        guard let url else { return false }
        return (try? PostgresConnection(url: url)) != nil
    }()

    /// Why they are skipped when they are.
    public static var skipReason: Comment {
        Comment(rawValue: "no PostgreSQL server: \(found.problem)")
    }

    /// A new connection to the test server.
    public static func connect() throws -> PostgresConnection {
        guard let url else { throw PostgresError(.connectionFailed, found.problem) }
        return try PostgresConnection(url: url)
    }

    /// The URL of a new, empty database on the test server: each test gets its own.
    public static func freshDatabase() throws -> String {
        guard let url else { throw PostgresError(.connectionFailed, found.problem) }
        let name =
            "objectlog_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try connect().execute("CREATE DATABASE \(name)")
        return url + (url.contains("?") ? "&" : "?") + "dbname=" + name
    }

    /// The URL of the database of `url` (one of ``freshDatabase()``'s) on the hot standby.
    public static func standbyURL(of url: String) -> String? {
        guard let standby = found.standby,
            let name = url.components(separatedBy: "dbname=").last, url.contains("dbname=")
        else { return nil }
        return standby + (standby.contains("?") ? "&" : "?") + "dbname=" + name
    }

    /// Starts a throwaway server with the repository's script, stopped when the process exits.
    private static func startOwnServer() -> (url: String?, standby: String?, problem: String) {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("tools/postgres-test-server").path
        // Its output goes to files, not pipes: the server it starts outlives it, and a pipe it
        // kept open would never reach its end.
        let outputPath = NSTemporaryDirectory() + "objectlog-postgres-start-\(getpid()).out"
        let errorPath = outputPath + ".err"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
        defer {
            try? FileManager.default.removeItem(atPath: outputPath)
            try? FileManager.default.removeItem(atPath: errorPath)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: script)
        process.arguments = ["start"]
        process.standardOutput = FileHandle(forWritingAtPath: outputPath)
        process.standardError = FileHandle(forWritingAtPath: errorPath)
        do {
            try process.run()
        } catch {
            return (nil, nil, "cannot run \(script): \(error)")
        }
        process.waitUntilExit()
        let printed = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let failure = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
        var values: [String: String] = [:]
        for line in printed.split(separator: "\n") {
            // `export NAME='value'`
            guard line.hasPrefix("export "), let equals = line.firstIndex(of: "=") else { continue }
            let name = String(line[line.index(line.startIndex, offsetBy: 7)..<equals])
            values[name] = String(line[line.index(after: equals)...]).trimmingCharacters(
                in: CharacterSet(charactersIn: "'")
            )
        }
        guard process.terminationStatus == 0, let url = values["OBJECTLOG_TEST_POSTGRES_URL"],
            let directory = values["OBJECTLOG_TEST_POSTGRES_DIR"]
        else {
            let reason = failure.split(separator: "\n").first.map(String.init) ?? "no output"
            return (nil, nil, "tools/postgres-test-server could not start one (\(reason))")
        }
        OwnServer.directory = directory
        OwnServer.script = script
        atexit {
            guard let directory = OwnServer.directory, let script = OwnServer.script else { return }
            let stop = Process()
            stop.executableURL = URL(fileURLWithPath: script)
            stop.arguments = ["stop", directory]
            try? stop.run()
            stop.waitUntilExit()
        }
        return (url, values["OBJECTLOG_TEST_POSTGRES_STANDBY_URL"], "")
    }
}

/// The server the tests started themselves, stopped at exit.
private enum OwnServer {
    // Written once, before any test runs, and read at exit.
    nonisolated(unsafe) static var directory: String?
    nonisolated(unsafe) static var script: String?
}
