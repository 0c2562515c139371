import Foundation
import StoreTestSupport
import Testing

@testable import ObjectLogPostgreSQL

@Suite("Binary COPY rows")
struct BinaryCopyRowTests {
    static let header: [UInt8] =
        Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00] + [0, 0, 0, 0] + [0, 0, 0, 0]

    static func field(_ bytes: [UInt8]?) -> [UInt8] {
        guard let bytes else { return [0xFF, 0xFF, 0xFF, 0xFF] }
        return withUnsafeBytes(of: Int32(bytes.count).bigEndian, Array.init) + bytes
    }

    static func row(_ fields: [[UInt8]?]) -> [UInt8] {
        withUnsafeBytes(of: Int16(fields.count).bigEndian, Array.init) + fields.flatMap(field)
    }

    static let trailer: [UInt8] = [0xFF, 0xFF]

    /// The values of each message's row, nil for the trailer.
    static func parse(_ messages: [[UInt8]]) throws -> [[[UInt8]?]?] {
        var parser = BinaryCopyRow.Parser()
        return try messages.map { message in
            try message.withUnsafeBytes { bytes in
                try parser.row(in: bytes).map { row in
                    (0..<row.columnCount).map { row.value($0).map(Array.init) }
                }
            }
        }
    }

    @Test("the header, rows with values and NULLs, and the trailer")
    func rows() throws {
        let first: [[UInt8]?] = [[0, 0, 0, 0, 0, 0, 0, 7], nil, Array("ab".utf8), []]
        let second: [[UInt8]?] = [[1], [2, 3], nil, nil]
        let parsed = try Self.parse([
            Self.header + Self.row(first), Self.row(second), Self.trailer,
        ])
        #expect(parsed.count == 3)
        #expect(parsed[0] == first)
        #expect(parsed[1] == second)
        #expect(parsed[2] == nil)
    }

    @Test("a header extension is skipped")
    func headerExtension() throws {
        var header = Array(Self.header.prefix(15)) + [0, 0, 0, 3] + [9, 9, 9]
        header += Self.row([[5]])
        #expect(try Self.parse([header, Self.trailer]) == [[[5]], nil])
    }

    /// Messages that are not binary COPY's rows, each in its own way.
    static let malformedMessages: [[[UInt8]]] = {
        let (header, trailer) = (Self.header, Self.trailer)
        let (one, two) = (Self.row([[1]]), Self.row([[2]]))
        let oids = Array(header.prefix(11)) + [0, 1, 0, 0, 0, 0, 0, 0]
        return [
            [one],  // no header
            [Array(header.prefix(12))],  // a header cut short
            [header + Self.row([[1, 2]]).dropLast()],  // a field cut short
            [header + one + two],  // two rows in one message
            [header + [0xFF, 0xFE]],  // a negative field count
            [header + one, trailer, two],  // a row after the trailer
            [header + one, trailer + [0]],  // a trailer with more after it
            [oids + one],  // rows with OIDs
        ]
    }()

    @Test(
        "malformed messages are refused with an error",
        arguments: BinaryCopyRowTests.malformedMessages
    )
    func malformed(messages: [[UInt8]]) {
        let error = #expect(throws: PostgresError.self) { try Self.parse(messages) }
        #expect(error?.code == .statementFailed)
        #expect(error?.message.contains("malformed") == true)
    }
}

@Suite("PostgreSQL COPY out", .enabled(if: TestServer.runs, TestServer.skipReason))
struct CopyOutTests {
    @Test("rows come back as a result would give them, hostile strings and NULLs included")
    func sameAsResult() throws {
        let connection = try TestServer.connect()
        try connection.execute("CREATE TEMPORARY TABLE notes (id bigint, body text, score float8)")
        let bodies: [String?] = StatementTests.hostile + [nil]
        for (index, body) in bodies.enumerated() {
            try connection.execute(
                "INSERT INTO notes VALUES ($1, $2, $3)",
                [String(index), body, index % 3 == 0 ? nil : "\(Double(index) / 4)"]
            )
        }
        var copied: [[String?]] = []
        let count = try connection.copyOut(
            "COPY (SELECT id, body, score FROM notes ORDER BY id) TO STDOUT (FORMAT binary)"
        ) { row in
            copied.append([
                row.int64(0).map(String.init),
                row.value(1).map { String(decoding: $0, as: UTF8.self) },
                row.value(2).map {
                    String(Double(bitPattern: UInt64(bigEndian: $0.loadUnaligned(as: UInt64.self))))
                },
            ])
        }
        #expect(count == bodies.count)
        let expected = try connection.execute(
            "SELECT id::text, body, score::text FROM notes ORDER BY notes.id"
        ).rows.map { [$0[0], $0[1], $0[2].map { String(Double($0)!) }] }
        #expect(copied == expected)
        #expect(copied.map { $0[1] } == bodies)
    }

    @Test("a copy the server stops midway throws its error; the connection goes on")
    func failsMidway() throws {
        let connection = try TestServer.connect()
        var seen = 0
        let error = #expect(throws: PostgresError.self) {
            try connection.copyOut(
                "COPY (SELECT 10 / (5 - i) FROM generate_series(1, 10) AS i) TO STDOUT "
                    + "(FORMAT binary)"
            ) { _ in seen += 1 }
        }
        #expect(error?.code == .statementFailed)
        #expect(error?.sqlState == "22012")  // division_by_zero
        #expect(seen <= 4)
        #expect(try connection.execute("SELECT 1").rows == [["1"]])
    }

    @Test("an error thrown while reading rows ends the copy; the connection goes on")
    func readerFails() throws {
        let connection = try TestServer.connect()
        var seen = 0
        let error = #expect(throws: PostgresError.self) {
            try connection.copyOut(
                "COPY (SELECT i FROM generate_series(1, 1000) AS i) TO STDOUT (FORMAT binary)"
            ) { _ throws(PostgresError) in
                seen += 1
                if seen == 3 { throw PostgresError(.invalidParameter, "stop here") }
            }
        }
        #expect(error?.code == .invalidParameter)
        #expect(seen == 3)
        #expect(try connection.execute("SELECT 2").rows == [["2"]])
    }
}
