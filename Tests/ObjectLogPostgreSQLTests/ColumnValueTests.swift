import Foundation
import ObjectLog
import StoreTestSupport
import Testing

@testable import ObjectLogPostgreSQL

@Suite("PostgreSQL column values")
struct ColumnValueTests {
    /// Values of every attribute type, with the edges a text form could lose.
    static let values: [(AttributeType, [StoredValue])] = [
        (.bool, [.bool(true), .bool(false)]),
        (.int8, [.int(-128), .int(127), .int(0)]),
        (.int16, [.int(-32_768), .int(32_767)]),
        (.int32, [.int(Int64(Int32.min)), .int(Int64(Int32.max))]),
        (.int64, [.int(.min), .int(.max)]),
        (.uint8, [.uint(255)]),
        (.uint16, [.uint(65_535)]),
        (.uint32, [.uint(UInt64(UInt32.max))]),
        (.uint64, [.uint(.max), .uint(0)]),
        (
            .float,
            [
                .float(0.1), .float(-0.0), .float(.leastNonzeroMagnitude),
                .float(.greatestFiniteMagnitude),
                .float(.infinity), .float(-.infinity), .float(.nan),
            ]
        ),
        (
            .double,
            [
                .double(0.1 + 0.2), .double(.pi), .double(.leastNonzeroMagnitude),
                .double(.greatestFiniteMagnitude), .double(-1e-300), .double(.nan),
            ]
        ),
        (
            .date,
            [
                .date(Date(timeIntervalSinceReferenceDate: 123.456_789_012_345)),
                .date(Date(timeIntervalSinceReferenceDate: -978_307_200.000_001)),
            ]
        ),
        (.string, [.string(""), .string("'; DROP TABLE x; --"), .string("😀 ünï\ncödé\t\\")]),
        (.data, [.data(Data()), .data(Data(0...255))]),
        (.uuid, [.uuid(UUID())]),
        (.url, [.url("https://example.com/a?b=c&d='e'")]),
        (.codable, [.json("{\"b\": 1,  \"a\":[1, 2.50]}")]),
    ]

    /// Whether two values are the same, bit for bit for floating-point ones.
    static func same(_ a: StoredValue?, _ b: StoredValue) -> Bool {
        switch (a, b) {
        case (.float(let x)?, .float(let y)): x.bitPattern == y.bitPattern
        case (.double(let x)?, .double(let y)): x.bitPattern == y.bitPattern
        default: a == b
        }
    }

    @Test("every value's text reads back to the same value")
    func textRoundTrip() throws {
        for (type, values) in Self.values {
            for value in values {
                let text = try ColumnValue.parameter(value, type: type)
                #expect(Self.same(ColumnValue.value(text, type: type), value), "\(type) \(value)")
            }
        }
        #expect(ColumnValue.value(nil, type: .string) == .null)
        #expect(try ColumnValue.parameter(.toOne(42), type: nil) == "42")
        #expect(ColumnValue.value("42", type: nil) == .toOne(42))
        #expect(throws: PostgresError.self) { try ColumnValue.parameter(.toMany([1]), type: nil) }
    }

    @Test(
        "every value comes back from its column on the server exactly",
        .enabled(if: TestServer.runs, TestServer.skipReason)
    )
    func serverRoundTrip() throws {
        let connection = try TestServer.connect()
        for (type, values) in Self.values {
            let table = "values_\(type.rawValue)"
            try connection.execute(
                "CREATE TEMPORARY TABLE \(table) (id integer, v \(SchemaMapping.sqlType(type)))"
            )
            for (index, value) in values.enumerated() {
                try connection.execute(
                    "INSERT INTO \(table) VALUES ($1, $2)",
                    [String(index), try ColumnValue.parameter(value, type: type)]
                )
            }
            let rows = try connection.execute("SELECT v FROM \(table) ORDER BY id").rows
            #expect(rows.count == values.count)
            for (row, value) in zip(rows, values) {
                #expect(
                    Self.same(ColumnValue.value(row[0], type: type), value),
                    "\(type) \(value): \(row[0] ?? "NULL")"
                )
            }
        }
    }
}
