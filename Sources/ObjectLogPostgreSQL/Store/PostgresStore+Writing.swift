import Foundation
import ObjectLog
import ObjectLogStore

extension PostgresStore {
    /// Rows a multi-row `INSERT` holds at most (PostgreSQL takes at most 65,535 parameters in
    /// one statement).
    static let maximumParameters = 65_535
    /// The fewest updated rows of one entity that a save copies in rather than lists as
    /// parameters (below it, creating the table to copy into costs more than it saves).
    static let stagedUpdateMinimum = 64

    package func commitSave(
        _ transaction: Transaction,
        checking locks: [StoreLockCheck]
    ) throws -> StoreCommit {
        if isReadOnly {
            throw PostgresError(.statementFailed, "the store at \(displayName) is open read-only")
        }
        let note = HistoryNote(author: transaction.author, contextName: transaction.contextName)
        let info = try inCommitTransaction {
            try write(transaction, metadata: transaction.metadata, locks: locks, note: note)
        }
        withPendingBlobs { pending in
            for blobs in transaction.blobLists.values { for blob in blobs { pending[blob] = nil } }
        }
        // The next commit, of any process, takes the next number.
        return StoreCommit(info: info, end: info.offset + 1, generation: 1)
    }

    /// Runs `body`, the statements of a commit, in one SQL transaction on the connection
    /// alone: committed when it returns, rolled back when it throws (a uniqueness violation
    /// then thrown as the engine reports one).
    func inCommitTransaction<Result>(_ body: () throws -> Result) throws -> Result {
        try lockedForSave { connection in
            try connection.execute("BEGIN")
            do {
                takenCommit = nil
                let result = try body()
                try connection.execute("COMMIT")
                takenCommit = nil
                return result
            } catch let error as PostgresError {
                rollBack()
                throw violation(error) ?? error
            } catch {
                rollBack()
                throw error
            }
        }
    }

    /// Rolls back a save: its commit number goes to the next save, of any process, and is no
    /// longer this store's own.
    private func rollBack() {
        _ = try? connection.execute("ROLLBACK")
        if let taken = takenCommit { ownCommits.remove(taken) }
        takenCommit = nil
    }

    /// A uniqueness constraint's violation as the engine reports one: the constraint's entity
    /// and attributes, and the values PostgreSQL names.
    private func violation(_ error: PostgresError) -> ObjectLogError? {
        guard error.isUniqueViolation, let name = error.constraint,
            let (entity, attributes) = mapping.constraint(named: name)
        else { return nil }
        return ObjectLogError(
            .uniqueness,
            "uniqueness constraint of '\(entity)' on "
                + attributes.map { "'\($0)'" }.joined(separator: ", ")
                + " violated: another process saved an object with the same values"
                + (error.detail.map { " (\($0))" } ?? ""),
            property: attributes.joined(separator: ",")
        )
    }

