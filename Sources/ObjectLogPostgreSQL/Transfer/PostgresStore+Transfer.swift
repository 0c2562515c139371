import Foundation
import ObjectLog
import ObjectLogStore

/// Where a store is: a PostgreSQL database for a `postgresql://` (or `postgres://`) URI, a
/// store file otherwise, as
/// ``ObjectLog/PersistentContainer/init(url:model:readOnly:migratesStoreAutomatically:)``
/// decides.
package enum StoreLocation {
    /// Whether `location` names a PostgreSQL database rather than a store file.
    package static func isDatabase(_ location: String) -> Bool {
        PersistentContainer.isPostgreSQL(location)
    }

    /// How messages show `location`: a path as it is; a database as its user, host, port and
    /// database (``ConnectionTarget``), never its password.
    package static func displayName(_ location: String) -> String {
        guard isDatabase(location) else { return location }
        return ConnectionTarget(location)?.description ?? "(an unreadable PostgreSQL URI)"
    }
}

extension PostgresStore {
    /// What a database holds of ObjectLog.
    package enum DatabaseContents: Sendable, Equatable {
        /// No ObjectLog tables.
        case empty
        /// A store that records its model.
        case store
        /// The store's tables without a recorded model: a store being created, or one whose
        /// creation stopped before its first commit.
        case unrecordedStore
    }

    /// The advisory lock an export holds on its destination database, so that two exports
    /// into one database do not both find it empty.
    static let exportLock = 0x6F62_6A6C_6F67_6578

    /// What the database `url` names holds, read on a connection of its own.
    ///
    /// - Throws: ``PostgresError`` when the server cannot be reached or refuses the query.
    package static func contents(ofDatabase url: String) throws(PostgresError) -> DatabaseContents {
        let connection = try PostgresConnection(url: url)
        defer { connection.close() }
        return try contents(connection)
    }

    static func contents(
        _ connection: PostgresConnection
    ) throws(PostgresError) -> DatabaseContents {
        let tables = try connection.execute(
            "SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL",
            [quoted(storeTable), quoted(versionsTable)]
        ).rows.first
        guard tables?[0] == "t" || tables?[1] == "t" else { return .empty }
        guard tables?[1] == "t" else { return .unrecordedStore }
        let versions =
            try connection.execute(
                "SELECT count(*) FROM \(quoted(versionsTable))"
            ).rows.first?.first ?? nil
        return (versions.flatMap { Int($0) } ?? 0) > 0 ? .store : .unrecordedStore
    }

    /// Opens the store that the database `url` holds, through the tables of the model version
    /// it recorded last.
    ///
    /// - Parameters:
    ///   - url: The database.
    ///   - readOnly: Whether the store refuses commits.
    ///   - externalStorageMinimumByteCount: External data at least this large is read as a
    ///     blob (its bytes fetched by ``readBlob(_:)``), smaller data with its row.
    /// - Returns: The store.
    /// - Throws: ``PostgresError`` when the server cannot be reached; ``StoreTransferError``
    ///   (``StoreTransferError/Code/noStore``) when the database holds no store.
    package static func openExisting(
        url: String,
        readOnly: Bool = true,
        externalStorageMinimumByteCount: Int = 16 * 1024
    ) throws -> PostgresStore {
        let target = StoreLocation.displayName(url)
        switch try contents(ofDatabase: url) {
        case .store:
            break
        case .empty:
            throw StoreTransferError(.noStore, "the database at \(target) holds no ObjectLog store")
        case .unrecordedStore:
            throw StoreTransferError(
                .noStore,
                "the database at \(target) holds no ObjectLog store, only the tables of one that "
                    + "records no model (one being created, or an interrupted export's)"
            )
        }
        // The schema given is not used: the database's own is read.
        return try PostgresStore(
            url: url,
            schema: ModelSchema(entities: []),
            readOnly: readOnly,
            externalStorageMinimumByteCount: externalStorageMinimumByteCount
        )
    }

    /// Runs `body`, whose reads of this store then see one snapshot of the database (a
    /// read-only transaction at `REPEATABLE READ`): a copy or a dump is consistent however
    /// other processes write meanwhile.
    package func readingSnapshot<Result>(_ body: () throws -> Result) throws -> Result {
        _ = try locked { connection throws(PostgresError) in
            try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        }
        let result: Result
        do {
            result = try body()
        } catch {
            _ = try? locked { connection throws(PostgresError) in
                try connection.execute("ROLLBACK")
            }
            throw error
        }
        _ = try locked { connection throws(PostgresError) in try connection.execute("COMMIT") }
        return result
    }

