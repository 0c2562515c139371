import CSQLite
import Foundation

/// One row of the benchmark's entity, as both engines store it.
struct BenchRecord: Equatable {
    var id: Int64
    var name: String
    var value: Double
    var count: Int64
    var created: Date
}

/// The same rows for every engine: a 16-character name, a value uniform in [0, 1000), a count
/// and a creation date, from a seeded generator.
func makeRecords(_ count: Int, seed: UInt64 = 42) -> [BenchRecord] {
    var state = seed
    func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    let letters = Array("abcdefghijklmnopqrstuvwxyz".utf8)
    var records: [BenchRecord] = []
    records.reserveCapacity(count)
    for index in 0..<count {
        var name: [UInt8] = []
        name.reserveCapacity(16)
        for _ in 0..<16 { name.append(letters[Int(next() % 26)]) }
        records.append(
            BenchRecord(
                id: Int64(index + 1),
                name: String(decoding: name, as: UTF8.self),
                value: Double(next() >> 11) / Double(1 << 53) * 1000,
                count: Int64(next() % 1_000_000),
                created: Date(timeIntervalSince1970: 1_700_000_000 + Double(index))
            )
        )
    }
    return records
}

/// The SQLite peer, written as a careful SQLite user writes it.
///
/// It uses the C API, a connection opened with `SQLITE_OPEN_NOMUTEX` (one thread uses it, so
/// SQLite need not lock it for every call), WAL mode, `synchronous=FULL`, prepared
/// statements, and no index beyond the integer primary key.
final class SQLitePeer {
    private var database: OpaquePointer?
    let path: String

    init(path: String) {
        self.path = path
        guard
            sqlite3_open_v2(
                path,
                &database,
                SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                nil
            ) == SQLITE_OK
        else {
            fatalError("cannot open SQLite database at \(path)")
        }
        execute("PRAGMA journal_mode=WAL")
        execute("PRAGMA synchronous=FULL")
    }

    deinit { sqlite3_close_v2(database) }

    func execute(_ sql: String) {
        var error: UnsafeMutablePointer<CChar>?
        if sqlite3_exec(database, sql, nil, nil, &error) != SQLITE_OK {
            let message = error.map { String(cString: $0) } ?? "unknown"
            sqlite3_free(error)
            fatalError("SQLite: \(message) in \(sql)")
        }
    }

    private func prepare(_ sql: String) -> OpaquePointer? {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(database, sql, -1, &statement, nil) == SQLITE_OK else {
            fatalError(
                "SQLite: cannot prepare \(sql): \(String(cString: sqlite3_errmsg(database)))"
            )
        }
        return statement
    }

    func createSchema() {
        execute(
            "CREATE TABLE IF NOT EXISTS item(id INTEGER PRIMARY KEY, name TEXT NOT NULL, value REAL NOT NULL, count INTEGER NOT NULL, created REAL NOT NULL)"
        )
    }

    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    private func bind(_ statement: OpaquePointer?, _ record: BenchRecord) {
        sqlite3_bind_int64(statement, 1, record.id)
        sqlite3_bind_text(statement, 2, record.name, -1, Self.transient)
        sqlite3_bind_double(statement, 3, record.value)
        sqlite3_bind_int64(statement, 4, record.count)
        sqlite3_bind_double(statement, 5, record.created.timeIntervalSince1970)
    }

    /// Workload 1: every record in one transaction through one prepared INSERT.
    func bulkInsert(_ records: [BenchRecord]) {
        let statement = prepare(
            "INSERT INTO item(id, name, value, count, created) VALUES (?, ?, ?, ?, ?)"
        )
        defer { sqlite3_finalize(statement) }
        execute("BEGIN")
        for record in records {
            bind(statement, record)
            guard sqlite3_step(statement) == SQLITE_DONE else { fatalError("insert failed") }
            sqlite3_reset(statement)
        }
        execute("COMMIT")
    }