    /// The statements of one save, within its SQL transaction, and its history when the
    /// store's retention keeps one (``HistoryNote`` says what it records).
    ///
    /// The puts are read where the transaction packed them: a save of a million objects would
    /// otherwise copy each payload into an array of its own first. Only the history, when the
    /// store keeps one, takes the changes as copies.
    func write(
        _ transaction: Transaction,
        metadata: Metadata?,
        locks: [StoreLockCheck],
        note: HistoryNote
    ) throws -> CommitInfo {
        let entries = transaction.entries
        let (version, number, storedRetention) = try takeCommitNumber()
        if !locks.isEmpty {
            let current = try recordOffsetsAndGeneration(of: locks.map(\.key)).offsets
            let broken = zip(locks, current).filter { !$0.holds(current: $1) }.map(\.0.key)
            if !broken.isEmpty { throw StoreConflict(keys: broken) }
        }
        // The retention this commit leaves the store with decides whether it is recorded.
        let retention = metadata.map(LogHistoryRetention.init) ?? storedRetention
        let changes = Self.records(retention) ? transaction.changes : []
        let before =
            Self.records(retention)
            ? try valuesBefore(changes, number: number, note: note) : nil
        var counts = (inserted: 0, updated: 0, deleted: 0)
        let hasDeletes = entries.contains(where: \.isDelete)
        if hasDeletes {
            try deleteRows(
                entries.lazy.filter(\.isDelete).map { ($0.key, $0.entity) },
                counted: &counts.deleted
            )
        }
        // The puts, by index in the transaction's entries.
        let puts =
            hasDeletes ? entries.indices.filter { !entries[$0].isDelete } : Array(entries.indices)
        if entries.contains(where: \.isPatch) {
            throw PostgresError(.invalidParameter, "a PostgreSQL store holds no patches")
        }
        var lists: [(field: RowLayout.Field, key: ObjectKey, keys: [ObjectKey])] = []
        var start = 0
        while start < puts.count {
            let entity = entries[puts[start]].entity
            var end = start + 1
            while end < puts.count, entries[puts[end]].entity == entity { end += 1 }
            try writeRows(puts[start..<end], of: transaction, version: version, lists: &lists)
            start = end
        }
        for index in puts {
            if entries[index].isInsert { counts.inserted += 1 } else { counts.updated += 1 }
        }
        try writeLists(lists)
        if let metadata { try writeMetadata(metadata) }
        let date = Date()
        try recordChanges(entries, commit: version, date: date)
        try recordHistory(
            HistoryEntry(number: number, date: date, changes: changes, before: before, note: note),
            retention: retention,
            metadata: metadata
        )
        return CommitInfo(
            number: number,
            offset: version,
            date: date,
            inserted: counts.inserted,
            updated: counts.updated,
            deleted: counts.deleted
        )
    }

    /// Takes the next commit number, within a save's SQL transaction; returns it (the version
    /// of every row the save writes), the store's count of transactions (this transaction's
    /// number), and the history retention the store's metadata sets.
    func takeCommitNumber() throws(PostgresError) -> (
        version: UInt64, number: UInt64, retention: LogHistoryRetention
    ) {
        // The store row's lock orders the saves of every process; its new commit number is
        // the version of every row this save writes. The retention comes with it, read under
        // that lock: no other save changes it before this one commits.
        let row = try connection.execute(
            "UPDATE \(quoted(Self.storeTable)) SET last_commit = last_commit + 1, "
                + "transactions = transactions + 1 RETURNING last_commit, transactions, "
                + "(SELECT value FROM \(quoted(Self.metadataTable)) WHERE key = $1)",
            [LogStore.historyRetentionKey]
        ).rows.first
        guard let version = row?[0].flatMap({ UInt64($0) }),
            let number = row?[1].flatMap({ UInt64($0) })
        else { throw PostgresError(.statementFailed, "the store row is missing") }
        let retention = try Self.retention(stored: row?[2] ?? nil)
        // Noted before the commit: the listener may hear of it as soon as it commits. (A save
        // rolled back gives its number back, and forgets it: see `commitSave`.)
        ownCommits.insert(version)
        takenCommit = version
        return (version, number, retention)
    }

    /// Deletes the rows of `deletes`, each an object's key and entity.
    private func deleteRows(
        _ deletes: some Sequence<(key: ObjectKey, entity: EntityTag)>,
        counted: inout Int
    ) throws(PostgresError) {
        var byTable: [String: [ObjectKey]] = [:]
        for (key, entity) in deletes {
            let table =
                entity == ModelHistory.schemaEntityTag
                ? Self.versionsTable : layoutOfTag[entity].map { layouts[$0].table }
            guard let table else {
                throw PostgresError(.invalidParameter, "entity \(entity) has no table")
            }
            byTable[table, default: []].append(key)
            counted += 1
        }
        for (table, keys) in byTable.sorted(by: { $0.key < $1.key }) {
            try connection.execute(
                "DELETE FROM \(quoted(table)) WHERE \(quoted(SchemaMapping.keyColumn)) = "
                    + "ANY($1::bigint[])",
                [Self.array(keys)]
            )
        }
    }

