import CLibPQ
import Foundation

/// One connection to a PostgreSQL server, through libpq.
///
/// Statements take their values as parameters, never spliced into the SQL text, so no value
/// can change what a statement does. A connection is used by one thread at a time; it
/// serialises the calls made on it.
///
/// ```swift
/// let connection = try PostgresConnection(url: "postgresql://lab@/lab?host=/run/postgresql")
/// let result = try connection.execute("SELECT name FROM runs WHERE owner = $1", ["ada"])
/// ```
///
/// libpq's own parameters pass through: `sslmode`, `sslrootcert`, a password file
/// (`~/.pgpass`, `PGPASSFILE`) or `PGPASSWORD`. Prefer those to a password in the URL.
public final class PostgresConnection: @unchecked Sendable {
    // `@unchecked Sendable`: `connection` is used only under `lock`.
    private let lock = NSLock()
    private var connection: OpaquePointer?
    /// Where the connection goes, as errors show it.
    public let target: ConnectionTarget

    /// Connects to the server that `url` names (a `postgresql://` URI or libpq's `key=value`
    /// pairs).
    ///
    /// - Throws: ``PostgresError/Code/invalidConnectionString`` or
    ///   ``PostgresError/Code/connectionFailed``, naming the host and database (never the
    ///   password) and libpq's reason.
    public init(url: String) throws(PostgresError) {
        guard let target = ConnectionTarget(url) else {
            throw PostgresError(
                .invalidConnectionString,
                "not a PostgreSQL connection string (expected postgresql://USER@HOST/DATABASE)"
            )
        }
        self.target = target
        let connection = PQconnectdb(url)
        guard let connection, PQstatus(connection) == CONNECTION_OK else {
            let reason = connection.map { oneLine(String(cString: PQerrorMessage($0))) }
            PQfinish(connection)
            throw PostgresError(
                .connectionFailed,
                "cannot connect to \(target): \(reason ?? "out of memory")"
            )
        }
        self.connection = connection
    }

    deinit { PQfinish(connection) }

    /// Closes the connection; later statements fail with
    /// ``PostgresError/Code/connectionLost``.
    public func close() {
        lock.lock()
        defer { lock.unlock() }
        PQfinish(connection)
        connection = nil
    }

    /// The server's version, as libpq reports it (`150020` for 15.20); 0 when closed.
    public var serverVersion: Int {
        lock.lock()
        defer { lock.unlock() }
        return connection.map { Int(PQserverVersion($0)) } ?? 0
    }

    /// Runs one statement with `parameters` as its `$1`, `$2`… values, sent as text apart
    /// from the statement; nil is SQL `NULL`.
    ///
    /// - Returns: The rows, as text, and how many rows the statement changed.
    /// - Throws: ``PostgresError/Code/statementFailed`` with the server's SQLSTATE,
    ///   ``PostgresError/Code/connectionLost``, or ``PostgresError/Code/invalidParameter``
    ///   for text that holds a NUL character (which PostgreSQL's text cannot hold).
    @discardableResult
    public func execute(
        _ statement: String,
        _ parameters: [String?] = []
    ) throws(PostgresError) -> PostgresResult {
        try run(statement, parameters.map { $0.map(PostgresParameter.text) }, binary: false) {
            Self.read($0)
        }
    }

    /// Runs one statement with `parameters`, text or binary, and reads its rows in
    /// PostgreSQL's binary format, in place: numbers as their bytes, text and `bytea` as
    /// theirs, with no conversion to and from text on either side.
    package func query<Result>(
        _ statement: String,
        _ parameters: [PostgresParameter?] = [],
        rows read: (borrowing BinaryRows) throws(PostgresError) -> Result
    ) throws(PostgresError) -> Result {
        try run(statement, parameters, binary: true) { result throws(PostgresError) in
            try read(BinaryRows(result))
        }
    }

