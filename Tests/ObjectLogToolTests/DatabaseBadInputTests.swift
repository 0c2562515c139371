import Foundation
import ObjectLogStore
import TestSupport
import Testing

/// Bad input to the commands that take a database's URI.
///
/// Each gets one `error:` line, its exit code, and never the password. None reaches a server.
@Suite("export, import, info and dump: bad input, and never a password")
struct DatabaseBadInputTests {
    /// A URI with a password whose server does not exist.
    static let unreachable = "postgresql://user:secret@/db?host=/nonexistent"

    /// Runs `objectlog` with `arguments`, `SOURCE` replaced by a store file's path, in a new
    /// directory; the directory is returned with the run.
    private static func run(
        _ arguments: [String]
    ) throws -> (run: ToolRun, directory: TemporaryDirectory) {
        let directory = TemporaryDirectory()
        let source = directory.file("source.olog")
        _ = try makeFixtureStore(at: source)
        let run = try runTool(
            arguments: arguments.map { $0 == "SOURCE" ? source : $0 },
            in: directory
        )
        return (run, directory)
    }

    private static func expectOneLine(
        _ run: ToolRun,
        status: Int32,
        prefix: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(run.status == status, "\(run.standardError)", sourceLocation: sourceLocation)
        #expect(run.standardOutput.isEmpty, sourceLocation: sourceLocation)
        #expect(
            run.standardError.hasPrefix("error: " + prefix),
            "\(run.standardError)",
            sourceLocation: sourceLocation
        )
        #expect(
            run.standardError.filter { $0 == "\n" }.count == 1,
            sourceLocation: sourceLocation
        )
        #expect(!run.standardError.contains("secret"), sourceLocation: sourceLocation)
    }

    @Test(
        "A server that cannot be reached: exit 74 naming the user, host and database, no password",
        arguments: [
            ["info", unreachable], ["info", unreachable, "--json"], ["dump", unreachable],
            ["export", "SOURCE", unreachable], ["import", unreachable, "new.olog"],
            ["info", "postgresql:///db?host=/nonexistent&user=user&password=secret"],
            ["dump", "postgres://user:secret@/db?host=/nonexistent&sslmode=disable"],
        ]
    )
    func unreachableServer(_ arguments: [String]) throws {
        let (run, directory) = try Self.run(arguments)
        Self.expectOneLine(
            run,
            status: 74,
            prefix: "cannot connect to user@/nonexistent/db: connection to server on socket "
        )
        #expect(!FileManager.default.fileExists(atPath: directory.file("new.olog")))
        #expect(try fileNames(in: directory).allSatisfy { $0.hasPrefix("source.olog") })
    }

    @Test("A URI libpq cannot read is a usage error, and shows no password")
    func unreadableURI() throws {
        let (run, _) = try Self.run(["info", "postgresql://user:secret@/db?host=/x&nonsense=1"])
        Self.expectOneLine(run, status: 64, prefix: "not a PostgreSQL connection string")
    }

    @Test("export's source: missing 66, not a store 65, damaged 65; the server is never asked")
    func exportSource() throws {
        let missing = try Self.run(["export", "missing.olog", Self.unreachable]).run
        Self.expectOneLine(missing, status: 66, prefix: "")
        #expect(missing.standardError.contains("missing.olog"))

        let directory = TemporaryDirectory()
        let text = directory.file("text.olog")
        try Data("not a store, just text".utf8).write(to: URL(fileURLWithPath: text))
        Self.expectOneLine(
            try runTool("export", text, Self.unreachable),
            status: 65,
            prefix: text
        )

        let damaged = directory.file("damaged.olog")
        _ = try makeFixtureStore(at: damaged)
        let offset = try corruptFirstRecord(of: damaged)
        let run = try runTool("export", damaged, Self.unreachable)
        Self.expectOneLine(run, status: 65, prefix: damaged)
        #expect(run.standardError.contains("offset \(offset)"))
    }

    @Test(
        "Arguments in the wrong places are usage errors that show no password",
        arguments: [
            (["export", "SOURCE", "copy.olog"], "the destination must be a postgresql:// URI"),
            (["import", "SOURCE", "copy.olog"], "the source must be a postgresql:// URI"),
            (["import", unreachable, unreachable], "the destination must be a file path"),
            (["import", unreachable, ""], "the destination path is empty"),
            (["export", "SOURCE"], "missing argument <uri>"),
            (["history", unreachable], "user@/nonexistent/db is a PostgreSQL database, and"),
            (["verify", unreachable], "user@/nonexistent/db is a PostgreSQL database, and"),
            (["compact", unreachable], "user@/nonexistent/db is a PostgreSQL database, and"),
            (["meta", unreachable], "user@/nonexistent/db is a PostgreSQL database, and"),
            (
                ["backup", unreachable, "copy.olog"],
                "user@/nonexistent/db is a PostgreSQL database"
            ),
            (["info", "SOURCE", unreachable], "unexpected argument 'postgresql://user:***@/db?"),
        ]
    )
    func misplaced(_ arguments: [String], _ message: String) throws {
        let (run, directory) = try Self.run(arguments)
        Self.expectOneLine(run, status: 64, prefix: message)
        #expect(!FileManager.default.fileExists(atPath: directory.file("copy.olog")))
    }
}