    /// Writes the rows of puts of one entity, and collects the to-many lists this side of
    /// each relationship writes.
    ///
    /// The puts are indices in `transaction`'s entries. New objects are copied in; changed
    /// ones are written by `INSERT … ON CONFLICT DO UPDATE`.
    private func writeRows(
        _ puts: ArraySlice<Int>,
        of transaction: Transaction,
        version: UInt64,
        lists: inout [(field: RowLayout.Field, key: ObjectKey, keys: [ObjectKey])]
    ) throws(PostgresError) {
        let entries = transaction.entries
        guard let tag = puts.first.map({ entries[$0].entity }) else { return }
        if tag == ModelHistory.schemaEntityTag {
            for put in puts.map(transaction.change(at:)) {
                try connection.execute(
                    "INSERT INTO \(quoted(Self.versionsTable)) VALUES ($1, $2, $3) ON CONFLICT "
                        + "(\(quoted(SchemaMapping.keyColumn))) DO UPDATE SET "
                        + "\(quoted(SchemaMapping.versionColumn)) = EXCLUDED."
                        + "\(quoted(SchemaMapping.versionColumn)), schema = EXCLUDED.schema",
                    [
                        String(put.key), String(version),
                        String(decoding: put.payload, as: UTF8.self),
                    ]
                )
            }
            return
        }
        guard let index = layoutOfTag[tag], let (entity, fields) = layouts[index].entities[tag]
        else { throw PostgresError(.invalidParameter, "entity \(tag) has no table") }
        let layout = layouts[index]
        var columns = [
            SchemaMapping.keyColumn, SchemaMapping.entityColumn, SchemaMapping.versionColumn,
        ]
        for field in fields.map({ layout.fields[$0] }) {
            switch field.source {
            case .column(let name), .external(let name): columns.append(name)
            case .inverseColumn, .join: break
            }
        }
        // The columns' values of each put, and the to-many lists this side writes.
        func row(of put: Transaction.Change) throws(PostgresError) -> [String?] {
            let values: [(name: String, value: StoredValue)]
            do {
                values = try put.payload.withUnsafeBytes { payload throws(ObjectLogError) in
                    try StoreInspector.decode(payload: payload, entity: entity)
                }
            } catch {
                throw PostgresError(.invalidParameter, "object \(put.key): \(error)")
            }
            var row: [String?] = [String(put.key), String(tag), String(version)]
            row.reserveCapacity(columns.count)
            for (position, property) in entity.properties.enumerated() {
                let value = values[position].value
                let field = layout.fields[fields[position]]
                switch field.source {
                case .column:
                    row.append(
                        try ColumnValue.parameter(
                            value,
                            type: property.kind == .attribute ? property.type : nil
                        )
                    )
                case .external:
                    row.append(try externalParameter(value))
                case .inverseColumn(_, _, let position):
                    if position != nil, case .toMany(let keys) = value {
                        lists.append((field, put.key, keys))
                    }
                case .join(let table, let isSource, _):
                    let writes =
                        mapping.joinTables.first { $0.name == table }?.writtenFromSource == isSource
                    if writes, case .toMany(let keys) = value {
                        lists.append((field, put.key, keys))
                    }
                }
            }
            return row
        }
        let columnList = columns.map(quoted).joined(separator: ", ")
        // New objects, whose keys no row has, are copied in, in binary straight from their
        // payloads: the cheapest way into a table PostgreSQL has.
        // A save of new objects only, the common large one, copies them without a filtered
        // copy of its changes.
        let onlyInserts = puts.allSatisfy { entries[$0].isInsert }
        let inserts = onlyInserts ? puts : ArraySlice(puts.filter { entries[$0].isInsert })
        if !inserts.isEmpty {
            try copyRows(
                inserts,
                of: transaction,
                tag: tag,
                layout: layout,
                statement:
                    "COPY \(quoted(layout.table)) (\(columnList)) FROM STDIN (FORMAT binary)",
                width: columns.count,
                version: version,
                lists: &lists
            )
        }
        guard !onlyInserts else { return }
        let updates = puts.filter { !entries[$0].isInsert }
        guard !updates.isEmpty else { return }
        let assignments = columns.dropFirst().map { "\(quoted($0)) = EXCLUDED.\(quoted($0))" }
        let upsert =
            "ON CONFLICT (\(quoted(SchemaMapping.keyColumn))) DO UPDATE SET "
            + assignments.joined(separator: ", ")
        // Many changed rows are copied, in binary, into a table of this transaction's, and
        // written from there by one statement: a parameter list costs the client its text and
        // the server its parsing, for every value.
        if updates.count >= Self.stagedUpdateMinimum {
            let staging = quoted("objectlog_staging")
            try connection.execute(
                "CREATE TEMPORARY TABLE \(staging) (LIKE \(quoted(layout.table)) INCLUDING "
                    + "DEFAULTS) ON COMMIT DROP"
            )
            try copyRows(
                updates[...],
                of: transaction,
                tag: tag,
                layout: layout,
                statement: "COPY \(staging) (\(columnList)) FROM STDIN (FORMAT binary)",
                width: columns.count,
                version: version,
                lists: &lists
            )
            try connection.execute(
                "INSERT INTO \(quoted(layout.table)) (\(columnList)) SELECT \(columnList) FROM "
                    + "\(staging) \(upsert)"
            )
            try connection.execute("DROP TABLE \(staging)")
            return
        }
        var parameters: [String?] = []
        var rows = 0
        func flush() throws(PostgresError) {
            guard rows > 0 else { return }
            let width = columns.count
            let values = (0..<rows).map { row in
                "(" + (1...width).map { "$\(row * width + $0)" }.joined(separator: ", ") + ")"
            }
            try connection.execute(
                "INSERT INTO \(quoted(layout.table)) (\(columnList))"
                    + " VALUES \(values.joined(separator: ", ")) \(upsert)",
                parameters
            )
            parameters.removeAll(keepingCapacity: true)
            rows = 0
        }
        for put in updates.map(transaction.change(at:)) {
            parameters += try row(of: put)
            rows += 1
            if (rows + 1) * columns.count > Self.maximumParameters { try flush() }
        }
        try flush()
    }

