import Foundation
import ObjectLog
import ObjectLogStore

extension PostgresStore {
    /// Runs `plan`'s stages from the database's version as they run on a store file: the
    /// database is copied into a temporary store file (as of one snapshot), the stages run on
    /// that file (every kind of stage: lightweight, custom and rewriting), and the file's
    /// objects, model versions and metadata replace the database's in one SQL transaction.
    ///
    /// The database is only read until that transaction, which first checks that no other
    /// process has committed since the copy: a stage that fails, a check that refuses, or a
    /// save of another process in the meantime leaves it as it was.
    ///
    /// - Parameters:
    ///   - plan: The plan.
    ///   - temporaryDirectory: Where the file is written; removed afterwards.
    ///   - progress: Called before each stage, now and then during a rewriting stage, and at
    ///     the end.
    /// - Throws: What a stage or its checks throw (``ObjectLogError``); ``PostgresError`` when
    ///   the server refuses a statement, or the database changed during the stages.
    func runStages(
        of plan: MigrationPlan,
        in temporaryDirectory: URL,
        progress: ((MigrationProgress) -> Void)?
    ) throws {
        let directory = temporaryDirectory.appendingPathComponent(
            "objectlog-migration-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(
            at: directory,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700]
        )
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.objectlog").path
        // The copy, and the commit it is a copy of.
        var options = StoreOptions()
        options.externalStorageMinimumByteCount = externalStorageMinimumByteCount
        let file = try LogStore.open(path: path, options: options)
        let copied: UInt64
        do {
            copied = try readingSnapshot {
                let commit = try storeRow().lastCommit
                _ = try StoreTransfer.copy(from: self, to: file)
                return commit
            }
            try file.close()
        } catch {
            try? file.close()
            throw error
        }
        _ = try PersistentContainer.runStages(of: plan, onStoreFileAt: path, progress: progress)
        var readOnly = options
        readOnly.readOnly = true
        readOnly.createIfMissing = false
        let migrated = try LogStore.open(path: path, options: readOnly)
        defer { try? migrated.close() }
        try replaceContents(with: migrated, copiedAt: copied)
    }

    /// Replaces every table, object, model version and metadata value of the database with
    /// those of `source`, in one SQL transaction; refused, with nothing written, when a commit
    /// after `copied` (the last commit of the database `source` was copied from) has landed.
    private func replaceContents(with source: LogStore, copiedAt copied: UInt64) throws {
        let schema = try StoreInspector(store: source).schema
        let mapping = try SchemaMapping(schema)
        let before = tables
        let after = Tables(
            schema: schema,
            mapping: mapping,
            externalThreshold: externalStorageMinimumByteCount
        )
        var written: [BlobID] = []
        defer { withPendingBlobs { pending in for id in written { pending[id] = nil } } }
        try lockedForSave { connection in
            try connection.execute("BEGIN")
            do {
                takenCommit = nil
                let last =
                    try connection.execute(
                        "SELECT last_commit FROM \(quoted(Self.storeTable)) FOR UPDATE"
                    ).rows.first?.first ?? nil
                guard last == String(copied) else {
                    throw PostgresError(
                        .statementFailed,
                        "the database at \(displayName) changed while its migration stages ran "
                            + "(another process saved); nothing was written: open it again"
                    )
                }
                try connection.execute("SET LOCAL client_min_messages = warning")
                for name in before.mapping.joinTables.map(\.name)
                    + before.mapping.tables.map(\.name)
                {
                    try connection.execute("DROP TABLE \(quoted(name)) CASCADE")
                }
                try connection.execute("DELETE FROM \(quoted(Self.versionsTable))")
                var references: [String] = []
                for table in mapping.tables {
                    let made = SchemaMapping.statements(creating: table)
                    try connection.execute(made.create)
                    references += made.references
                }
                for join in mapping.joinTables {
                    try connection.execute(SchemaMapping.statement(creating: join))
                }
                use(after)
                let (transaction, _, nextKey) = try StoreTransfer.transaction(
                    copying: source,
                    into: self
                )
                written = transaction.changes.flatMap(\.blobs)
                _ = try write(
                    transaction,
                    metadata: transaction.metadata,
                    locks: [],
                    note: HistoryNote(recordsValues: false)
                )
                try connection.execute(
                    "UPDATE \(quoted(Self.storeTable)) SET next_key = greatest(next_key, $1)",
                    [String(nextKey)]
                )
                // Checked now: a table with checks pending cannot be altered.
                try connection.execute("SET CONSTRAINTS ALL IMMEDIATE")
                for statement in references
                    + mapping.uniqueIndexes.map(
                        SchemaMapping.statement(creating:)
                    ) + Self.indexStatements(mapping, schema: schema)
                {
                    try connection.execute(statement)
                }
                try connection.execute("COMMIT")
                takenCommit = nil
            } catch {
                _ = try? connection.execute("ROLLBACK")
                use(before)
                if let taken = takenCommit { ownCommits.remove(taken) }
                takenCommit = nil
                throw error
            }
        }
    }
}
