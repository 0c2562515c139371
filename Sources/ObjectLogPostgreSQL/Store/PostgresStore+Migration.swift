import Foundation
import ObjectLog
import ObjectLogStore

extension PostgresStore {
    // A migration is one SQL transaction: the store row is locked (other processes' saves
    // wait), the tables change (``TableChanges``), the rows whose values change are written
    // anew from the engine's translation, and the new version is recorded. A failure rolls all
    // of it back: the database stays at the old version, as it was.
    package func migrateTables(
        _ migration: TableMigration,
        recording: () throws -> Transaction
    ) throws -> Bool {
        if isReadOnly {
            throw PostgresError(.statementFailed, "the store at \(displayName) is open read-only")
        }
        let before = tables
        let new = try SchemaMapping(migration.schema)
        let changes = TableChanges(from: before.mapping, to: new, migration: migration)
        let after = Tables(
            schema: migration.schema,
            mapping: new,
            externalThreshold: externalStorageMinimumByteCount
        )
        var stashed: [BlobID] = []
        defer { withPendingBlobs { pending in for id in stashed { pending[id] = nil } } }
        try lockedForSave { connection in
            try connection.execute("BEGIN")
            do {
                takenCommit = nil
                try lockForMigration(connection, from: migration.stored)
                try run(changes.cleanup, connection)
                // Checked now: a table with checks pending cannot be altered.
                try connection.execute("SET CONSTRAINTS ALL IMMEDIATE")
                let rows = try translatedRows(changes.rewritten, migration, stashing: &stashed)
                let transaction = try recording()
                try run(changes.restructuring, connection)
                try renameDerivedNames(changes.keptTables, connection)
                // The rows are written in any order, their references checked once all are.
                try connection.execute("SET CONSTRAINTS ALL DEFERRED")
                use(after)
                var puts = Transaction()
                for row in rows {
                    puts.put(
                        key: row.key,
                        entity: row.entity,
                        payload: row.payload,
                        isInsert: row.isInsert
                    )
                }
                // The recording's changes (the new model version) follow the rows.
                for change in transaction.changes {
                    if change.isDelete {
                        puts.delete(key: change.key, entity: change.entity)
                    } else {
                        puts.put(
                            key: change.key,
                            entity: change.entity,
                            payload: change.payload,
                            blobs: change.blobs,
                            isInsert: change.isInsert
                        )
                    }
                }
                _ = try write(
                    puts,
                    metadata: transaction.metadata,
                    locks: [],
                    note: HistoryNote(
                        author: transaction.author,
                        contextName: transaction.contextName,
                        recordsValues: false
                    )
                )
                try fill(changes, from: rows, schema: migration.schema, connection)
                try connection.execute("SET CONSTRAINTS ALL IMMEDIATE")
                try run(changes.completion, connection)
                try connection.execute("COMMIT")
                takenCommit = nil
            } catch {
                _ = try? connection.execute("ROLLBACK")
                use(before)
                if let taken = takenCommit { ownCommits.remove(taken) }
                takenCommit = nil
                if let error = error as? PostgresError,
                    let violation = Self.violation(error, of: new)
                {
                    throw violation
                }
                throw error
            }
        }
        return true
    }

    /// A row written anew by a migration: its key, entity, value in the new version's layout,
    /// and whether it is inserted.
    struct TranslatedRow {
        var key: ObjectKey
        var entity: EntityTag
        var payload: [UInt8]
        var isInsert: Bool
    }

    /// Locks the store row for a migration (other processes' saves wait for it), and checks
    /// that the newest version the database records is still `stored`: another process may
    /// have migrated it since this one read it.
    private func lockForMigration(
        _ connection: PostgresConnection,
        from stored: ModelSchema
    ) throws(PostgresError) {
        try connection.execute("SELECT 1 FROM \(quoted(Self.storeTable)) FOR UPDATE")
        let newest =
            try connection.execute(
                "SELECT schema FROM \(quoted(Self.versionsTable)) ORDER BY "
                    + "\(quoted(SchemaMapping.versionColumn)) DESC, "
                    + "\(quoted(SchemaMapping.keyColumn)) DESC LIMIT 1"
            ).rows.first?.first ?? nil
        let hash = newest.flatMap { try? ModelSchema.decode(json: Data($0.utf8)).versionHash }
        guard hash == stored.versionHash else {
            throw PostgresError(
                .statementFailed,
                "the database at \(displayName) is at model version \(hash ?? "none"), not "
                    + "\(stored.versionHash): another process migrated it meanwhile; open it again"
            )
        }
    }