    /// Copies the rows of `puts` (by index in `transaction`'s entries), all of entity `tag`,
    /// into `layout`'s table with `statement` (a binary `COPY` of `width` columns: key,
    /// entity, version, then each column of the entity's properties in their order), and
    /// collects the to-many lists they write.
    ///
    /// Rows are made while the copy runs, a megabyte at a time, so that the server stores one
    /// part while the next is made.
    private func copyRows(
        _ puts: ArraySlice<Int>,
        of transaction: Transaction,
        tag: UInt32,
        layout: RowLayout,
        statement: String,
        width: Int,
        version: UInt64,
        lists: inout [(field: RowLayout.Field, key: ObjectKey, keys: [ObjectKey])]
    ) throws(PostgresError) {
        guard let (entity, fields) = layout.entities[tag], let columns = layout.binaryColumns[tag]
        else { throw PostgresError(.invalidParameter, "entity \(tag) has no table") }
        let blobs = try externalBytes(of: puts, in: transaction, entity: entity, columns: columns)
        let writesList = fields.map { index -> Bool in
            switch layout.fields[index].source {
            case .inverseColumn(_, _, let position): return position != nil
            case .join(let table, let isSource, _):
                return mapping.joinTables.first { $0.name == table }?.writtenFromSource == isSource
            case .column, .external: return false
            }
        }
        let entries = transaction.entries
        var next = puts.startIndex
        var started = false
        // The payloads are read where the transaction packed them; each call of the copy's
        // closure appends the rows of the next megabyte's worth of puts.
        let copied: Result<Void, PostgresError> = transaction.records.withUnsafeBytes { records in
            Result { () throws(PostgresError) in
                try connection.copyIn(statement) { buffer throws(PostgresError) in
                    if !started {
                        // The signature ("PGCOPY\n\xFF\r\n\0"), the flags, and the header extension's
                        // length.
                        buffer.append(contentsOf: [
                            0x50, 0x47, 0x43, 0x4F, 0x50, 0x59, 0x0A, 0xFF, 0x0D,
                        ])
                        buffer.append(contentsOf: [0x0A, 0x00, 0, 0, 0, 0, 0, 0, 0, 0])
                        started = true
                    }
                    while next < puts.endIndex, buffer.count < 1 << 20 {
                        let entry = entries[puts[next]]
                        next += 1
                        buffer.append(bigEndian: Int16(width))
                        buffer.append(bigEndian: Int32(8))
                        buffer.append(bigEndian: Int64(entry.key))
                        buffer.append(bigEndian: Int32(4))
                        buffer.append(bigEndian: Int32(bitPattern: tag))
                        buffer.append(bigEndian: Int32(8))
                        buffer.append(bigEndian: Int64(version))
                        var reader = PayloadReader(
                            UnsafeRawBufferPointer(rebasing: records[entry.valueRange])
                        )
                        do {
                            guard try reader.readVarint() == UInt64(columns.count) else {
                                throw PostgresError(
                                    .invalidParameter,
                                    "object \(entry.key): a payload of another model version"
                                )
                            }
                            for position in columns.indices {
                                if let column = columns[position] {
                                    try column.appendField(from: &reader, to: &buffer) {
                                        id throws(PostgresError) in
                                        guard let bytes = blobs[id] else {
                                            throw PostgresError(
                                                .invalidParameter,
                                                "external data \(id.hex) is missing"
                                            )
                                        }
                                        return bytes
                                    }
                                    continue
                                }
                                let count = try reader.readVarint()
                                var keys: [ObjectKey] = []
                                keys.reserveCapacity(Int(min(count, 1 << 16)))
                                for _ in 0..<count { keys.append(try reader.readVarint()) }
                                if writesList[position] {
                                    lists.append((layout.fields[fields[position]], entry.key, keys))
                                }
                            }
                        } catch let error as PostgresError {
                            throw error
                        } catch {
                            throw PostgresError(.invalidParameter, "object \(entry.key): \(error)")
                        }
                    }
                    guard next == puts.endIndex else { return true }
                    buffer.append(bigEndian: Int16(-1))
                    return false
                }
            }
        }
        try copied.get()
    }