    /// The key the store hands out next.
    package func nextObjectKey() throws(PostgresError) -> ObjectKey {
        let text = try locked { connection throws(PostgresError) in
            try connection.execute("SELECT next_key FROM \(quoted(Self.storeTable))").rows.first?
                .first ?? nil
        }
        guard let key = text.flatMap({ ObjectKey($0) }) else {
            throw PostgresError(.statementFailed, "the store row is missing")
        }
        return key
    }

    /// Makes the store hand out only keys from `nextKey` on (keys below it are the copied
    /// objects'), in one statement whatever the number of keys.
    package func reserveKeys(below nextKey: ObjectKey) throws(PostgresError) {
        _ = try locked { connection throws(PostgresError) in
            try connection.execute(
                "UPDATE \(quoted(Self.storeTable)) SET next_key = greatest(next_key, $1)",
                [String(nextKey)]
            )
        }
    }

    /// The server's version as PostgreSQL writes it (`16.4`).
    package var serverVersionText: String {
        let version = connection.serverVersion
        guard version > 0 else { return "unknown" }
        // From version 10 on, major * 10000 + minor.
        return version >= 100_000
            ? "\(version / 10_000).\(version % 10_000)"
            : "\(version / 10_000).\(version / 100 % 100).\(version % 100)"
    }

    /// Every table of the store: its join tables, its entities', and its own (with the changes
    /// table of an earlier layout, which dropping the store removes too, where it is left).
    var tableNames: [String] {
        mapping.joinTables.map(\.name) + mapping.tables.map(\.name)
            + [
                Self.formerChangesTable, Self.commitsTable, Self.historyBlobsTable,
                Self.historyTable, Self.metadataTable, Self.versionsTable, Self.storeTable,
            ]
    }

    /// Drops every table of the store (its entities', join tables, and its own: the store row,
    /// metadata, model versions, commits, history), in one transaction: the database
    /// holds no ObjectLog store afterwards.
    package func removeTables() throws(PostgresError) {
        let names = tableNames
        try locked { connection throws(PostgresError) in
            try Self.drop(names, connection)
        }
    }

    /// Drops the tables `names`, in one transaction.
    static func drop(_ names: [String], _ connection: PostgresConnection) throws(PostgresError) {
        try connection.execute("BEGIN")
        do {
            // The server's notices of what a drop cascades to would reach standard error.
            try connection.execute("SET LOCAL client_min_messages = warning")
            for name in names {
                try connection.execute("DROP TABLE IF EXISTS \(quoted(name)) CASCADE")
            }
            try connection.execute("COMMIT")
        } catch {
            _ = try? connection.execute("ROLLBACK")
            throw error
        }
    }

    // MARK: An export's mark

    /// What the comment of the store table of an export in progress starts with; the rest
    /// is the hexadecimal UTF-8 of the store's table names, one a line.
    static let exportMark = "objectlog export in progress: "

    /// Marks the store's tables, through `connection`, as an export's that has not committed
    /// yet, so that an export interrupted before its commit (the process killed) is known
    /// for what it is, and its tables dropped by the next one.
    package func markExport(on connection: PostgresConnection) throws(PostgresError) {
        let hex = tableNames.joined(separator: "\n").utf8.map { byte in
            byte < 16 ? "0" + String(byte, radix: 16) : String(byte, radix: 16)
        }
        // Letters, digits, a colon and spaces: nothing to escape in the literal (COMMENT
        // takes no parameters).
        try connection.execute(
            "COMMENT ON TABLE \(quoted(Self.storeTable)) IS '\(Self.exportMark)\(hex.joined())'"
        )
    }

    /// Removes an export's mark: the store is whole.
    static func clearExportMark(on connection: PostgresConnection) throws(PostgresError) {
        try connection.execute("COMMENT ON TABLE \(quoted(storeTable)) IS NULL")
    }

    /// Drops the tables an interrupted export left, when the database holds those and nothing
    /// else of ObjectLog; returns whether it did.
    static func dropInterruptedExport(
        _ connection: PostgresConnection
    ) throws(PostgresError)
        -> Bool
    {
        guard try contents(connection) == .unrecordedStore else { return false }
        let comment =
            try connection.execute(
                "SELECT obj_description(to_regclass($1), 'pg_class')",
                [quoted(storeTable)]
            ).rows.first?.first ?? nil
        guard let comment, comment.hasPrefix(exportMark) else { return false }
        let digits = Array(comment.utf8.dropFirst(exportMark.utf8.count))
        guard digits.count.isMultiple(of: 2) else { return false }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard
                let byte = UInt8(
                    String(decoding: digits[index..<index + 2], as: UTF8.self),
                    radix: 16
                )
            else { return false }
            bytes.append(byte)
        }
        let names = String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
        guard names.contains(storeTable) else { return false }
        try drop(names, connection)
        return true
    }
}