    /// Gives the primary keys, single-column indexes and foreign keys of `tables` the names
    /// PostgreSQL gives those of a table created with the table's name and columns
    /// (`Table_pkey`, `Table_column_idx`, `Table_column_fkey`): after a rename, the names it
    /// made from the old ones are misleading. (They are the server's: the store never looks
    /// them up.)
    private func renameDerivedNames(
        _ tables: [String],
        _ connection: PostgresConnection
    ) throws(PostgresError) {
        var indexes: [(name: String, target: String)] = []
        var keys: [(table: String, name: String, target: String)] = []
        for table in tables {
            let rows = try connection.execute(
                "SELECT c.relname, i.indisprimary, i.indnatts = 1 AND i.indexprs IS NULL, "
                    + "(SELECT a.attname FROM pg_attribute a WHERE a.attrelid = i.indrelid AND "
                    + "a.attnum = i.indkey[0]), EXISTS (SELECT 1 FROM pg_constraint k WHERE "
                    + "k.conindid = i.indexrelid AND k.contype = 'x'), "
                    + "pg_get_indexdef(i.indexrelid) LIKE '%(sha256(%' FROM pg_index i JOIN "
                    + "pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = to_regclass($1) "
                    + "ORDER BY 1",
                [quoted(table)]
            ).rows
            for row in rows {
                // Uniqueness constraints are named by the store.
                guard let name = row[0], row[4] == "f" else { continue }
                let target: String
                if row[1] == "t" {
                    target = table + "_pkey"
                } else if row[2] == "t", let column = row[3] {
                    target = "\(table)_\(column)_idx"
                } else if row[5] == "t" {
                    // The digest of external data: named after its function.
                    target = "\(table)_sha256_idx"
                } else {
                    continue
                }
                if name != target, target.utf8.count <= 63 { indexes.append((name, target)) }
            }
            let references = try connection.execute(
                "SELECT k.conname, a.attname FROM pg_constraint k JOIN pg_attribute a ON "
                    + "a.attrelid = k.conrelid AND a.attnum = k.conkey[1] WHERE k.conrelid = "
                    + "to_regclass($1) AND k.contype = 'f' ORDER BY 1",
                [quoted(table)]
            ).rows
            for row in references {
                guard let name = row[0], let column = row[1] else { continue }
                let target = "\(table)_\(column)_fkey"
                if name != target, target.utf8.count <= 63 { keys.append((table, name, target)) }
            }
        }
        // Through temporary names: two may swap theirs (a join table whose sides swapped).
        for (index, rename) in indexes.enumerated() {
            try connection.execute(
                "ALTER INDEX \(quoted(rename.name)) RENAME TO "
                    + quoted("objectlog_renaming_index_\(index)")
            )
        }
        for (index, rename) in indexes.enumerated() {
            var target = rename.target
            var suffix = 0
            // A name another relation holds: the next free one, as PostgreSQL chooses.
            while try connection.execute(
                "SELECT to_regclass($1) IS NOT NULL",
                [quoted(target)]
            ).rows.first?.first == "t" {
                suffix += 1
                target = rename.target + String(suffix)
            }
            try connection.execute(
                "ALTER INDEX \(quoted("objectlog_renaming_index_\(index)")) RENAME TO "
                    + quoted(target)
            )
        }
        for (index, rename) in keys.enumerated() {
            try connection.execute(
                "ALTER TABLE \(quoted(rename.table)) RENAME CONSTRAINT \(quoted(rename.name)) TO "
                    + quoted("objectlog_renaming_key_\(index)")
            )
        }
        for (index, rename) in keys.enumerated() {
            try connection.execute(
                "ALTER TABLE \(quoted(rename.table)) RENAME CONSTRAINT "
                    + "\(quoted("objectlog_renaming_key_\(index)")) TO \(quoted(rename.target))"
            )
        }
    }

    private func run(
        _ statements: [TableChanges.Statement],
        _ connection: PostgresConnection
    ) throws(PostgresError) {
        for statement in statements { try connection.execute(statement.text, statement.parameters) }
    }