    /// The bytes of the external data `puts` refer to, read before a copy starts: reading data
    /// saved before takes this connection, which runs nothing else while it copies.
    private func externalBytes(
        of puts: ArraySlice<Int>,
        in transaction: Transaction,
        entity: ModelSchema.Entity,
        columns: [BinaryColumn?]
    ) throws(PostgresError) -> [BlobID: Data] {
        guard columns.contains(where: { $0?.isExternal == true }) else { return [:] }
        var blobs: [BlobID: Data] = [:]
        for put in puts.map(transaction.change(at:)) {
            let values: [(name: String, value: StoredValue)]
            do {
                values = try put.payload.withUnsafeBytes { payload throws(ObjectLogError) in
                    try StoreInspector.decode(payload: payload, entity: entity)
                }
            } catch {
                throw PostgresError(.invalidParameter, "object \(put.key): \(error)")
            }
            for case (_, .externalData(let id, _)) in values where blobs[id] == nil {
                do {
                    blobs[id] = try readBlob(id)
                } catch let error as PostgresError {
                    throw error
                } catch {
                    throw PostgresError(.invalidParameter, "external data \(id.hex) is missing")
                }
            }
        }
        return blobs
    }

    /// The parameter of an external data value: its bytes, from this save's blobs or from
    /// the row that holds them already.
    private func externalParameter(_ value: StoredValue) throws(PostgresError) -> String? {
        switch value {
        case .null: return nil
        case .data: return try ColumnValue.parameter(value, type: .data)
        case .externalData(let id, _):
            let bytes: Data
            do {
                bytes = try readBlob(id)
            } catch let error as PostgresError {
                throw error
            } catch {
                throw PostgresError(.invalidParameter, "external data \(id.hex) is missing")
            }
            return try ColumnValue.parameter(.data(bytes), type: .data)
        default:
            throw PostgresError(.invalidParameter, "\(value) is not data")
        }
    }

