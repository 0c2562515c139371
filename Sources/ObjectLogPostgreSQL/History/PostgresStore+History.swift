import Foundation
import ObjectLog
import ObjectLogStore

/// What a commit records in the history besides its changes: who made it, and whether its
/// objects' values are recorded.
struct HistoryNote {
    var author: String?
    var contextName: String?
    /// False for a migration: its rows are rewritten into another model version, and the
    /// history records only that the model changed, as the log's does.
    var recordsValues = true

    init(author: String? = nil, contextName: String? = nil, recordsValues: Bool = true) {
        self.author = author
        self.contextName = contextName
        self.recordsValues = recordsValues
    }
}

/// One commit on its way into the history.
struct HistoryEntry {
    var number: UInt64
    var date: Date
    var changes: [Transaction.Change]
    /// The values the updated and deleted objects had before, by key.
    var before: [ObjectKey: [UInt8]]?
    var note: HistoryNote
}

// The history of a PostgreSQL store is a table, `objectlog_history`, with a row per
// transaction written in the transaction's own SQL transaction: its number, date, author,
// context name, whether it changed the model, the model version its values are in, and its
// changes with their values before and after (``HistoryChanges``).
//
// Unlike the log, whose records are its history for free, rows hold only the latest values,
// so keeping history costs each save a read of the rows it replaces and a row of its own. As
// Core Data's persistent history tracking, it is therefore recorded only when a retention
// asks for it: under the default, `untilCompaction` (a PostgreSQL store never compacts), the
// table stays empty. External data that a transaction replaces or deletes is copied, before
// its rows change, into `objectlog_history_blobs` with the transaction's number, so that the
// old values the history gives (and a pinned context reads) keep their bytes; it goes when the
// transaction's row goes. The retention is the store's metadata, which every process reads under
// the store row's lock, so all processes record alike; a commit drops, in the same statement
// that records it, the rows its retention and the metadata's purge floor no longer keep.
extension PostgresStore {
    static let historyTable = "objectlog_history"
    static let historyBlobsTable = "objectlog_history_blobs"

    /// The statements that create the history table.
    static var historyTableStatements: [String] {
        [
            "CREATE TABLE \(quoted(historyTable)) (number bigint PRIMARY KEY, "
                + "date double precision NOT NULL, author text, context_name text, "
                + "changes_model boolean NOT NULL, model_hash text NOT NULL, "
                + "changes bytea NOT NULL)",
            // Written once and read rarely: compressing it would cost each save more.
            "ALTER TABLE \(quoted(historyTable)) ALTER COLUMN changes SET STORAGE EXTERNAL",
            // Found by digest, as the tables' external data is.
            "CREATE TABLE \(quoted(historyBlobsTable)) (digest bytea NOT NULL, "
                + "number bigint NOT NULL, bytes bytea NOT NULL, PRIMARY KEY (digest, number))",
        ]
    }

    /// Adds the history table to a store made before the history was kept, in one
    /// transaction under the creation lock (processes opening it at once add it once).
    static func addHistoryTable(_ connection: PostgresConnection) throws(PostgresError) {
        guard try !hasHistoryTable(connection) else { return }
        try connection.execute("BEGIN")
        do {
            try connection.execute("SELECT pg_advisory_xact_lock(\(creationLock))")
            if try !hasHistoryTable(connection) {
                for statement in historyTableStatements { try connection.execute(statement) }
            }
            try connection.execute("COMMIT")
        } catch {
            _ = try? connection.execute("ROLLBACK")
            throw error
        }
    }

    static func hasHistoryTable(_ connection: PostgresConnection) throws(PostgresError) -> Bool {
        try connection.execute("SELECT to_regclass($1) IS NOT NULL", [quoted(historyTable)])
            .rows.first?.first == "t"
    }

    /// Whether a commit under `retention` is recorded: keeping the last 0 transactions keeps
    /// nothing.
    static func records(_ retention: LogHistoryRetention) -> Bool {
        switch retention {
        case .none, .transactions(0): false
        case .all, .transactions, .seconds: true
        }
    }

