import CSQLite

/// A value SQLite stores or returns: the four storage classes the differential test uses.
enum SQLValue: Hashable, CustomStringConvertible {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)

    init(_ value: Int) { self = .integer(Int64(value)) }
    init(_ value: Double) { self = .real(value) }
    init(_ value: String) { self = .text(value) }
    init(_ value: Bool) { self = .integer(value ? 1 : 0) }
    init(_ value: String?) { self = value.map(SQLValue.text) ?? .null }

    var description: String {
        switch self {
        case .null: "NULL"
        case .integer(let value): "\(value)"
        case .real(let value): "\(value)"
        case .text(let value): "'\(value)'"
        }
    }

    /// The value as an integer; a test that reads a column it declared as an integer traps
    /// here only if the reference itself is wrong.
    var integer: Int64 {
        guard case .integer(let value) = self else { fatalError("not an integer: \(self)") }
        return value
    }
}

/// A statement with its parameters, kept so that it can be run again (the unsaved changes of
/// the differential test are replayed in a transaction that is rolled back).
struct SQLStatement: CustomStringConvertible {
    var sql: String
    var parameters: [SQLValue] = []

    var description: String {
        parameters.isEmpty ? sql : "\(sql) \(parameters)"
    }
}

/// An in-memory SQLite database through the C API: the reference the differential test
/// compares ObjectLog with.
///
/// Failures trap rather than throw: every statement is written by the test itself, so a
/// failure is a bug in the test, and its message names the statement.
final class SQLiteReference {
    private var database: OpaquePointer?
    /// Prepared statements by text: the test runs a few hundred distinct statements thousands
    /// of times.
    private var prepared: [String: OpaquePointer] = [:]

    init() {
        guard sqlite3_open(":memory:", &database) == SQLITE_OK else {
            fatalError("cannot open an in-memory SQLite database")
        }
    }

    deinit {
        for statement in prepared.values { sqlite3_finalize(statement) }
        sqlite3_close(database)
    }

    /// Runs a statement that returns no rows.
    func execute(_ statement: SQLStatement) {
        _ = query(statement)
    }

    /// Runs a statement that returns no rows.
    func execute(_ sql: String, _ parameters: [SQLValue] = []) {
        execute(SQLStatement(sql: sql, parameters: parameters))
    }

    /// Runs a statement and returns its rows.
    func query(_ sql: String, _ parameters: [SQLValue] = []) -> [[SQLValue]] {
        query(SQLStatement(sql: sql, parameters: parameters))
    }

    /// Runs a statement and returns its rows.
    func query(_ statement: SQLStatement) -> [[SQLValue]] {
        let handle = prepare(statement.sql)
        defer {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }
        for (index, parameter) in statement.parameters.enumerated() {
            let position = Int32(index + 1)
            let result: Int32
            switch parameter {
            case .null: result = sqlite3_bind_null(handle, position)
            case .integer(let value): result = sqlite3_bind_int64(handle, position, value)
            case .real(let value): result = sqlite3_bind_double(handle, position, value)
            case .text(let value):
                // SQLITE_TRANSIENT: SQLite copies the text before the call returns.
                result = sqlite3_bind_text(handle, position, value, -1, Self.transient)
            }
            guard result == SQLITE_OK else { fail("cannot bind \(parameter)", statement) }
        }
        var rows: [[SQLValue]] = []
        while true {
            switch sqlite3_step(handle) {
            case SQLITE_ROW:
                rows.append(
                    (0..<sqlite3_column_count(handle)).map { column in
                        switch sqlite3_column_type(handle, column) {
                        case SQLITE_INTEGER: .integer(sqlite3_column_int64(handle, column))
                        case SQLITE_FLOAT: .real(sqlite3_column_double(handle, column))
                        case SQLITE_TEXT:
                            .text(String(cString: sqlite3_column_text(handle, column)))
                        default: .null
                        }
                    }
                )
            case SQLITE_DONE:
                return rows
            default:
                fail("step failed", statement)
            }
        }
    }

    private func prepare(_ sql: String) -> OpaquePointer {
        if let handle = prepared[sql] { return handle }
        var handle: OpaquePointer?
        guard sqlite3_prepare_v2(database, sql, -1, &handle, nil) == SQLITE_OK, let handle else {
            fail("cannot prepare", SQLStatement(sql: sql))
        }
        prepared[sql] = handle
        return handle
    }

    private func fail(_ what: String, _ statement: SQLStatement) -> Never {
        fatalError("SQLite: \(what): \(String(cString: sqlite3_errmsg(database))) in \(statement)")
    }

    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}
