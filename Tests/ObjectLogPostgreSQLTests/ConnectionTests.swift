import Foundation
import ObjectLogPostgreSQL
import StoreTestSupport
import Testing

@Suite("PostgreSQL connection strings")
struct ConnectionStringTests {
    @Test("what is shown of a connection string never holds its password")
    func targetHidesPassword() throws {
        let uri = try #require(
            ConnectionTarget("postgresql://ada:s3cret-pass@db.example:5433/lab?sslmode=require")
        )
        #expect(uri == ConnectionTarget("host=db.example port=5433 dbname=lab user=ada"))
        #expect(uri.description == "ada@db.example:5433/lab")
        let pairs = try #require(ConnectionTarget("user=ada password=s3cret-pass dbname=lab"))
        #expect(!pairs.description.contains("s3cret"))
        let socket = try #require(ConnectionTarget("postgresql://ada@/lab?host=/run/pg"))
        #expect(socket.host == "/run/pg" && socket.database == "lab")
        #expect(ConnectionTarget("not a connection string") == nil)
    }

    @Test(
        "a server that cannot be reached is one error naming the socket and the database, never the password"
    )
    func unreachableServer() throws {
        let error = #expect(throws: PostgresError.self) {
            _ = try PostgresConnection(
                url: "postgresql://ada:s3cret-pass@/nodb?host=/nonexistent-objectlog-socket"
            )
        }
        #expect(error?.code == .connectionFailed)
        let message = try #require(error?.message)
        #expect(message.hasPrefix("cannot connect to ada@/nonexistent-objectlog-socket/nodb: "))
        #expect(!message.contains("s3cret"))
        #expect(!message.contains("\n"))

        let invalid = #expect(throws: PostgresError.self) {
            _ = try PostgresConnection(url: "postgresql://[bad")
        }
        #expect(invalid?.code == .invalidConnectionString)
    }
}

@Suite("PostgreSQL statements", .enabled(if: TestServer.runs, TestServer.skipReason))
struct StatementTests {
    /// Strings that would change a statement if they were spliced into its text.
    static let hostile = [
        "'; DROP TABLE notes; --", "Robert'); DELETE FROM notes WHERE ('1'='1", "\\'", "$1",
        "\"quoted\"", "back\\slash", "line\nbreak", "tab\tand 'quote'", "😀 ünïcödé", "",
        "E'\\x00'", "%s %d", "/* comment */", "$$ dollar $$", "NULL",
    ]

    @Test("values travel as parameters: hostile strings come back unchanged and change nothing")
    func hostileStrings() throws {
        let connection = try TestServer.connect()
        try connection.execute("CREATE TEMPORARY TABLE notes (id integer PRIMARY KEY, body text)")
        for (index, text) in Self.hostile.enumerated() {
            let inserted = try connection.execute(
                "INSERT INTO notes (id, body) VALUES ($1, $2)",
                [String(index), text]
            )
            #expect(inserted.affectedRows == 1)
        }
        let rows = try connection.execute("SELECT body FROM notes ORDER BY id").rows
        #expect(rows.map { $0[0] } == Self.hostile.map { Optional($0) })
        for text in Self.hostile {
            let found = try connection.execute("SELECT count(*) FROM notes WHERE body = $1", [text])
            #expect(found.rows == [["1"]], "\(text)")
        }
        let null = try connection.execute("SELECT $1::text IS NULL", [nil])
        #expect(null.rows == [["t"]])
    }

    @Test("a NUL character in a parameter is refused before anything is sent")
    func nulRefused() throws {
        let connection = try TestServer.connect()
        let error = #expect(throws: PostgresError.self) {
            try connection.execute("SELECT $1::text", ["before\u{0}after"])
        }
        #expect(error?.code == .invalidParameter)
        #expect(try connection.execute("SELECT 1").rows == [["1"]])
    }

    @Test("a unique violation comes back with its SQLSTATE, constraint and detail")
    func uniqueViolation() throws {
        let connection = try TestServer.connect()
        try connection.execute(
            "CREATE TEMPORARY TABLE runs (name text CONSTRAINT runs_name_unique UNIQUE)"
        )
        try connection.execute("INSERT INTO runs VALUES ($1)", ["spots"])
        let error = #expect(throws: PostgresError.self) {
            try connection.execute("INSERT INTO runs VALUES ($1)", ["spots"])
        }
        #expect(error?.code == .statementFailed)
        #expect(error?.isUniqueViolation == true)
        #expect(error?.constraint == "runs_name_unique")
        #expect(error?.detail?.contains("spots") == true)
    }

    @Test("a connection the server ends reports it lost; a closed one says so")
    func lostConnection() throws {
        let connection = try TestServer.connect()
        #expect(connection.serverVersion >= 150_000)
        _ = try? connection.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        let lost = #expect(throws: PostgresError.self) { try connection.execute("SELECT 1") }
        #expect(lost?.code == .connectionLost)
        connection.close()
        let closed = #expect(throws: PostgresError.self) { try connection.execute("SELECT 1") }
        #expect(closed?.code == .connectionLost)
    }
}

@Suite("PostgreSQL hot standby", .enabled(if: TestServer.standbyRuns, TestServer.skipReason))
struct StandbyTests {
    @Test(
        "the standby sees what the primary wrote once replicated, and refuses a write, naming itself"
    )
    func standby() throws {
        let primary = try TestServer.connect()
        let standby = try TestServer.connectToStandby()
        #expect(try standby.execute("SELECT pg_is_in_recovery()").rows == [["t"]])
        let table = "standby_check_\(UInt32.random(in: 0...UInt32.max))"
        try primary.execute("CREATE TABLE \(table) (note text)")
        defer { _ = try? primary.execute("DROP TABLE \(table)") }
        try primary.execute("INSERT INTO \(table) VALUES ($1)", ["replicated"])
        var seen: [[String?]] = []
        for _ in 0..<200 {
            seen = (try? standby.execute("SELECT note FROM \(table)").rows) ?? []
            if !seen.isEmpty { break }
            usleep(50_000)
        }
        #expect(seen == [["replicated"]])
        let refused = #expect(throws: PostgresError.self) {
            try standby.execute("INSERT INTO \(table) VALUES ($1)", ["from the standby"])
        }
        #expect(refused?.isReadOnlyServer == true)
        #expect(
            refused?.message.hasPrefix("the server at \(standby.target) accepts no writes") == true
        )
        #expect(try primary.execute("SELECT count(*) FROM \(table)").rows == [["1"]])
    }
}