    /// The retention of a metadata value as the metadata table keeps it (see
    /// ``readMetadata()``); no value is the default.
    static func retention(stored text: String?) throws(PostgresError) -> LogHistoryRetention {
        guard let text else { return .none }
        guard case .data(let bytes)? = ColumnValue.value(text, type: .data),
            let metadata = try? MetadataCoding.decodeDictionary(Array(bytes))
        else {
            throw PostgresError(
                .statementFailed,
                "the metadata value of key '\(LogStore.historyRetentionKey)' cannot be read"
            )
        }
        return LogHistoryRetention(metadata)
    }

    /// The values the objects that `changes` update or delete have now, within the commit's
    /// SQL transaction (the store row's lock keeps other saves out): the history's old
    /// values.
    ///
    /// The external data those values name and the transaction replaces or deletes is copied
    /// into the history's own table, under the transaction's `number`, before the rows change.
    func valuesBefore(
        _ changes: [Transaction.Change],
        number: UInt64,
        note: HistoryNote
    ) throws(PostgresError) -> [ObjectKey: [UInt8]] {
        guard note.recordsValues else { return [:] }
        let replaced = changes.filter {
            !$0.isInsert && $0.entity != ModelHistory.schemaEntityTag
        }
        guard !replaced.isEmpty else { return [:] }
        var before: [ObjectKey: [UInt8]] = [:]
        for record in try records(keys: replaced.map(\.key)) { before[record.key] = record.payload }
        try keepReplacedBlobs(of: replaced, before: before, number: number)
        return before
    }

    /// Copies the external data that the old values of `replaced` name, and that their new
    /// values no longer do, into the history's blob table.
    func keepReplacedBlobs(
        of replaced: [Transaction.Change],
        before: [ObjectKey: [UInt8]],
        number: UInt64
    ) throws(PostgresError) {
        guard !externalColumns.isEmpty else { return }
        func blobs(_ payload: [UInt8], of tag: EntityTag) -> Set<BlobID> {
            guard let index = layoutOfTag[tag], let (entity, _) = layouts[index].entities[tag],
                let values = try? payload.withUnsafeBytes({ bytes throws(ObjectLogError) in
                    try StoreInspector.decode(payload: bytes, entity: entity)
                })
            else { return [] }
            var found: Set<BlobID> = []
            for case (_, .externalData(let id, _)) in values { found.insert(id) }
            return found
        }
        var kept: [String: (keys: [ObjectKey], digests: Set<BlobID>)] = [:]
        for change in replaced {
            guard let old = before[change.key], let index = layoutOfTag[change.entity] else {
                continue
            }
            let layout = layouts[index]
            guard
                layout.fields.contains(where: {
                    if case .external = $0.source { true } else { false }
                })
            else { continue }
            var gone = blobs(old, of: change.entity)
            if !change.isDelete { gone.subtract(blobs(change.payload, of: change.entity)) }
            guard !gone.isEmpty else { continue }
            kept[layout.table, default: ([], [])].keys.append(change.key)
            kept[layout.table]!.digests.formUnion(gone)
        }
        let key = quoted(SchemaMapping.keyColumn)
        for (table, column) in externalColumns {
            guard let (keys, digests) = kept[table] else { continue }
            try connection.execute(
                "INSERT INTO \(quoted(Self.historyBlobsTable)) SELECT sha256(c), $1, c FROM "
                    + "(SELECT \(quoted(column)) AS c FROM \(quoted(table)) WHERE \(key) = "
                    + "ANY($2::bigint[])) s WHERE encode(sha256(c), 'hex') = ANY($3::text[]) "
                    + "ON CONFLICT DO NOTHING",
                [
                    String(number), Self.array(keys),
                    "{" + digests.map(\.hex).joined(separator: ",") + "}",
                ]
            )
        }
    }

    /// The bytes of external data that only the history keeps; nil when it has none of `id`.
    func historyBlob(_ id: BlobID) throws(PostgresError) -> Data? {
        let digest = try ColumnValue.parameter(.data(Data(id.bytes)), type: .data)
        let text = try locked { connection throws(PostgresError) in
            guard try Self.hasHistoryTable(connection) else { return nil as String? }
            return try connection.execute(
                "SELECT bytes FROM \(quoted(Self.historyBlobsTable)) WHERE digest = $1::bytea "
                    + "LIMIT 1",
                [digest]
            ).rows.first?.first ?? nil
        }
        guard let text, case .data(let bytes)? = ColumnValue.value(text, type: .data) else {
            return nil
        }
        return bytes
    }