    /// Runs a statement and hands its successful result to `read` before it is freed.
    private func run<Result>(
        _ statement: String,
        _ parameters: [PostgresParameter?],
        binary: Bool,
        read: (OpaquePointer) throws(PostgresError) -> Result
    ) throws(PostgresError) -> Result {
        for (index, parameter) in parameters.enumerated() {
            if case .text(let text) = parameter, text.utf8.contains(0) {
                throw PostgresError(
                    .invalidParameter,
                    "parameter $\(index + 1) holds a NUL character, which PostgreSQL text cannot "
                        + "hold"
                )
            }
        }
        lock.lock()
        defer { lock.unlock() }
        guard let connection else {
            throw PostgresError(.connectionLost, "the connection to \(target) is closed")
        }
        let result = Self.withValues(parameters) { values, lengths, formats in
            PQexecParams(
                connection,
                statement,
                Int32(values.count),
                nil,
                values,
                lengths,
                formats,
                binary ? 1 : 0
            )
        }
        defer { PQclear(result) }
        guard let result else {
            throw lostOrFailed(connection, "the statement failed")
        }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
            return try read(result)
        default:
            throw failure(of: result, connection)
        }
    }

    /// The error of a statement whose result is not a success: the connection lost, or the
    /// server's reason with its SQLSTATE.
    private func failure(of result: OpaquePointer, _ connection: OpaquePointer) -> PostgresError {
        if PQstatus(connection) != CONNECTION_OK {
            return lostOrFailed(connection, "the statement failed")
        }
        func field(_ code: Int32) -> String? {
            PQresultErrorField(result, code).map { String(cString: $0) }
        }
        let primary =
            field(Int32(UInt8(ascii: "M")))
            ?? oneLine(String(cString: PQresultErrorMessage(result)))
        let sqlState = field(Int32(UInt8(ascii: "C")))
        // A standby (or a read-only server) refuses every write: say which server it is.
        let message =
            sqlState == PostgresError.readOnlyState
            ? "the server at \(target) accepts no writes (a hot standby or a read-only "
                + "server): \(primary)" : primary
        return PostgresError(
            .statementFailed,
            message,
            sqlState: sqlState,
            constraint: field(Int32(UInt8(ascii: "n"))),
            detail: field(Int32(UInt8(ascii: "D")))
        )
    }

    /// Runs `COPY (query) TO STDOUT (FORMAT binary)` and calls `row` with each row as binary
    /// COPY lays it out (``BinaryCopyRow``); returns the number of rows.
    ///
    /// Rows arrive as the server writes them, each in a buffer of its own, rather than all at
    /// once in one result: no result is built from them, and no row waits for the last. COPY
    /// takes no parameters, so `statement` must hold no values.
    /// - Throws: ``PostgresError/Code/statementFailed`` with the server's reason (or for rows
    ///   not in binary COPY's layout), ``PostgresError/Code/connectionLost``.
    @discardableResult
    package func copyOut(
        _ statement: String,
        row: (BinaryCopyRow) throws(PostgresError) -> Void
    ) throws(PostgresError) -> Int {
        lock.lock()
        defer { lock.unlock() }
        guard let connection else {
            throw PostgresError(.connectionLost, "the connection to \(target) is closed")
        }
        let started = PQexec(connection, statement)
        guard let started else { throw lostOrFailed(connection, "COPY did not start") }
        guard PQresultStatus(started) == PGRES_COPY_OUT else {
            defer { PQclear(started) }
            throw failure(of: started, connection)
        }
        PQclear(started)
        var rows = 0
        var parser = BinaryCopyRow.Parser()
        var failed: PostgresError?
        while true {
            var buffer: UnsafeMutablePointer<CChar>?
            let length = PQgetCopyData(connection, &buffer, 0)
            guard length >= 0, let buffer else {
                // -1: the copy is done; -2: it failed (the result below says why).
                if length == -2 { failed = failed ?? lostOrFailed(connection, "COPY failed") }
                break
            }
            defer { PQfreemem(buffer) }
            // After a failure the rest of the rows are read and dropped, so that the
            // connection is ready for the next statement.
            guard failed == nil else { continue }
            do {
                let message = UnsafeRawBufferPointer(start: buffer, count: Int(length))
                if let parsed = try parser.row(in: message) {
                    try row(parsed)
                    rows += 1
                }
            } catch {
                failed = error
            }
        }
        var serverError: PostgresError?
        while let result = PQgetResult(connection) {
            if PQresultStatus(result) != PGRES_COMMAND_OK, serverError == nil {
                serverError = failure(of: result, connection)
            }
            PQclear(result)
        }
        if let serverError { throw serverError }
        if let failed { throw failed }
        guard parser.ended else {
            throw PostgresError(.statementFailed, "COPY ended without its trailer")
        }
        return rows
    }

    /// Runs a `COPY … FROM STDIN` statement, sending the rows `write` produces in COPY's text
    /// format, in chunks of about a megabyte; returns the number of rows copied.
    ///
    /// `write` is called with a buffer to append rows to, and again while it returns `true`.
    /// - Throws: ``PostgresError/Code/statementFailed`` with the server's reason (the whole
    ///   copy is then undone with its transaction), ``PostgresError/Code/connectionLost``.
    @discardableResult
    package func copyIn(
        _ statement: String,
        rows write: (inout CopyRowBuffer) throws(PostgresError) -> Bool
    ) throws(PostgresError) -> Int {
        lock.lock()
        defer { lock.unlock() }
        guard let connection else {
            throw PostgresError(.connectionLost, "the connection to \(target) is closed")
        }
        let started = PQexec(connection, statement)
        let status = started.map(PQresultStatus)
        PQclear(started)
        guard status == PGRES_COPY_IN else {
            throw lostOrFailed(connection, "COPY did not start")
        }
        var buffer = CopyRowBuffer(capacity: (1 << 20) + (1 << 16))
        var more = true
        var failure: PostgresError?
        while more {
            do {
                more = try write(&buffer)
            } catch {
                failure = error
                break
            }
            if buffer.count >= 1 << 20 || !more {
                let sent = buffer.withUnsafeBytes { bytes in
                    PQputCopyData(
                        connection,
                        bytes.baseAddress?.assumingMemoryBound(to: CChar.self),
                        Int32(bytes.count)
                    )
                }
                buffer.removeAll()
                guard sent == 1 else {
                    failure = lostOrFailed(connection, "cannot send COPY data")
                    break
                }
            }
        }
        // A message ends the copy as failed, and the server undoes it.
        if failure != nil {
            _ = PQputCopyEnd(connection, "the rows could not be written")
        } else {
            _ = PQputCopyEnd(connection, nil)
        }
        var copied = 0
        var serverError: PostgresError?
        while let result = PQgetResult(connection) {
            if PQresultStatus(result) == PGRES_COMMAND_OK {
                copied = Int(String(cString: PQcmdTuples(result))) ?? 0
            } else if serverError == nil {
                let message = oneLine(String(cString: PQresultErrorMessage(result)))
                let sqlState = PQresultErrorField(result, Int32(UInt8(ascii: "C")))
                    .map { String(cString: $0) }
                let constraint = PQresultErrorField(result, Int32(UInt8(ascii: "n")))
                    .map { String(cString: $0) }
                serverError = PostgresError(
                    .statementFailed,
                    message,
                    sqlState: sqlState,
                    constraint: constraint
                )
            }
            PQclear(result)
        }
        if let failure { throw failure }
        if let serverError { throw serverError }
        return copied
    }

    /// The payloads of the notifications (`NOTIFY`) of the channels this connection listens
    /// to that arrived, waiting up to `milliseconds` for the first, or until `wake` (a file
    /// descriptor, such as a pipe's reading end) can be read.
    ///
    /// - Throws: ``PostgresError/Code/connectionLost`` when the server is gone.
    public func notifications(
        waitingUpTo milliseconds: Int32,
        wake: Int32? = nil
    ) throws(PostgresError) -> [String] {
        lock.lock()
        defer { lock.unlock() }
        guard let connection else {
            throw PostgresError(.connectionLost, "the connection to \(target) is closed")
        }
        var payloads = Self.takeNotifications(connection)
        guard payloads.isEmpty else { return payloads }
        var descriptors = [pollfd(fd: PQsocket(connection), events: Int16(POLLIN), revents: 0)]
        guard descriptors[0].fd >= 0 else { throw lostOrFailed(connection, "no socket") }
        if let wake { descriptors.append(pollfd(fd: wake, events: Int16(POLLIN), revents: 0)) }
        // The lock is held while waiting: a listening connection runs no statements meanwhile.
        let ready = poll(&descriptors, nfds_t(descriptors.count), milliseconds)
        if ready > 0, descriptors[0].revents != 0 {
            guard PQconsumeInput(connection) == 1 else {
                throw lostOrFailed(connection, "cannot read notifications")
            }
            payloads = Self.takeNotifications(connection)
        }
        return payloads
    }

    /// The notifications libpq has read, in order.
    private static func takeNotifications(_ connection: OpaquePointer) -> [String] {
        var payloads: [String] = []
        while let notification = PQnotifies(connection) {
            payloads.append(String(cString: notification.pointee.extra))
            PQfreemem(notification)
        }
        return payloads
    }

    /// The error of a statement that got no result: the connection lost, or libpq's reason.
    private func lostOrFailed(_ connection: OpaquePointer, _ what: String) -> PostgresError {
        let reason = oneLine(String(cString: PQerrorMessage(connection)))
        if PQstatus(connection) != CONNECTION_OK {
            return PostgresError(.connectionLost, "lost the connection to \(target): \(reason)")
        }
        return PostgresError(.statementFailed, "\(what): \(reason)")
    }

    /// Calls `body` with `parameters` as libpq takes them: pointers to their bytes (C strings
    /// for text, NULL for nil), their lengths and their formats, valid during the call.
    private static func withValues<Result>(
        _ parameters: [PostgresParameter?],
        _ body: ([UnsafePointer<CChar>?], [Int32], [Int32]) -> Result
    ) -> Result {
        var copies: [UnsafeMutablePointer<CChar>?] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        copies.reserveCapacity(parameters.count)
        for parameter in parameters {
            switch parameter {
            case nil:
                copies.append(nil)
                lengths.append(0)
                formats.append(0)
            case .text(let text)?:
                copies.append(strdup(text))
                lengths.append(0)
                formats.append(0)
            case .binary(let bytes)?:
                // malloc, as strdup's copies are, so that one `free` releases either.
                let copy = malloc(max(bytes.count, 1))
                bytes.withUnsafeBytes { source in
                    if let base = source.baseAddress, let copy {
                        copy.copyMemory(from: base, byteCount: bytes.count)
                    }
                }
                copies.append(copy?.assumingMemoryBound(to: CChar.self))
                lengths.append(Int32(bytes.count))
                formats.append(1)
            }
        }
        defer { for copy in copies { free(copy) } }
        return body(copies.map { $0.map { UnsafePointer($0) } }, lengths, formats)
    }

    /// The rows and the count of changed rows of a successful result.
    private static func read(_ result: OpaquePointer) -> PostgresResult {
        let columnCount = Int(PQnfields(result))
        let rowCount = Int(PQntuples(result))
        let columns = (0..<columnCount).map { String(cString: PQfname(result, Int32($0))) }
        let rows = (0..<rowCount).map { row in
            (0..<columnCount).map { column -> String? in
                PQgetisnull(result, Int32(row), Int32(column)) == 1
                    ? nil : String(cString: PQgetvalue(result, Int32(row), Int32(column)))
            }
        }
        return PostgresResult(
            columns: columns,
            rows: rows,
            affectedRows: Int(String(cString: PQcmdTuples(result))) ?? 0
        )
    }
}