    /// Workload 2: `SELECT *` stepped into Swift structs.
    func fetchAll() -> [BenchRecord] {
        let statement = prepare("SELECT id, name, value, count, created FROM item")
        defer { sqlite3_finalize(statement) }
        var records: [BenchRecord] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            records.append(row(statement))
        }
        return records
    }

    private func row(_ statement: OpaquePointer?) -> BenchRecord {
        BenchRecord(
            id: sqlite3_column_int64(statement, 0),
            name: String(
                decoding: UnsafeRawBufferPointer(
                    start: sqlite3_column_text(statement, 1),
                    count: Int(sqlite3_column_bytes(statement, 1))
                ),
                as: UTF8.self
            ),
            value: sqlite3_column_double(statement, 2),
            count: sqlite3_column_int64(statement, 3),
            created: Date(timeIntervalSince1970: sqlite3_column_double(statement, 4))
        )
    }

    /// Workload 3: `value < 100`, sorted by name, first 100 (no index on value or name).
    func predicateSortLimit() -> [BenchRecord] {
        let statement = prepare(
            "SELECT id, name, value, count, created FROM item WHERE value < 100 ORDER BY name LIMIT 100"
        )
        defer { sqlite3_finalize(statement) }
        var records: [BenchRecord] = []
        while sqlite3_step(statement) == SQLITE_ROW { records.append(row(statement)) }
        return records
    }

    /// Workload 3i: `value < bound`, sorted by name, first 100 (through the index on value
    /// that workload 3i makes).
    func predicateSortLimit(below bound: Double) -> [BenchRecord] {
        let statement = prepare(
            "SELECT id, name, value, count, created FROM item WHERE value < ? ORDER BY name LIMIT 100"
        )
        defer { sqlite3_finalize(statement) }
        sqlite3_bind_double(statement, 1, bound)
        var records: [BenchRecord] = []
        while sqlite3_step(statement) == SQLITE_ROW { records.append(row(statement)) }
        return records
    }

    /// Workload 3b: `count(*) WHERE name LIKE pattern` (case-insensitive for ASCII, as
    /// SQLite's `LIKE` is by default; no index on name).
    func countNames(like pattern: String) -> Int {
        let statement = prepare("SELECT count(*) FROM item WHERE name LIKE ?")
        defer { sqlite3_finalize(statement) }
        // SQLITE_TRANSIENT: SQLite copies the pattern before the call returns.
        sqlite3_bind_text(
            statement,
            1,
            pattern,
            -1,
            unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        )
        guard sqlite3_step(statement) == SQLITE_ROW else { return 0 }
        return Int(sqlite3_column_int64(statement, 0))
    }

    /// Workload 3c: `sum(value)` of every row, or of the rows with `value < bound`.
    func sumValues(below bound: Double? = nil) -> Double {
        let statement = prepare(
            bound == nil
                ? "SELECT sum(value) FROM item" : "SELECT sum(value) FROM item WHERE value < ?"
        )
        defer { sqlite3_finalize(statement) }
        if let bound { sqlite3_bind_double(statement, 1, bound) }
        guard sqlite3_step(statement) == SQLITE_ROW else { return 0 }
        return sqlite3_column_double(statement, 0)
    }

    /// Workload 4: one transaction of `UPDATE … WHERE id = ?`.
    func update(ids: [Int64]) {
        let statement = prepare("UPDATE item SET value = ?, count = count + 1 WHERE id = ?")
        defer { sqlite3_finalize(statement) }
        execute("BEGIN")
        for id in ids {
            sqlite3_bind_double(statement, 1, Double(id % 1000))
            sqlite3_bind_int64(statement, 2, id)
            guard sqlite3_step(statement) == SQLITE_DONE else { fatalError("update failed") }
            sqlite3_reset(statement)
        }
        execute("COMMIT")
    }

    /// Workload 10's statements: `UPDATE … SET count = -1` (or with `delete`, `DELETE`) of the
    /// rows with `value < bound`, one autocommit statement and so one durable transaction;
    /// returns the rows it changed.
    func batchChange(delete: Bool, below bound: Double = 100) -> Int {
        let statement = prepare(
            delete
                ? "DELETE FROM item WHERE value < ?" : "UPDATE item SET count = -1 WHERE value < ?"
        )
        defer { sqlite3_finalize(statement) }
        sqlite3_bind_double(statement, 1, bound)
        guard sqlite3_step(statement) == SQLITE_DONE else { fatalError("batch change failed") }
        return Int(sqlite3_changes(database))
    }

    /// Workload 5: autocommit inserts, one durable transaction each; returns each latency.
    func smallSaves(_ records: [BenchRecord]) -> [Double] {
        let statement = prepare(
            "INSERT INTO item(id, name, value, count, created) VALUES (?, ?, ?, ?, ?)"
        )
        defer { sqlite3_finalize(statement) }
        var latencies: [Double] = []
        for record in records {
            latencies.append(
                measure {
                    bind(statement, record)
                    guard sqlite3_step(statement) == SQLITE_DONE else {
                        fatalError("insert failed")
                    }
                    sqlite3_reset(statement)
                }
            )
        }
        return latencies
    }

    /// Workload 6: `SELECT count(*)`.
    func count() -> Int {
        let statement = prepare("SELECT count(*) FROM item")
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW else { return 0 }
        return Int(sqlite3_column_int64(statement, 0))
    }

    /// Workload 7: checkpoints the WAL into the database file and returns the file's size.
    func checkpointedSize() -> UInt64 {
        execute("PRAGMA wal_checkpoint(TRUNCATE)")
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        return (attributes?[.size] as? NSNumber)?.uint64Value ?? 0
    }
}