    /// Records `entry` when `retention` keeps history, and drops what it no longer keeps;
    /// empties the history when a commit sets a retention that keeps none.
    func recordHistory(
        _ entry: HistoryEntry,
        retention: LogHistoryRetention,
        metadata: Metadata?
    ) throws(PostgresError) {
        guard Self.records(retention), let before = entry.before else {
            if metadata != nil {
                try connection.execute("DELETE FROM \(quoted(Self.historyTable))")
                try connection.execute("DELETE FROM \(quoted(Self.historyBlobsTable))")
            }
            return
        }
        var changes: [StoreHistory.Change] = []
        var changesModel = false
        for change in entry.changes {
            if change.entity == ModelHistory.schemaEntityTag {
                changesModel = true
                continue
            }
            guard entry.note.recordsValues else { continue }
            // An update of a row that no longer exists puts it back: an insert.
            let kind: StoreHistory.Change.Kind =
                change.isDelete
                ? .delete : change.isInsert || before[change.key] == nil ? .insert : .update
            changes.append(
                StoreHistory.Change(
                    key: change.key,
                    entity: change.entity,
                    kind: kind,
                    before: kind == .insert ? nil : before[change.key],
                    after: kind == .delete ? nil : change.payload
                )
            )
        }
        var dropsThrough = metadata.map(LogStore.historyFloor) ?? 0
        var cutoff = -Double.greatestFiniteMagnitude
        switch retention {
        case .transactions(let count):
            dropsThrough = max(dropsThrough, entry.number > count ? entry.number - count : 0)
        case .seconds(let seconds):
            cutoff = entry.date.timeIntervalSinceReferenceDate - seconds
        case .none, .all:
            break
        }
        let table = quoted(Self.historyTable)
        _ = try connection.query(
            "WITH dropped AS (DELETE FROM \(table) WHERE number <= $1 OR date < $2 RETURNING "
                + "number), blobs AS (DELETE FROM \(quoted(Self.historyBlobsTable)) WHERE number "
                + "IN (SELECT number FROM dropped)) INSERT INTO \(table) VALUES ($3, $4, $5, $6, "
                + "$7, $8, $9)",
            [
                .text(String(dropsThrough)), .text(String(cutoff)), .text(String(entry.number)),
                .text(String(entry.date.timeIntervalSinceReferenceDate)),
                entry.note.author.map(PostgresParameter.text),
                entry.note.contextName.map(PostgresParameter.text),
                .text(changesModel ? "true" : "false"), .text(tables.versionHash),
                .binary(HistoryChanges.encode(changes)),
            ]
        ) { _ in }
    }

    // MARK: Reading

    package func history(after number: UInt64, limit: Int) throws -> StoreHistory? {
        try readingHistory { connection, latest, earliest throws(PostgresError) in
            guard number < latest else {
                return StoreHistory(transactions: [], earliest: earliest, latest: latest)
            }
            let transactions = try historyRows(
                connection,
                where: "number > $1 ORDER BY number LIMIT $2",
                [String(number), String(max(0, min(limit, Int(Int64.max))))]
            )
            return StoreHistory(transactions: transactions, earliest: earliest, latest: latest)
        }
    }

