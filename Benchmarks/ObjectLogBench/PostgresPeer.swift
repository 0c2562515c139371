import CLibPQ
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A failure of the PostgreSQL peer, on one line: what failed, the server it ran on (user, host
/// and database, never a password) and what libpq or the server said.
struct PostgresPeerError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The PostgreSQL peer, written as a careful libpq user writes it.
///
/// One blocking connection (`PQconnectdb`), its tables in a schema of their own
/// (``PostgresPeer/schema``), binary formats both ways: the bulk insert is one binary `COPY …
/// FROM STDIN` sent in 1 MiB chunks, reads are prepared statements with binary results decoded
/// from network byte order, and the update by id is a prepared statement in a pipeline. Each
/// save is one transaction, durable as the server's defaults make it (`synchronous_commit` on).
///
/// `created` is `double precision` seconds since 1970: a `Date` is a `Double` of seconds, so it
/// comes back exactly (a `timestamptz` keeps microseconds, and would cost a conversion each
/// way), as the SQLite peer's `REAL` and the PostgreSQL store's mapping of a `Date` keep it;
/// both types take 8 bytes a row.
final class PostgresPeer {
    /// The schema of the peer's tables, so that they cannot clash with another's.
    static let schema = "objectlog_bench_peer"

    /// Type OIDs of the columns (PostgreSQL's `pg_type.h`, stable across versions).
    private static let int8OID: Oid = 20
    private static let textOID: Oid = 25
    private static let float8OID: Oid = 701

    private let connection: OpaquePointer
    /// Where the connection goes, as messages name it: `user@host:port/database`.
    let target: String
    /// The table, qualified by ``schema``.
    let table: String
    /// The statements prepared on this connection, by name.
    private var prepared: Set<String> = []

    /// Connects to the server `url` names (a `postgresql://` URI or libpq's `key=value` pairs),
    /// for the table `name` in ``schema``.
    init(url: String, table name: String = "item") throws {
        target = try Self.describe(url)
        table = "\(Self.schema).\(name)"
        guard let connection = PQconnectdb(url) else {
            throw PostgresPeerError("PostgreSQL peer: cannot connect to \(target): out of memory")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let reason = Self.oneLine(String(cString: PQerrorMessage(connection)))
            PQfinish(connection)
            throw PostgresPeerError("PostgreSQL peer: cannot connect to \(target): \(reason)")
        }
        self.connection = connection
        // Notices ("table … does not exist, skipping") are not the benchmark's output: libpq
        // would print each to standard error.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        // Names go both ways as UTF-8 bytes, whatever the environment's locale says.
        guard PQsetClientEncoding(connection, "UTF8") == 0 else {
            throw failure("setting the client encoding", nil)
        }
    }

    deinit { PQfinish(connection) }

    // MARK: - Schema

    /// Creates ``schema`` if missing and the table anew, empty.
    func createTable() throws {
        try execute("CREATE SCHEMA IF NOT EXISTS \(Self.schema)", "creating the schema")
        try execute("DROP TABLE IF EXISTS \(table)", "dropping the old table")
        try execute(
            """
            CREATE TABLE \(table) (id bigint PRIMARY KEY, name text NOT NULL, \
            value double precision NOT NULL, count bigint NOT NULL, \
            created double precision NOT NULL)
            """,
            "creating the table"
        )
    }

    /// Drops ``schema`` and every table in it.
    func dropSchema() throws {
        try execute("DROP SCHEMA IF EXISTS \(Self.schema) CASCADE", "dropping the schema")
    }

    /// `VACUUM (ANALYZE)` of the table: the state autovacuum leaves it in some time after a bulk
    /// change (hint bits set, the visibility map and statistics up to date), reached now, so
    /// that the figures after it do not depend on whether autovacuum has come round yet.
    func vacuumAnalyze() throws {
        try execute("VACUUM (ANALYZE) \(table)", "vacuuming the table")
    }

    /// Makes the table `name` in ``schema`` a copy of this one, rows, primary key and all,
    /// vacuumed and analysed as ``vacuumAnalyze()`` leaves a table.
    func copyTable(to name: String) throws {
        let copy = "\(Self.schema).\(name)"
        try execute("DROP TABLE IF EXISTS \(copy)", "dropping the old copy")
        try execute("CREATE TABLE \(copy) (LIKE \(table) INCLUDING ALL)", "creating a copy")
        try execute("INSERT INTO \(copy) SELECT * FROM \(table)", "filling a copy")
        try execute("VACUUM (ANALYZE) \(copy)", "vacuuming a copy")
    }

    /// Drops the table `name` in ``schema``, if it exists.
    func dropTable(_ name: String) throws {
        try execute("DROP TABLE IF EXISTS \(Self.schema).\(name)", "dropping a table")
    }

    /// The server's value of the setting `name` (`server_version`, `synchronous_commit`…).
    func setting(_ name: String) throws -> String {
        let result = name.withCString { value in
            let values: [UnsafePointer<CChar>?] = [value]
            return PQexecParams(
                connection,
                "SELECT current_setting($1)",
                1,
                nil,
                values,
                nil,
                nil,
                0
            )
        }
        defer { PQclear(result) }
        try check(result, PGRES_TUPLES_OK, "reading the setting \(name)")
        guard PQntuples(result) == 1 else { throw failure("reading the setting \(name)", nil) }
        return String(cString: PQgetvalue(result, 0, 0))
    }

    // MARK: - Workloads

    /// Workload 1: every record in one binary `COPY … FROM STDIN`, which is its own transaction
    /// and commits durably when the server answers.
    ///
    /// The rows go in PostgreSQL's binary COPY format (the file format of the `COPY` manual
    /// page): a header, then per row a 16-bit field count and each field as a 32-bit length and
    /// its bytes in network order, then a -1 trailer. Sent in 1 MiB chunks: libpq copies each
    /// chunk into its output buffer and writes it to the socket. The server bounds it: 64 KiB,
    /// 256 KiB and 4 MiB chunks took the same time at 1M rows (1.25–1.50 s, three runs of each
    /// in turn), the client's share of it a tenth; `COPY … FREEZE` into a table truncated in the
    /// same transaction gained nothing either (the WAL is written all the same at
    /// `wal_level=replica`), so the peer copies into the table as it is.
    func bulkInsert(_ records: [BenchRecord]) throws {
        let start = PQexec(
            connection,
            "COPY \(table) (id, name, value, count, created) FROM STDIN (FORMAT binary)"
        )
        defer { PQclear(start) }
        try check(start, PGRES_COPY_IN, "starting the COPY")
        do {
            try sendCopyData(records)
        } catch {
            // Ends the COPY with an error, so that the server rolls it back and the connection
            // is usable again.
            _ = PQputCopyEnd(connection, "the client failed to send its rows")
            while let result = PQgetResult(connection) { PQclear(result) }
            throw error
        }
        guard PQputCopyEnd(connection, nil) == 1 else { throw failure("ending the COPY", nil) }
        let result = PQgetResult(connection)
        defer {
            PQclear(result)
            while let more = PQgetResult(connection) { PQclear(more) }
        }
        try check(result, PGRES_COMMAND_OK, "the COPY")
        try expectChanged(result!, records.count, "the COPY")
    }

    private func sendCopyData(_ records: [BenchRecord]) throws {
        var capacity = 1 << 20
        var buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        defer { buffer.deallocate() }
        // The signature, the flags (no OIDs) and the length of the header extension (none).
        let header: [UInt8] =
            Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00] + [UInt8](repeating: 0, count: 8)
        header.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        var used = header.count
        func send() throws {
            guard
                PQputCopyData(connection, buffer.assumingMemoryBound(to: CChar.self), Int32(used))
                    == 1
            else { throw failure("sending the COPY's rows", nil) }
            used = 0
        }
        for record in records {
            let nameCount = record.name.utf8.count
            // A field count, five lengths, four 8-byte values and the name.
            let rowBytes = 2 + 5 * 4 + 4 * 8 + nameCount
            if used + rowBytes > capacity {
                try send()
                if rowBytes > capacity {
                    buffer.deallocate()
                    capacity = rowBytes
                    buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
                }
            }
            let row = buffer + used
            // Unaligned stores: each field starts where the last ended.
            row.storeBytes(of: Int16(5).bigEndian, as: Int16.self)
            row.storeBytes(of: Int32(8).bigEndian, toByteOffset: 2, as: Int32.self)
            row.storeBytes(
                of: UInt64(bitPattern: record.id).bigEndian,
                toByteOffset: 6,
                as: UInt64.self
            )
            row.storeBytes(of: Int32(nameCount).bigEndian, toByteOffset: 14, as: Int32.self)
            let copied: Void? = record.name.utf8.withContiguousStorageIfAvailable { name in
                (row + 18).copyMemory(from: name.baseAddress!, byteCount: nameCount)
            }
            if copied == nil {
                Array(record.name.utf8).withUnsafeBytes {
                    (row + 18).copyMemory(from: $0.baseAddress!, byteCount: nameCount)
                }
            }
            let rest = row + 18 + nameCount
            rest.storeBytes(of: Int32(8).bigEndian, as: Int32.self)
            rest.storeBytes(of: record.value.bitPattern.bigEndian, toByteOffset: 4, as: UInt64.self)
            rest.storeBytes(of: Int32(8).bigEndian, toByteOffset: 12, as: Int32.self)
            rest.storeBytes(
                of: UInt64(bitPattern: record.count).bigEndian,
                toByteOffset: 16,
                as: UInt64.self
            )
            rest.storeBytes(of: Int32(8).bigEndian, toByteOffset: 24, as: Int32.self)
            rest.storeBytes(
                of: record.created.timeIntervalSince1970.bitPattern.bigEndian,
                toByteOffset: 28,
                as: UInt64.self
            )
            used += rowBytes
        }
        if used + 2 > capacity { try send() }
        (buffer + used).storeBytes(of: Int16(-1).bigEndian, as: Int16.self)
        used += 2
        try send()
    }

    /// Workload 2: every row through `COPY (SELECT …) TO STDOUT (FORMAT binary)`, decoded into
    /// structs.
    ///
    /// Each row arrives in a buffer of its own as the server writes it, and no `PGresult` is
    /// built, so this is faster and smaller than a prepared `SELECT` with a binary result
    /// (Benchmarks/README.md has the figures); `PQsetSingleRowMode` would make a `PGresult` per
    /// row, and libpq 15 has no chunked mode. A fetch of every row takes no parameters, so
    /// COPY can serve it.
    func fetchAll() throws -> [BenchRecord] {
        let started = PQexec(
            connection,
            "COPY (SELECT id, name, value, count, created FROM \(table)) TO STDOUT (FORMAT binary)"
        )
        defer { PQclear(started) }
        try check(started, PGRES_COPY_OUT, "starting the copy of every row")
        var records: [BenchRecord] = []
        var sawHeader = false
        while true {
            var buffer: UnsafeMutablePointer<CChar>?
            let length = PQgetCopyData(connection, &buffer, 0)
            guard length > 0, let buffer else { break }
            defer { PQfreemem(buffer) }
            var bytes = UnsafeRawBufferPointer(start: buffer, count: Int(length))
            if !sawHeader {
                // The signature, the flags and an empty header extension.
                bytes = UnsafeRawBufferPointer(rebasing: bytes[19...])
                sawHeader = true
            }
            // Each row: a field count of 5, then a length and the bytes of each field.
            guard bytes.count >= 2, Int16(bigEndian: bytes.loadUnaligned(as: Int16.self)) == 5
            else { continue }
            func word(_ offset: Int) -> UInt64 {
                UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            }
            let nameLength = Int(
                Int32(bigEndian: bytes.loadUnaligned(fromByteOffset: 14, as: Int32.self))
            )
            let rest = 18 + nameLength
            guard bytes.count == rest + 36 else {
                throw PostgresPeerError("PostgreSQL peer: a copied row of \(target) is malformed")
            }
            records.append(
                BenchRecord(
                    id: Int64(bitPattern: word(6)),
                    name: String(
                        decoding: UnsafeRawBufferPointer(rebasing: bytes[18..<rest]),
                        as: UTF8.self
                    ),
                    value: Double(bitPattern: word(rest + 4)),
                    count: Int64(bitPattern: word(rest + 16)),
                    created: Date(timeIntervalSince1970: Double(bitPattern: word(rest + 28)))
                )
            )
        }
        while let result = PQgetResult(connection) {
            defer { PQclear(result) }
            try check(result, PGRES_COMMAND_OK, "copying every row")
        }
        return records
    }

    /// Workload 3: `value < 100`, sorted by name, first 100 (no index on value or name), prepared,
    /// its result binary.
    ///
    /// `COLLATE "C"` sorts by bytes, as the SQLite peer's `BINARY` collation and ObjectLog's
    /// `.lexical` comparator do, whatever the database's default collation is.
    func predicateSortLimit(below bound: Double = 100) throws -> [BenchRecord] {
        try prepareOnce(
            "predicate_sort_limit",
            """
            SELECT id, name, value, count, created FROM \(table) WHERE value < $1 \
            ORDER BY name COLLATE "C" LIMIT 100
            """,
            [Self.float8OID]
        )
        let result = withBinaryParameters([bound.bitPattern]) { values, lengths, formats in
            PQexecPrepared(connection, "predicate_sort_limit", 1, values, lengths, formats, 1)
        }
        defer { PQclear(result) }
        try check(result, PGRES_TUPLES_OK, "the predicate query")
        return try records(in: result!)
    }

    /// The rows of a binary result of `id, name, value, count, created`.
    private func records(in result: OpaquePointer) throws -> [BenchRecord] {
        // Checked once for the result: every row then holds 8-byte int8 and float8 values
        // (binary int8 and float8 are always 8 bytes) and no NULLs (every column is NOT NULL).
        let types = [Self.int8OID, Self.textOID, Self.float8OID, Self.int8OID, Self.float8OID]
        guard PQnfields(result) == 5,
            types.enumerated().allSatisfy({ PQftype(result, Int32($0.offset)) == $0.element }),
            (0..<5).allSatisfy({ PQfformat(result, Int32($0)) == 1 })
        else {
            throw PostgresPeerError(
                "PostgreSQL peer: the rows from \(target) are not (int8, text, float8, int8, float8) in binary"
            )
        }
        let rowCount = PQntuples(result)
        var records: [BenchRecord] = []
        records.reserveCapacity(Int(rowCount))
        func word(_ row: Int32, _ column: Int32) -> UInt64 {
            Self.word(in: result, row: row, column: column)
        }
        for row in 0..<rowCount {
            records.append(
                BenchRecord(
                    id: Int64(bitPattern: word(row, 0)),
                    name: String(
                        decoding: UnsafeRawBufferPointer(
                            start: PQgetvalue(result, row, 1),
                            count: Int(PQgetlength(result, row, 1))
                        ),
                        as: UTF8.self
                    ),
                    value: Double(bitPattern: word(row, 2)),
                    count: Int64(bitPattern: word(row, 3)),
                    created: Date(timeIntervalSince1970: Double(bitPattern: word(row, 4)))
                )
            )
        }
        return records
    }

    /// Workload 4: one transaction of `UPDATE … WHERE id = $2`, prepared, its parameters
    /// binary: in a pipeline, or with `pipelined` false a round trip per statement.
    ///
    /// Each statement must change exactly one row. Pipelined is the peer's way: 100,000 updates
    /// of a 1M-row table took 0.95–1.38 s pipelined against 2.6–6.0 s with a round trip each
    /// (three runs of each in turn, on two processors shared with a build). Pipelined, the
    /// server's backend bounds it (the client used 0.2 s of processor time in 0.95 s); a round
    /// trip each waits for the backend and the client to wake each other 100,000 times.
    func update(ids: [Int64], pipelined: Bool = true) throws {
        try prepareOnce(
            "update_by_id",
            "UPDATE \(table) SET value = $1, count = count + 1 WHERE id = $2",
            [Self.float8OID, Self.int8OID]
        )
        if pipelined {
            try updateInPipeline(ids: ids)
        } else {
            try updateOneByOne(ids: ids)
        }
    }

    private func updateOneByOne(ids: [Int64]) throws {
        try execute("BEGIN", "beginning the update's transaction")
        do {
            try withUpdateParameters { values, lengths, formats, set in
                for id in ids {
                    set(id)
                    let result = PQexecPrepared(
                        connection,
                        "update_by_id",
                        2,
                        values,
                        lengths,
                        formats,
                        1
                    )
                    defer { PQclear(result) }
                    try check(result, PGRES_COMMAND_OK, "an update by id")
                    try expectChanged(result!, 1, "the update of id \(id)")
                }
            }
            try execute("COMMIT", "committing the update")
        } catch {
            PQclear(PQexec(connection, "ROLLBACK"))
            throw error
        }
    }

    /// The updates in pipeline mode (libpq 14 and later): `BEGIN`, the updates and `COMMIT` are
    /// sent without waiting for each answer, then one sync; the answers are read as they come.
    ///
    /// The connection is non-blocking meanwhile, and the loop reads whatever has arrived before
    /// it sends more: with a blocking connection, the client writing statements while the
    /// server writes answers nobody reads would deadlock once both sockets' buffers fill.
    private func updateInPipeline(ids: [Int64]) throws {
        guard PQenterPipelineMode(connection) == 1 else {
            throw failure("entering pipeline mode", nil)
        }
        defer { PQexitPipelineMode(connection) }
        guard PQsetnonblocking(connection, 1) == 0 else {
            throw failure("making the connection non-blocking", nil)
        }
        defer { PQsetnonblocking(connection, 0) }
        // The queue: BEGIN, the updates, COMMIT, the sync.
        let total = ids.count + 3
        var sent = 0
        var received = 0
        var firstError: PostgresPeerError?
        var outputPending = false
        let socket = PQsocket(connection)
        try withUpdateParameters { values, lengths, formats, set in
            while received < total {
                // Queues up to 1,024 more while libpq's output has drained.
                if !outputPending {
                    let end = min(total, sent + 1024)
                    while sent < end {
                        let queued: Int32
                        switch sent {
                        case 0:
                            queued = PQsendQueryParams(
                                connection,
                                "BEGIN",
                                0,
                                nil,
                                nil,
                                nil,
                                nil,
                                1
                            )
                        case ids.count + 1:
                            queued = PQsendQueryParams(
                                connection,
                                "COMMIT",
                                0,
                                nil,
                                nil,
                                nil,
                                nil,
                                1
                            )
                        case ids.count + 2:
                            queued = PQpipelineSync(connection)
                        default:
                            set(ids[sent - 1])
                            queued = PQsendQueryPrepared(
                                connection,
                                "update_by_id",
                                2,
                                values,
                                lengths,
                                formats,
                                1
                            )
                        }
                        guard queued == 1 else {
                            throw failure("queueing the pipeline's statements", nil)
                        }
                        sent += 1
                    }
                }
                let flushed = PQflush(connection)
                guard flushed >= 0 else { throw failure("sending the pipeline", nil) }
                outputPending = flushed == 1
                // Waits for the socket only when nothing else can move.
                if outputPending || sent == total {
                    var descriptor = pollfd(
                        fd: socket,
                        events: Int16(POLLIN) | (outputPending ? Int16(POLLOUT) : 0),
                        revents: 0
                    )
                    while poll(&descriptor, 1, -1) < 0 {
                        guard errno == EINTR else { throw failure("waiting for the server", nil) }
                    }
                }
                guard PQconsumeInput(connection) == 1 else {
                    throw failure("reading the pipeline's answers", nil)
                }
                // Each statement's answer is followed by a null result; the sync's is not. Only
                // answers to what was sent are read: past them, PQgetResult returns nulls.
                while received < sent, PQisBusy(connection) == 0 {
                    guard let result = PQgetResult(connection) else { continue }
                    defer { PQclear(result) }
                    let expected = received == total - 1 ? PGRES_PIPELINE_SYNC : PGRES_COMMAND_OK
                    if firstError == nil {
                        if PQresultStatus(result) != expected {
                            firstError = failure("the pipelined update", result)
                        } else if received >= 1, received <= ids.count {
                            do {
                                try expectChanged(
                                    result,
                                    1,
                                    "the update of id \(ids[received - 1])"
                                )
                            } catch let error as PostgresPeerError {
                                firstError = error
                            }
                        }
                    }
                    received += 1
                }
            }
        }
        // Every answer, the sync's included, has been read: the pipeline is empty.
        guard PQexitPipelineMode(connection) == 1 else {
            throw failure("leaving pipeline mode", nil)
        }
        if let firstError {
            // An error leaves the transaction aborted until it is rolled back.
            PQsetnonblocking(connection, 0)
            PQclear(PQexec(connection, "ROLLBACK"))
            throw firstError
        }
    }

    /// Calls `body` with the update's two binary parameters (the new value, the id) and a
    /// function that sets them for an id.
    private func withUpdateParameters(
        _ body: (
            UnsafePointer<UnsafePointer<CChar>?>, UnsafePointer<Int32>, UnsafePointer<Int32>,
            (Int64) -> Void
        ) throws -> Void
    ) rethrows {
        let storage = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 8)
        defer { storage.deallocate() }
        let bytes = storage.bindMemory(to: CChar.self, capacity: 16)
        let values: [UnsafePointer<CChar>?] = [UnsafePointer(bytes), UnsafePointer(bytes + 8)]
        let lengths: [Int32] = [8, 8]
        let formats: [Int32] = [1, 1]
        try values.withUnsafeBufferPointer { values in
            try body(values.baseAddress!, lengths, formats) { id in
                // The value the SQLite peer and ObjectLog set: the id modulo 1000.
                storage.storeBytes(of: Double(id % 1000).bitPattern.bigEndian, as: UInt64.self)
                storage.storeBytes(
                    of: UInt64(bitPattern: id).bigEndian,
                    toByteOffset: 8,
                    as: UInt64.self
                )
            }
        }
    }

    /// Workload 6: `SELECT count(*)`.
    func count() throws -> Int {
        let result = PQexecParams(
            connection,
            "SELECT count(*) FROM \(table)",
            0,
            nil,
            nil,
            nil,
            nil,
            1
        )
        defer { PQclear(result) }
        try check(result, PGRES_TUPLES_OK, "counting the rows")
        guard PQntuples(result) == 1, PQftype(result, 0) == Self.int8OID else {
            throw failure("counting the rows", nil)
        }
        return Int(Int64(bitPattern: Self.word(in: result!, row: 0, column: 0)))
    }

    /// The 8-byte binary value (int8 or float8) of a result's field, from network order; the
    /// caller has checked the column's type.
    @inline(__always)
    private static func word(in result: OpaquePointer, row: Int32, column: Int32) -> UInt64 {
        // Unaligned: libpq places values where they fall in its blocks.
        UInt64(
            bigEndian: UnsafeRawPointer(PQgetvalue(result, row, column)).loadUnaligned(
                as: UInt64.self
            )
        )
    }

    /// Workload 10: `UPDATE … SET count = -1 WHERE value < bound`, one statement and so one
    /// transaction; returns the rows it changed.
    func batchUpdate(below bound: Double = 100) throws -> Int {
        try changeRows("UPDATE \(table) SET count = -1 WHERE value < $1", bound, "the batch update")
    }

    /// Workload 10: `DELETE … WHERE value < bound`, one statement; returns the rows it deleted.
    func batchDelete(below bound: Double = 100) throws -> Int {
        try changeRows("DELETE FROM \(table) WHERE value < $1", bound, "the batch delete")
    }

    private func changeRows(_ sql: String, _ bound: Double, _ what: String) throws -> Int {
        let result = withBinaryParameters([bound.bitPattern]) { values, lengths, formats in
            PQexecParams(connection, sql, 1, [Self.float8OID], values, lengths, formats, 1)
        }
        defer { PQclear(result) }
        try check(result, PGRES_COMMAND_OK, what)
        return PQcmdTuples(result).flatMap { Int(String(cString: $0)) } ?? 0
    }

    // MARK: - Statements

    /// Runs `sql`, which returns no rows.
    private func execute(_ sql: String, _ what: String) throws {
        let result = PQexec(connection, sql)
        defer { PQclear(result) }
        try check(result, PGRES_COMMAND_OK, what)
    }

    /// Prepares `sql` as the statement `name`, once per connection.
    private func prepareOnce(_ name: String, _ sql: String, _ types: [Oid]) throws {
        guard !prepared.contains(name) else { return }
        let result = PQprepare(connection, name, sql, Int32(types.count), types)
        defer { PQclear(result) }
        try check(result, PGRES_COMMAND_OK, "preparing \(name)")
        prepared.insert(name)
    }

    /// Calls `body` with 8-byte binary parameters holding `words` in network order.
    private func withBinaryParameters<Result>(
        _ words: [UInt64],
        _ body: (UnsafePointer<UnsafePointer<CChar>?>, UnsafePointer<Int32>, UnsafePointer<Int32>)
            -> Result
    ) -> Result {
        let storage = UnsafeMutableRawPointer.allocate(
            byteCount: 8 * max(1, words.count),
            alignment: 8
        )
        defer { storage.deallocate() }
        let bytes = storage.bindMemory(to: CChar.self, capacity: 8 * words.count)
        for (index, word) in words.enumerated() {
            storage.storeBytes(of: word.bigEndian, toByteOffset: 8 * index, as: UInt64.self)
        }
        let values = words.indices.map { Optional(UnsafePointer(bytes + 8 * $0)) }
        let lengths = [Int32](repeating: 8, count: words.count)
        let formats = [Int32](repeating: 1, count: words.count)
        return values.withUnsafeBufferPointer { body($0.baseAddress!, lengths, formats) }
    }

    /// Throws unless `result` exists and has the status `expected`.
    private func check(_ result: OpaquePointer?, _ expected: ExecStatusType, _ what: String) throws
    {
        guard let result, PQresultStatus(result) == expected else { throw failure(what, result) }
    }

    /// Throws unless the command of `result` changed `count` rows.
    private func expectChanged(_ result: OpaquePointer, _ count: Int, _ what: String) throws {
        let changed = PQcmdTuples(result)
        // The common case, one row ("1"), without parsing.
        if count == 1, let changed, changed[0] == 0x31, changed[1] == 0 { return }
        let text = changed.map { String(cString: $0) } ?? ""
        guard Int(text) == count else {
            throw PostgresPeerError(
                "PostgreSQL peer: \(what) changed \(text.isEmpty ? "no" : text) rows on \(target), expected \(count)"
            )
        }
    }

    /// The error for `what`: the server's message from `result`, or the connection's.
    private func failure(_ what: String, _ result: OpaquePointer?) -> PostgresPeerError {
        var reason = result.map { String(cString: PQresultErrorMessage($0)) } ?? ""
        if reason.isEmpty { reason = String(cString: PQerrorMessage(connection)) }
        if reason.isEmpty, let result {
            reason = "unexpected result \(String(cString: PQresStatus(PQresultStatus(result))))"
        }
        return PostgresPeerError(
            "PostgreSQL peer: \(what) failed on \(target): \(Self.oneLine(reason))"
        )
    }

    /// `user@host:port/database` from a connection string, without its password.
    private static func describe(_ url: String) throws -> String {
        var failure: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(url, &failure) else {
            // libpq's reason can quote the string, password and all: it is not shown.
            if let failure { PQfreemem(failure) }
            throw PostgresPeerError(
                "PostgreSQL peer: not a connection string libpq accepts (postgresql://USER@HOST/DATABASE)"
            )
        }
        defer { PQconninfoFree(options) }
        var values: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val {
                values[String(cString: keyword)] = String(cString: value)
            }
            option += 1
        }
        var text = values["user"].map { $0 + "@" } ?? ""
        text += values["host"] ?? values["hostaddr"] ?? ""
        if let port = values["port"] { text += ":" + port }
        return text + "/" + (values["dbname"] ?? "")
    }

    /// libpq's messages end with a line break, and some span several: one line.
    private static func oneLine(_ message: String) -> String {
        message.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }.joined(separator: "; ")
    }
}
