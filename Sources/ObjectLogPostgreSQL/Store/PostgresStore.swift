import Foundation
import ObjectLog
import ObjectLogStore

/// The PostgreSQL store: the engine's objects in tables of a database server, so that several
/// processes and machines share one data set, with the server's replicas and backups.
///
/// Each entity hierarchy has a table (``SchemaMapping``); besides them the store keeps:
/// - `objectlog_store`: one row with the next object key, the number of the last commit and the
///   number of transactions;
/// - `objectlog_metadata`: the store's metadata dictionary, a row per key;
/// - `objectlog_model_versions`: the schema of each model version the store has recorded;
/// - `objectlog_commits`: each commit and the objects it changed, which other processes read;
/// - `objectlog_history`: the transactions the history retention keeps, with their values
///   (see `PostgresStore+History.swift`).
///
/// A save is one SQL transaction. It first takes the `objectlog_store` row's lock (which orders
/// every save of every process) and a new commit number; each row it writes records that
/// number in `objectlog_version`, the version the engine's optimistic locking compares. The
/// version of a row read earlier is checked again within the transaction, so a save never
/// overwrites another process's save unseen.
///
/// All statements of a store go through one connection, one at a time.
package final class PostgresStore: PersistentStore, @unchecked Sendable {
    // `@unchecked Sendable`: `connection`, `current` and `pendingBlobs` are used only under
    // `lock`; the rest is set once in `init`.
    let connection: PostgresConnection
    /// The tables of the model version the store reads and writes now (a migration changes
    /// them).
    private var current: Tables
    private let lock = NSRecursiveLock()
    /// Data handed to ``writeBlob(_:)`` and not yet saved in a row.
    private var pendingBlobs: [BlobID: Data] = [:]
    private var isClosed = false
    /// The connection string, for the connection that listens for other processes' commits.
    let url: String
    /// The numbers of this store's own commits the listener has not seen yet.
    var ownCommits: Set<UInt64> = []
    /// The number the save in progress took, until it commits or rolls back.
    var takenCommit: UInt64?
    /// The thread that listens for other processes' commits, once something observes them.
    var listener: CommitListener?
    /// How long the list of what a commit changed stays in `objectlog_commits`, and how often
    /// a commit drops the lists that have outlived it (see ``recordCommit(_:date:changes:)``).
    ///
    /// A listener reads each list as soon as its commit is announced; only a process cut off
    /// from the server for longer than this misses lists, and its contexts then check every
    /// object they hold (``ObjectChanges/isIncomplete``). Set before the first save; tests
    /// shorten it.
    var commitRetention = (seconds: 600.0, everyCommits: UInt64(64))

    package let displayName: String
    package let isReadOnly: Bool
    package let externalStorageMinimumByteCount: Int

    static let storeTable = "objectlog_store"
    static let metadataTable = "objectlog_metadata"
    static let versionsTable = "objectlog_model_versions"
    static let commitsTable = "objectlog_commits"
    /// The table of a commit's changes, a row per object, that stores made before a commit's
    /// changes became one value of its row: replaced when such a store is opened.
    static let formerChangesTable = "objectlog_changes"
    /// The channel each commit is announced on, with its number.
    static let commitChannel = "objectlog_commits"
    /// The advisory lock that serialises the creation of a store's tables.
    static let creationLock = 0x6F62_6A6C_6F67

    /// Connects to the database `url` names and makes it ready for `schema`: creates the
    /// store's tables in an empty database; in one that holds a store, reads through the
    /// tables of the model version it recorded last.
    ///
    /// - Throws: ``PostgresError`` when the server cannot be reached or refuses the tables.
    package init(
        url: String,
        schema: ModelSchema,
        readOnly: Bool = false,
        externalStorageMinimumByteCount: Int = 16 * 1024
    ) throws(PostgresError) {
        let connection = try PostgresConnection(url: url)
        self.connection = connection
        self.url = url
        self.displayName = connection.target.description
        self.isReadOnly = readOnly
        self.externalStorageMinimumByteCount = externalStorageMinimumByteCount
        let stored: ModelSchema
        let mapping: SchemaMapping
        do {
            stored = try Self.prepareTables(connection, schema: schema, readOnly: readOnly)
            mapping = try SchemaMapping(stored)
        } catch {
            connection.close()
            throw error
        }
        current = Tables(
            schema: stored,
            mapping: mapping,
            externalThreshold: externalStorageMinimumByteCount
        )
    }

    /// The tables of one model version: its mapping, and how its rows become records.
    struct Tables: Sendable {
        let schema: ModelSchema
        let mapping: SchemaMapping
        /// The layout of each table, and the table of each entity tag.
        let layouts: [RowLayout]
        let layoutOfTag: [UInt32: Int]
        /// The columns of external data, each with its table, where a blob's bytes are found.
        let externalColumns: [(table: String, column: String)]
        /// The hash of the model version, which the history records with the values it keeps.
        let versionHash: String

        init(schema: ModelSchema, mapping: SchemaMapping, externalThreshold: Int) {
            self.schema = schema
            self.mapping = mapping
            versionHash = schema.versionHash
            layouts = mapping.tables.map { table in
                RowLayout(
                    table: table,
                    mapping: mapping,
                    schema: schema,
                    externalThreshold: externalThreshold
                )
            }
            var layoutOfTag: [UInt32: Int] = [:]
            var external: [(table: String, column: String)] = []
            for (index, layout) in layouts.enumerated() {
                for tag in layout.entities.keys { layoutOfTag[tag] = index }
                for field in layout.fields {
                    if case .external(let column) = field.source {
                        external.append((layout.table, column))
                    }
                }
            }
            self.layoutOfTag = layoutOfTag
            externalColumns = external
        }
    }

    /// The tables the store reads and writes now.
    var tables: Tables {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    /// Reads and writes the tables of `tables` from now on.
    func use(_ tables: Tables) {
        lock.lock()
        defer { lock.unlock() }
        current = tables
    }

    var schema: ModelSchema { tables.schema }
    var mapping: SchemaMapping { tables.mapping }
    var layouts: [RowLayout] { tables.layouts }
    var layoutOfTag: [UInt32: Int] { tables.layoutOfTag }
    var externalColumns: [(table: String, column: String)] { tables.externalColumns }

    /// Creates the store's tables in a database without them, in one transaction under an
    /// advisory lock (two processes opening a new database at once create them once); returns
    /// the schema whose tables the database holds.
    private static func prepareTables(
        _ connection: PostgresConnection,
        schema: ModelSchema,
        readOnly: Bool
    ) throws(PostgresError) -> ModelSchema {
        if let stored = try storedSchema(connection) {
            try upgradeCommitsTable(connection, readOnly: readOnly)
            if !readOnly { try addHistoryTable(connection) }
            return stored
        }
        guard !readOnly else {
            throw PostgresError(
                .statementFailed,
                "the database at \(connection.target) holds no ObjectLog store, and a read-only "
                    + "open creates none"
            )
        }
        try connection.execute("BEGIN")
        do {
            try connection.execute("SELECT pg_advisory_xact_lock(\(creationLock))")
            if let stored = try storedSchema(connection) {
                try connection.execute("COMMIT")
                return stored
            }
            let mapping = try SchemaMapping(schema)
            var statements = [
                "CREATE TABLE \(quoted(storeTable)) (id integer PRIMARY KEY CHECK (id = 1), "
                    + "next_key bigint NOT NULL, last_commit bigint NOT NULL, "
                    + "transactions bigint NOT NULL)",
                "INSERT INTO \(quoted(storeTable)) VALUES (1, 1, 0, 0)",
                "CREATE TABLE \(quoted(metadataTable)) (key text PRIMARY KEY, value bytea NOT NULL)",
                "CREATE TABLE \(quoted(versionsTable)) (\(quoted(SchemaMapping.keyColumn)) bigint "
                    + "PRIMARY KEY, \(quoted(SchemaMapping.versionColumn)) bigint NOT NULL, "
                    + "schema text NOT NULL)",
                // Each commit, and the objects it changed (see `CommitChanges`): what other
                // processes read when a commit is announced. The list is kept uncompressed:
                // it is written once and read soon, and compressing it costs more than it saves.
                "CREATE TABLE \(quoted(commitsTable)) (commit bigint PRIMARY KEY, "
                    + "date double precision NOT NULL, changes bytea NOT NULL)",
                "ALTER TABLE \(quoted(commitsTable)) ALTER COLUMN changes SET STORAGE EXTERNAL",
            ]
            statements += historyTableStatements
            statements += mapping.creationStatements
            statements += indexStatements(mapping, schema: schema)
            for statement in statements { try connection.execute(statement) }
            try connection.execute("COMMIT")
        } catch {
            _ = try? connection.execute("ROLLBACK")
            throw error
        }
        return schema
    }

    /// The indexes that reading relationships and external data needs: on every to-one
    /// column (a to-many's objects are found through their inverse's column), on the
    /// destinations of join tables, and on the digest of external data.
    static func indexStatements(_ mapping: SchemaMapping, schema: ModelSchema) -> [String] {
        mapping.tables.flatMap { indexStatements(for: $0, columns: nil, schema: schema) }
            + mapping.joinTables.map(indexStatement(for:))
    }

    /// The indexes of `table`'s `columns` (all of them when nil): see
    /// ``indexStatements(_:schema:)``.
    static func indexStatements(
        for table: SchemaMapping.Table,
        columns: Set<String>?,
        schema: ModelSchema
    ) -> [String] {
        var statements: [String] = []
        let entities = table.entities.values.compactMap { schema.entity(named: $0) }
        var seen: Set<String> = []
        for entity in entities {
            for property in entity.properties where seen.insert(property.name).inserted {
                guard columns?.contains(property.name) ?? true else { continue }
                if property.kind == .relationship, !property.isToMany {
                    statements.append(
                        "CREATE INDEX ON \(quoted(table.name)) (\(quoted(property.name)))"
                    )
                } else if property.kind == .attribute, property.isExternal, property.type == .data {
                    statements.append(
                        "CREATE INDEX ON \(quoted(table.name)) (sha256(\(quoted(property.name))))"
                    )
                }
            }
        }
        if columns == nil {
            statements += declaredIndexes(of: table, schema: schema).map(\.create)
        }
        return statements
    }

    /// The declared indexes (``ManagedObject/indexes``, `@Attribute(.indexed)`) of the
    /// entities whose rows `table` holds: each a B-tree index on its attributes' columns, in
    /// the declared order, named after the table and the columns so that a migration finds
    /// the ones the stored version made.
    ///
    /// The statements say `IF NOT EXISTS`: a migration creates every index of the new version,
    /// and one that a kept table already has stays as it is.
    static func declaredIndexes(
        of table: SchemaMapping.Table,
        schema: ModelSchema
    ) -> [(name: String, create: String)] {
        var found: [(name: String, create: String)] = []
        var seen: Set<String> = []
        for tag in table.entities.keys.sorted() {
            guard let entity = schema.entity(tag: tag) else { continue }
            for columns in entity.indexes {
                let name = declaredIndexName(table: table.name, columns: columns)
                guard seen.insert(name).inserted else { continue }
                let list = columns.map(quoted).joined(separator: ", ")
                found.append(
                    (
                        name,
                        "CREATE INDEX IF NOT EXISTS \(quoted(name)) ON \(quoted(table.name)) (\(list))"
                    )
                )
            }
        }
        return found
    }

    /// The name of a declared index: `objectlog_index_TABLE_COLUMNS`, or, past PostgreSQL's
    /// 63 bytes, its start and a hash of the whole.
    static func declaredIndexName(table: String, columns: [String]) -> String {
        let full = "objectlog_index_" + ([table] + columns).joined(separator: "_")
        guard full.utf8.count > 63 else { return full }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in full.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        let hex = String(hash, radix: 16)
        let start = String(decoding: full.utf8.prefix(63 - 17), as: UTF8.self)
        return start + "_" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The index of a join table's destinations.
    static func indexStatement(for join: SchemaMapping.JoinTable) -> String {
        "CREATE INDEX ON \(quoted(join.name)) (destination)"
    }

    /// Turns the changes table of a store made before a commit's changes were one value into
    /// a column of the commits table, in one transaction; a read-only open of such a store is
    /// refused, since it could not follow other processes' commits.
    private static func upgradeCommitsTable(
        _ connection: PostgresConnection,
        readOnly: Bool
    ) throws(PostgresError) {
        let former = try connection.execute(
            "SELECT to_regclass($1) IS NOT NULL",
            [quoted(formerChangesTable)]
        )
        guard former.rows.first?.first == "t" else { return }
        guard !readOnly else {
            throw PostgresError(
                .statementFailed,
                "the store at \(connection.target) keeps its commits in an earlier layout: open "
                    + "it once for writing to upgrade it"
            )
        }
        try connection.execute("BEGIN")
        do {
            try connection.execute(
                "ALTER TABLE \(quoted(commitsTable)) ADD COLUMN changes bytea NOT NULL "
                    + "DEFAULT ''::bytea"
            )
            try connection.execute(
                "ALTER TABLE \(quoted(commitsTable)) ALTER COLUMN changes SET STORAGE EXTERNAL"
            )
            try connection.execute("DROP TABLE \(quoted(formerChangesTable))")
            try connection.execute("COMMIT")
        } catch {
            _ = try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// The schema of the newest model version the database records; nil if it holds no store.
    private static func storedSchema(
        _ connection: PostgresConnection
    ) throws(PostgresError) -> ModelSchema? {
        let exists = try connection.execute(
            "SELECT to_regclass($1) IS NOT NULL",
            [quoted(versionsTable)]
        )
        guard exists.rows.first?.first == "t" else { return nil }
        let newest = try connection.execute(
            "SELECT schema FROM \(quoted(versionsTable)) ORDER BY "
                + "\(quoted(SchemaMapping.versionColumn)) DESC, \(quoted(SchemaMapping.keyColumn)) "
                + "DESC LIMIT 1"
        )
        guard let text = newest.rows.first?.first ?? nil else { return nil }
        do {
            return try ModelSchema.decode(json: Data(text.utf8))
        } catch {
            throw PostgresError(
                .statementFailed,
                "the store at \(connection.target) records a model version that cannot be read: "
                    + "\(error.message)"
            )
        }
    }

    deinit { listener?.stop() }

    package var capabilities: StoreCapabilities { [.history] }

    package var allowsPatches: Bool { false }

    /// Runs `body` with the connection, alone.
    func locked<Result>(
        _ body: (PostgresConnection) throws(PostgresError) -> Result
    ) throws(PostgresError) -> Result {
        lock.lock()
        defer { lock.unlock() }
        guard !isClosed else {
            throw PostgresError(.connectionLost, "the store at \(displayName) is closed")
        }
        return try body(connection)
    }

    /// Runs a save's `body` with the connection, alone.
    func lockedForSave<Result>(_ body: (PostgresConnection) throws -> Result) throws -> Result {
        lock.lock()
        defer { lock.unlock() }
        guard !isClosed else {
            throw PostgresError(.connectionLost, "the store at \(displayName) is closed")
        }
        return try body(connection)
    }

    /// Runs `body` with the listener, alone.
    func withListener<Result>(_ body: (inout CommitListener?) -> Result) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return body(&listener)
    }

    /// Whether commit `number` is this store's own (forgetting it: each is heard once).
    func claimOwnCommit(_ number: UInt64) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return ownCommits.remove(number) != nil
    }

    /// Runs `body` with the pending blobs, alone.
    func withPendingBlobs<Result>(_ body: (inout [BlobID: Data]) -> Result) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return body(&pendingBlobs)
    }

    package func close() throws {
        lock.lock()
        let listener = self.listener
        self.listener = nil
        guard !isClosed else {
            lock.unlock()
            return
        }
        isClosed = true
        pendingBlobs = [:]
        connection.close()
        lock.unlock()
        listener?.stop()
    }

    // MARK: Metadata, keys and versions

    // Read afresh each time: other processes change it.
    package var metadata: Metadata {
        get throws { try readMetadata() }
    }

    /// The committed metadata; a value that cannot be read is a ``PostgresError`` naming its
    /// key.
    package func readMetadata() throws(PostgresError) -> Metadata {
        let rows = try locked { connection throws(PostgresError) in
            try connection.execute(
                "SELECT key, value FROM \(quoted(Self.metadataTable)) ORDER BY key"
            ).rows
        }
        var metadata: Metadata = [:]
        for row in rows {
            // Each value is kept as the log's metadata coding of a dictionary of it alone.
            guard let key = row[0], let text = row[1],
                case .data(let bytes)? = ColumnValue.value(text, type: .data),
                let value = (try? MetadataCoding.decodeDictionary(Array(bytes)))?[key]
            else {
                throw PostgresError(
                    .statementFailed,
                    "the metadata value of key '\(row[0] ?? "")' cannot be read"
                )
            }
            metadata[key] = value
        }
        return metadata
    }

    package func allocateKeys(_ count: Int) throws -> ClosedRange<ObjectKey> {
        precondition(count > 0, "allocateKeys needs a positive count")
        let first = try locked { connection throws(PostgresError) in
            try connection.execute(
                "UPDATE \(quoted(Self.storeTable)) SET next_key = next_key + $1 "
                    + "RETURNING next_key - $1",
                [String(count)]
            ).rows.first?.first.flatMap { $0 }.flatMap { ObjectKey($0) }
        }
        guard let first else { throw PostgresError(.statementFailed, "the store row is missing") }
        return first...(first + UInt64(count) - 1)
    }

    package var transactionCount: UInt64 {
        get throws { try storeRow().transactions }
    }

    /// The store row: the last commit's number and the number of transactions.
    func storeRow() throws(PostgresError) -> (lastCommit: UInt64, transactions: UInt64) {
        let row = try locked { connection throws(PostgresError) in
            try connection.execute(
                "SELECT last_commit, transactions FROM \(quoted(Self.storeTable))"
            ).rows.first
        }
        guard let row, let last = row[0].flatMap({ UInt64($0) }),
            let transactions = row[1].flatMap({ UInt64($0) })
        else { throw PostgresError(.statementFailed, "the store row is missing") }
        return (last, transactions)
    }

    // Versions are commit numbers: the "end" is the number the next commit takes, and they
    // never move, so there is one generation.
    package var endAndGeneration: (end: UInt64, generation: UInt64) {
        get throws { (try storeRow().lastCommit + 1, 1) }
    }

    package var generation: UInt64 { 1 }

    package func translateOffset(_ offset: UInt64, from generation: UInt64, exact: Bool) -> UInt64?
    {
        generation == 1 ? offset : nil
    }

    package func finishCommit() {}

    // Rows are rewritten when the model changes, never read through an older version.
    package func installReading(of history: ModelHistory, pendingBoundary: UInt64?) {}
}
