import Foundation
import TestSupport
import Testing

/// A temporary directory with a store path in it, and `rdlab` runs against that store.
///
/// The test process never opens the store itself: it only runs `rdlab` and `objectlog` and reads
/// the files, so no descriptor of it can leak into another test's child process.
struct LabFixture: ~Copyable {
    let directory: TemporaryDirectory
    let store: String

    init() throws {
        directory = TemporaryDirectory()
        store = directory.file("lab.olog")
    }

    func path(_ name: String) -> String { directory.file(name) }

    /// Runs `rdlab` with `--store` pointing at the fixture's store (`--store` is appended, so
    /// the command line is otherwise the test's own).
    func rdlab(_ arguments: [String]) throws -> RDLabProcess.Result {
        try RDLabProcess.run(arguments + ["--store", store])
    }

    /// Runs `rdlab` and records an issue unless it exits 0.
    @discardableResult
    func succeed(
        _ arguments: [String],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> RDLabProcess.Result {
        let result = try rdlab(arguments)
        #expect(
            result.exitCode == 0,
            "rdlab \(arguments.joined(separator: " ")): \(result.standardError)",
            sourceLocation: sourceLocation
        )
        return result
    }

    /// Runs `rdlab … --json` and parses its output.
    func json(_ arguments: [String]) throws -> Any {
        let result = try succeed(arguments + ["--json"])
        return try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8))
    }

    /// The saved configurations' names, from `rdlab list --json`.
    func names() throws -> [String] {
        let list = try json(["list"]) as? [[String: Any]] ?? []
        return list.compactMap { $0["name"] as? String }
    }

    /// The content of the store file and of its blob files: what must not change when a
    /// command fails. (The lock and index files beside it are not the store's content.)
    func contents() -> [String: Data] {
        var files: [String: Data] = [:]
        files["store"] = FileManager.default.contents(atPath: store)
        let blobs = store + "-blobs"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: blobs)) ?? [] {
            files["blob " + name] = FileManager.default.contents(atPath: blobs + "/" + name)
        }
        return files
    }

    /// The objects of `entity` in the store, from `objectlog dump`.
    func objects(_ entity: String) throws -> [[String: Any]] {
        let result = try RDLabProcess.runObjectLog(["dump", store, "--entity", entity])
        #expect(result.exitCode == 0, "\(result.standardError)")
        return try result.lines.map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:]
        }
    }

    /// Whether `objectlog verify` finds the store sound.
    func verify() throws -> Bool {
        let result = try RDLabProcess.runObjectLog(["verify", store])
        return result.exitCode == 0
    }
}

extension LabFixture {
    /// A fresh empty directory, for commands run in it.
    static func makeDirectory() -> TemporaryDirectory { TemporaryDirectory() }
}