    /// Runs `body` in one read-only snapshot of the database with the number of the last
    /// transaction and the last one whose changes the history no longer has.
    private func readingHistory<Result>(
        _ body: (PostgresConnection, _ latest: UInt64, _ earliest: UInt64) throws(PostgresError)
            -> Result
    ) throws(PostgresError) -> Result {
        try locked { connection throws(PostgresError) in
            try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            do throws(PostgresError) {
                let latest = try storeRow().transactions
                // A store opened read-only may predate the table; it then has no history.
                var earliest = latest
                if try Self.hasHistoryTable(connection) {
                    let row = try connection.execute(
                        "SELECT min(number) FROM \(quoted(Self.historyTable))"
                    ).rows.first
                    if let first = row?.first.flatMap({ $0 }).flatMap({ UInt64($0) }) {
                        earliest = max(first - 1, LogStore.historyFloor(try readMetadata()))
                    }
                }
                let result = try body(connection, latest, earliest)
                try connection.execute("COMMIT")
                return result
            } catch {
                _ = try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// The history's transactions that `condition` selects, in its order.
    private func historyRows(
        _ connection: PostgresConnection,
        where condition: String,
        _ parameters: [String]
    ) throws(PostgresError) -> [StoreHistory.Transaction] {
        let currentHash = tables.versionHash
        return try connection.query(
            "SELECT number, date, author, context_name, changes_model, model_hash, changes "
                + "FROM \(quoted(Self.historyTable)) WHERE \(condition)",
            parameters.map(PostgresParameter.text)
        ) { rows throws(PostgresError) in
            var transactions: [StoreHistory.Transaction] = []
            transactions.reserveCapacity(rows.count)
            for index in 0..<rows.count {
                let row = rows.row(index)
                func text(_ column: Int) -> String? {
                    row.value(column).map { String(decoding: $0, as: UTF8.self) }
                }
                guard let number = row.int64(0), number > 0,
                    let date = row.value(1), date.count == 8,
                    let changesModel = row.value(4), changesModel.count == 1,
                    let hash = text(5), let list = row.value(6),
                    let changes = HistoryChanges.decode(list)
                else {
                    throw RowLayout.corrupt(Self.historyTable, "a row that cannot be read")
                }
                let seconds = Double(
                    bitPattern: UInt64(bigEndian: date.loadUnaligned(as: UInt64.self))
                )
                transactions.append(
                    StoreHistory.Transaction(
                        number: UInt64(number),
                        date: Date(timeIntervalSinceReferenceDate: seconds),
                        changes: changes,
                        changesModel: changesModel[0] != 0,
                        modelHash: hash == currentHash ? nil : hash,
                        author: text(2),
                        contextName: text(3)
                    )
                )
            }
            return transactions
        }
    }

    // MARK: Pinned reads

    // The state as of `number` is the rows of now with every later transaction undone, newest
    // first: an insert's object removed, an update's or a delete's put back as it was before.
    // It is built once, in memory, from one snapshot of the database.
    package func snapshot(asOf number: UInt64) throws -> (any PersistentStore)? {
        let objects = try readingHistory {
            connection,
            latest,
            earliest throws(PostgresError)
                -> Result<[ObjectKey: (entity: EntityTag, payload: [UInt8])], ObjectLogError> in
            guard number <= latest else {
                return .failure(
                    ObjectLogError(
                        .invalidArgument,
                        "transaction \(number) is not committed yet: the store's last is "
                            + "transaction \(latest)"
                    )
                )
            }
            guard number >= earliest else {
                return .failure(
                    ObjectLogError(
                        .historyExpired,
                        "the history after transaction \(number) is gone: the store keeps it "
                            + "from transaction \(earliest + 1) (see its history retention)"
                    )
                )
            }
            let later = try historyRows(
                connection,
                where: "number > $1 ORDER BY number DESC",
                [String(number)]
            )
            if let migration = later.first(where: \.changesModel) {
                return .failure(
                    ObjectLogError(
                        .unsupported,
                        "transaction \(migration.number) migrated the model since transaction "
                            + "\(number): a state before a migration cannot be read"
                    )
                )
            }
            var objects: [ObjectKey: (entity: EntityTag, payload: [UInt8])] = [:]
            for layout in layouts {
                for record in try records(of: layout, where: "true", []) {
                    objects[record.key] = (record.entity, record.payload)
                }
            }
            for transaction in later {
                for change in transaction.changes.reversed() {
                    switch change.kind {
                    case .insert:
                        objects[change.key] = nil
                    case .update, .delete:
                        guard let before = change.before else {
                            throw RowLayout.corrupt(
                                Self.historyTable,
                                "transaction \(transaction.number) lacks the old values of "
                                    + "object \(change.key)"
                            )
                        }
                        objects[change.key] = (change.entity, before)
                    }
                }
            }
            return .success(objects)
        }
        return pinnedState(of: self, asOf: number, objects: try objects.get())
    }
}