    /// The rows of the entities `rewritten` names, read through the stored version's tables
    /// and translated into the new version's layout by the engine, as the log store would
    /// read them; the external data they refer to is kept among the pending blobs (its column
    /// may not outlive the migration's changes), its IDs added to `stashed`.
    private func translatedRows(
        _ rewritten: [EntityTag: Bool],
        _ migration: TableMigration,
        stashing stashed: inout [BlobID]
    ) throws -> [TranslatedRow] {
        var rows: [TranslatedRow] = []
        for (tag, isInsert) in rewritten.sorted(by: { $0.key < $1.key }) {
            guard let entity = migration.schema.entity(tag: tag) else { continue }
            let externals = entity.properties.indices.filter { entity.properties[$0].isExternal }
            for record in try records(entity: tag) {
                let translated = try record.payload.withUnsafeBytes { payload in
                    try migration.translate(payload, entity: tag) { try readBlob($0) }
                }
                guard let translated else { continue }
                if !externals.isEmpty {
                    let values = try translated.withUnsafeBytes {
                        try StoreInspector.decode(payload: $0, entity: entity)
                    }
                    for index in externals {
                        guard case .externalData(let id, _) = values[index].value,
                            withPendingBlobs({ $0[id] }) == nil
                        else { continue }
                        let bytes = try readBlob(id)
                        withPendingBlobs { $0[id] = bytes }
                        stashed.append(id)
                    }
                }
                rows.append(
                    TranslatedRow(
                        key: record.key,
                        entity: tag,
                        payload: translated,
                        isInsert: isInsert
                    )
                )
            }
        }
        return rows
    }

    /// Fills what the written rows leave to their lists: the pairs of join tables made anew
    /// from the side that does not write them, and the columns of new inverses.
    private func fill(
        _ changes: TableChanges,
        from rows: [TranslatedRow],
        schema: ModelSchema,
        _ connection: PostgresConnection
    ) throws {
        guard !changes.joinFills.isEmpty || !changes.inverseFills.isEmpty else { return }
        /// The lists of `property` in the rows of `tags`: each owner with its objects.
        func lists(_ property: String, of tags: [EntityTag]) throws -> [(ObjectKey, [ObjectKey])] {
            var found: [(ObjectKey, [ObjectKey])] = []
            for row in rows where tags.contains(row.entity) {
                guard let entity = schema.entity(tag: row.entity),
                    let index = entity.properties.firstIndex(where: { $0.name == property })
                else { continue }
                let values = try row.payload.withUnsafeBytes {
                    try StoreInspector.decode(payload: $0, entity: entity)
                }
                if case .toMany(let keys) = values[index].value, !keys.isEmpty {
                    found.append((row.key, keys))
                }
            }
            return found
        }
        for fill in changes.joinFills {
            let this = fill.isSource ? "source" : "destination"
            let other = fill.isSource ? "destination" : "source"
            for (owner, keys) in try lists(fill.property, of: fill.tags) {
                try connection.execute(
                    "INSERT INTO \(quoted(fill.table)) (\(this), \(other)"
                        + (fill.isOrdered ? ", position)" : ")") + " SELECT $1, u.k"
                        + (fill.isOrdered ? ", u.n" : "")
                        + " FROM unnest($2::bigint[]) WITH ORDINALITY AS u(k, n) "
                        + "ON CONFLICT DO NOTHING",
                    [String(owner), Self.array(keys)]
                )
            }
        }
        let key = quoted(SchemaMapping.keyColumn)
        for fill in changes.inverseFills {
            for (owner, keys) in try lists(fill.property, of: fill.owners) {
                try connection.execute(
                    "UPDATE \(quoted(fill.table)) SET \(quoted(fill.column)) = $1 WHERE "
                        + "\(key) = ANY($2::bigint[])",
                    [String(owner), Self.array(keys)]
                )
            }
        }
    }

    /// A uniqueness constraint's violation during a migration as the engine reports one.
    private static func violation(
        _ error: PostgresError,
        of mapping: SchemaMapping
    ) -> ObjectLogError? {
        guard error.isUniqueViolation, let name = error.constraint,
            let (entity, attributes) = mapping.constraint(named: name)
        else { return nil }
        return ObjectLogError(
            .uniqueness,
            "the uniqueness constraint of '\(entity)' on "
                + attributes.map { "'\($0)'" }.joined(separator: ", ")
                + " does not hold for the migrated objects"
                + (error.detail.map { " (\($0))" } ?? ""),
            property: attributes.joined(separator: ",")
        )
    }
}