    /// Writes ordered to-many positions into their inverse's table, and the rows of join
    /// tables, once every row of the save is in place.
    private func writeLists(
        _ lists: [(field: RowLayout.Field, key: ObjectKey, keys: [ObjectKey])]
    ) throws(PostgresError) {
        let key = quoted(SchemaMapping.keyColumn)
        for (field, owner, keys) in lists {
            switch field.source {
            case .inverseColumn(let table, _, let position?):
                try connection.execute(
                    "UPDATE \(quoted(table)) d SET \(quoted(position)) = u.n FROM "
                        + "unnest($1::bigint[]) WITH ORDINALITY AS u(k, n) WHERE d.\(key) = u.k",
                    [Self.array(keys)]
                )
            case .join(let table, let isSource, let isOrdered):
                let this = isSource ? "source" : "destination"
                let other = isSource ? "destination" : "source"
                try connection.execute(
                    "DELETE FROM \(quoted(table)) WHERE \(this) = $1",
                    [String(owner)]
                )
                guard !keys.isEmpty else { continue }
                try connection.execute(
                    "INSERT INTO \(quoted(table)) (\(this), \(other)"
                        + (isOrdered ? ", position)" : ")") + " SELECT $1, u.k"
                        + (isOrdered ? ", u.n" : "")
                        + " FROM unnest($2::bigint[]) WITH ORDINALITY AS u(k, n)",
                    [String(owner), Self.array(keys)]
                )
            default:
                continue
            }
        }
    }

    /// Records the commit and the objects it changed, and announces it: the other processes
    /// that listen read its changes when it has committed (a notification is delivered then).
    private func recordChanges(
        _ entries: [Transaction.Entry],
        commit: UInt64,
        date: Date
    ) throws(PostgresError) {
        let list = CommitChanges.encode(
            CommitChanges.entries(
                of: entries.lazy.map { entry in
                    (entry.key, entry.entity, entry.isDelete ? 2 : entry.isInsert ? 0 : 1)
                }
            )
        )
        try recordCommit(commit, date: date, changes: list)
    }

    /// Records commit `commit` with its list of changes (``CommitChanges``), and announces it.
    ///
    /// Every ``commitRetention`` `everyCommits` commits, the lists of commits older than its
    /// `seconds` (by the committing process's clock) are dropped too, so that the table holds
    /// minutes of commits rather than every commit ever made. The oldest list kept is found
    /// through the key, without reading the rest; this commit's own is always kept, so a
    /// listener can tell lists it missed from none at all (``CommitListener``).
    func recordCommit(_ commit: UInt64, date: Date, changes list: [UInt8]) throws(PostgresError) {
        let table = quoted(Self.commitsTable)
        _ = try connection.query(
            "INSERT INTO \(table) VALUES ($1, $2, $3)",
            [
                .text(String(commit)), .text(String(date.timeIntervalSinceReferenceDate)),
                .binary(list),
            ]
        ) { _ in }
        let retention = commitRetention
        if commit % max(retention.everyCommits, 1) == 0 {
            try connection.execute(
                "DELETE FROM \(table) WHERE commit < coalesce((SELECT commit FROM \(table) "
                    + "WHERE date >= $1 ORDER BY commit LIMIT 1), $2)",
                [
                    String(date.timeIntervalSinceReferenceDate - retention.seconds),
                    String(commit),
                ]
            )
        }
        try connection.execute(
            "SELECT pg_notify($1, $2)",
            [Self.commitChannel, String(commit)]
        )
    }

    private func writeMetadata(_ metadata: Metadata) throws(PostgresError) {
        try connection.execute("DELETE FROM \(quoted(Self.metadataTable))")
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            let bytes = MetadataCoding.encode([key: value])
            try connection.execute(
                "INSERT INTO \(quoted(Self.metadataTable)) VALUES ($1, $2::bytea)",
                [key, try ColumnValue.parameter(.data(Data(bytes)), type: .data)]
            )
        }
    }
}
