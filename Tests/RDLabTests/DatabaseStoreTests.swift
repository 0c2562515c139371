import Foundation
import ObjectLogPostgreSQL
import StoreTestSupport
import TestSupport
import Testing
import Thumbnails

/// `rdlab … --store URI` against a fresh database of the test server, and what the lab keeps
/// there: settings in the metadata, thumbnails and snapshot states as external data.
@Suite("rdlab --store postgresql://…", .enabled(if: TestServer.runs, TestServer.skipReason))
struct DatabaseStoreTests {
    /// Runs `rdlab` with `--store url` appended.
    private static func rdlab(_ arguments: [String], _ url: String) throws -> RDLabProcess.Result {
        try RDLabProcess.run(arguments + ["--store", url])
    }

    /// Runs `rdlab` with `--store url` and records an issue unless it exits 0.
    @discardableResult
    private static func succeed(
        _ arguments: [String],
        _ url: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> RDLabProcess.Result {
        let result = try rdlab(arguments, url)
        #expect(
            result.exitCode == 0,
            "rdlab \(arguments.joined(separator: " ")): \(result.standardError)",
            sourceLocation: sourceLocation
        )
        return result
    }

    private static func json(_ arguments: [String], _ url: String) throws -> Any {
        let result = try succeed(arguments + ["--json"], url)
        return try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8))
    }

    private static func names(_ url: String) throws -> [String] {
        (try json(["list"], url) as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
    }

    @Test("run, list, show, edit, resume, rename, settings, browse and delete on a database")
    func commands() throws {
        let url = try TestServer.freshDatabase()
        let target = try #require(ConnectionTarget(url)).description
        let directory = TemporaryDirectory()

        let none = try Self.rdlab(["list"], url)
        #expect(none.exitCode == 66)
        #expect(none.standardError.hasPrefix("error: no store in the database at \(target); "))

        let run = try Self.succeed(
            [
                "run", "--model", "gray-scott", "--preset", "Spots", "--width", "24", "--height",
                "16", "--steps", "20", "--save", "first",
            ],
            url
        )
        #expect(run.lines.last == "saved 'first' at step 20 in \(target)")
        try Self.succeed(
            [
                "run", "--model", "fitzhugh-nagumo", "--size", "16", "--steps", "10", "--save",
                "second",
            ],
            url
        )
        let taken = try Self.rdlab(
            ["run", "--model", "gray-scott", "--size", "16", "--steps", "10", "--save", "first"],
            url
        )
        #expect(taken.exitCode == 65)
        #expect(taken.standardOutput.isEmpty)
        #expect(try Self.names(url) == ["autosave", "first", "second"])

        let shown = try Self.json(["show", "first"], url) as? [String: Any] ?? [:]
        #expect(shown["width"] as? Int == 24)
        let snapshots = shown["snapshots"] as? [[String: Any]] ?? []
        #expect(snapshots.first?["stateBytes"] as? Int == 2 * 24 * 16)
        #expect((snapshots.first?["thumbnailBytes"] as? Int ?? 0) > 1024)
        let png = directory.file("first.png")
        try Self.succeed(["show", "first", "--png", png], url)
        let picture = try Image(pngBytes: [UInt8](try Data(contentsOf: URL(fileURLWithPath: png))))
        #expect(picture.width == 24 && picture.height == 16)

        try Self.succeed(["edit", "first", "--notes", "spots\nin rows", "--tag", "nice"], url)
        #expect((try Self.json(["list", "--tag", "nice"], url) as? [Any])?.count == 1)
        try Self.succeed(["resume", "first", "--steps", "5"], url)
        #expect((try Self.json(["show", "first"], url) as? [String: Any])?["steps"] as? Int == 25)

        try Self.succeed(["settings", "set", "author", "Ada"], url)
        #expect(try Self.succeed(["settings", "get", "author"], url).lines == ["Ada"])
        let settings = try Self.succeed(["settings"], url).lines
        #expect(settings.contains("last-opened = first"))
        // Settings are the store's metadata.
        let store = try PostgresStore.openExisting(url: url)
        let metadata = try store.readMetadata()
        try store.close()
        #expect(metadata["rdlab.author"] == .string("Ada"))
        #expect(metadata["rdlab.lastOpened"] == .string("first"))

        let html = directory.file("gallery.html")
        let browse = try Self.succeed(
            ["browse", "--html", html, "--sheet", directory.file("sheet.png")],
            url
        )
        #expect(browse.lines.contains("wrote \(html)"))
        let page = try String(contentsOfFile: html, encoding: .utf8)
        #expect(page.contains(target))
        #expect(page.components(separatedBy: "data:image/png;base64,").count > 3)

        try Self.succeed(["rename", "second", "third"], url)
        let deleted = try Self.succeed(["delete", "third"], url)
        #expect(deleted.lines == ["deleted 'third' and its 1 snapshot"])
        #expect(try Self.names(url) == ["autosave", "first"])
    }

    @Test("thumbnails and states are the database's external data; a round trip keeps them")
    func externalDataRoundTrip() throws {
        let directory = TemporaryDirectory()
        let file = directory.file("lab.olog")
        for (name, steps) in [("one", "10"), ("two", "20")] {
            let run = try RDLabProcess.run([
                "run", "--model", "gray-scott", "--size", "40", "--steps", steps, "--save", name,
                "--store", file,
            ])
            #expect(run.exitCode == 0, "\(run.standardError)")
        }
        let set = try RDLabProcess.run(["settings", "set", "author", "Grace", "--store", file])
        #expect(set.exitCode == 0)
        let url = try TestServer.freshDatabase()
        let export = try RDLabProcess.runObjectLog(["export", file, url])
        #expect(export.exitCode == 0, "\(export.standardError)")

        // The same lab, read from either store.
        for command in [["list", "--json"], ["show", "one", "--json"], ["settings"]] {
            let fromFile = try RDLabProcess.run(command + ["--store", file])
            let fromDatabase = try RDLabProcess.run(command + ["--store", url])
            #expect(fromDatabase.exitCode == 0, "\(fromDatabase.standardError)")
            #expect(fromDatabase.standardOutput == fromFile.standardOutput, "\(command)")
        }
        // A thumbnail (a few KB, past the lab's 1 KiB) is external data, read back whole.
        let dump = try RDLabProcess.runObjectLog(
            ["dump", url, "--entity", "Configuration", "--full-blobs"]
        )
        #expect(dump.exitCode == 0, "\(dump.standardError)")
        let first = try JSONSerialization.jsonObject(with: Data(dump.lines[0].utf8))
        let thumbnail =
            ((first as? [String: Any])?["attributes"] as? [String: Any])?["thumbnail"]
            as? [String: Any] ?? [:]
        let bytes = Data(base64Encoded: thumbnail["base64"] as? String ?? "") ?? Data()
        #expect(bytes.count == thumbnail["length"] as? Int)
        #expect(bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]))

        // Saved there, imported into a file: everything, settings included, comes back.
        try Self.succeed(
            ["run", "--model", "gray-scott", "--size", "16", "--steps", "5", "--save", "three"],
            url
        )
        let back = directory.file("back.olog")
        let imported = try RDLabProcess.runObjectLog(["import", url, back])
        #expect(imported.exitCode == 0, "\(imported.standardError)")
        for command in [["list", "--json"], ["show", "three", "--json"], ["settings"]] {
            let fromDatabase = try RDLabProcess.run(command + ["--store", url])
            let fromFile = try RDLabProcess.run(command + ["--store", back])
            #expect(fromFile.exitCode == 0, "\(fromFile.standardError)")
            #expect(fromFile.standardOutput == fromDatabase.standardOutput, "\(command)")
        }
        let verify = try RDLabProcess.runObjectLog(["verify", back])
        #expect(verify.exitCode == 0, "\(verify.standardOutput)")
    }

    @Test("demo --store URI replaces only a store an earlier demo made")
    func demo() throws {
        let directory = TemporaryDirectory()
        let url = try TestServer.freshDatabase()
        let arguments = [
            "demo", "--size", "8", "--steps", "2", "--html", directory.file("g.html"), "--sheet",
            directory.file("s.png"), "--overwrite",
        ]
        try Self.succeed(arguments, url)
        try Self.succeed(arguments, url)
        #expect(try Self.names(url).count == 8)

        let lab = try TestServer.freshDatabase()
        try Self.succeed(["run", "--model", "gray-scott", "--size", "8", "--steps", "1"], lab)
        let refused = try Self.rdlab(arguments, lab)
        #expect(refused.exitCode == 73)
        #expect(refused.standardError.contains("was not made by 'rdlab demo'"))
        #expect(try Self.names(lab) == ["autosave"])
    }

    @Test("history, revert, list --deleted and undelete work on a database, external data too")
    func history() throws {
        let url = try TestServer.freshDatabase()
        // 128 × 128 states are over the external-storage threshold: a database row holds them
        // as external data, which the history must keep once the snapshot is deleted.
        try Self.succeed(
            ["run", "--model", "gray-scott", "--size", "128", "--steps", "1", "--save", "a"],
            url
        )
        try Self.succeed(["edit", "a", "--tag", "x"], url)
        let shown = try Self.rdlab(["history", "a"], url)
        #expect(shown.exitCode == 0, "\(shown.standardError)")
        #expect(shown.standardOutput.contains("tags [] → [x]"))
        let first = try #require(
            shown.standardOutput.split(separator: "\n").first?.split(separator: " ").first
        )
        try Self.succeed(["revert", "a", "--to", String(first.dropFirst())], url)
        let before = try Self.rdlab(["show", "a"], url).standardOutput
        #expect(before.contains("tags:        (none)"))

        try Self.succeed(["delete", "a"], url)
        let deleted = try Self.rdlab(["list", "--deleted"], url)
        #expect(
            deleted.standardOutput.split(separator: "\n").dropFirst().map {
                $0.split(separator: " ").first
            } == ["a"]
        )
        try Self.succeed(["undelete", "a"], url)
        let after = try Self.rdlab(["show", "a"], url).standardOutput
        #expect(try Self.names(url).sorted() == ["a", "autosave"])
        // The restored configuration is the deleted one, its snapshot's state included.
        #expect(
            after.split(separator: "\n").filter { !$0.hasPrefix("modified:") }
                == before.split(separator: "\n").filter { !$0.hasPrefix("modified:") }
        )
        let resumed = try Self.rdlab(["resume", "a", "--steps", "1"], url)
        #expect(resumed.exitCode == 0, "\(resumed.standardError)")
    }
}

/// `rdlab --store URI` when the server cannot be reached: no server is needed.
@Suite("rdlab --store URI: a server that cannot be reached")
struct UnreachableDatabaseTests {
    static let url = "postgresql://user:secret@/lab?host=/nonexistent"

    @Test(
        "exit 74 naming the user, host and database, never the password, before any work",
        arguments: [
            ["list"], ["show", "x"], ["settings"], ["settings", "set", "author", "A"],
            ["run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--save", "x"],
            ["delete", "x"], ["browse"], ["demo", "--size", "8", "--steps", "1"],
        ]
    )
    func unreachable(_ arguments: [String]) throws {
        let directory = TemporaryDirectory()
        let result = try RDLabProcess.run(
            arguments + ["--store", Self.url],
            directory: directory.path
        )
        #expect(result.exitCode == 74, "\(result.standardError)")
        #expect(result.standardOutput.isEmpty)
        #expect(result.errorLines.count == 1)
        #expect(result.standardError.hasPrefix("error: cannot connect to user@/nonexistent/lab: "))
        #expect(!result.standardError.contains("secret"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }
}
