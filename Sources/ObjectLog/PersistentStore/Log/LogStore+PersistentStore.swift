import Foundation
import ObjectLogStore

/// The log store: the default, a file (or, with ``StoreOptions/inMemory``, memory) holding
/// the append-only log. Most of the seam is the store's own API, unchanged.
extension LogStore: PersistentStore {
    package var capabilities: StoreCapabilities {
        [.compaction, .backup, .batchRequests, .migration, .exclusiveWriter, .history]
    }

    // The log is the history: each transaction's records are its values after, and the
    // records they replaced, still in the file until a compaction, its values before. What a
    // compaction folds away, the history file keeps as the retention says.
    package func snapshot(asOf number: UInt64) throws -> (any PersistentStore)? {
        do {
            return PinnedStore(log: self, snapshot: try snapshot(asOf: number))
        } catch let refusal as LogSnapshot.Refusal {
            switch refusal {
            case .notCommitted(let message): throw ObjectLogError(.invalidArgument, message)
            case .historyGone(let message): throw ObjectLogError(.historyExpired, message)
            case .beforeMigration(let message): throw ObjectLogError(.unsupported, message)
            }
        }
    }

    package func history(after number: UInt64, limit: Int) throws -> StoreHistory? {
        let log = try history(after: number, limit: limit) as LogHistory
        func payload(_ key: ObjectKey, _ value: LogHistoryValue?) throws -> [UInt8]? {
            guard let value else { return nil }
            var bytes: [UInt8] = []
            try withHistoryValue(of: key, value, in: log) { value, _ in bytes = Array(value) }
            return bytes
        }
        var transactions: [StoreHistory.Transaction] = []
        transactions.reserveCapacity(log.transactions.count)
        for transaction in log.transactions {
            var changes: [StoreHistory.Change] = []
            var changesModel = false
            for change in transaction.changes {
                if change.entity == ModelHistory.schemaEntityTag {
                    changesModel = true
                    continue
                }
                let kind: StoreHistory.Change.Kind =
                    switch change.kind {
                    case .insert: .insert
                    case .update: .update
                    case .delete: .delete
                    }
                changes.append(
                    StoreHistory.Change(
                        key: change.key,
                        entity: change.entity,
                        kind: kind,
                        before: try payload(change.key, change.before),
                        after: try payload(change.key, change.after)
                    )
                )
            }
            transactions.append(
                StoreHistory.Transaction(
                    number: transaction.number,
                    date: Date(
                        timeIntervalSince1970: Double(transaction.timestampMicroseconds) / 1e6
                    ),
                    changes: changes,
                    changesModel: changesModel,
                    modelHash: transaction.modelHash.flatMap { $0.isEmpty ? nil : $0 },
                    author: transaction.note?.author,
                    contextName: transaction.note?.contextName
                )
            )
        }
        return StoreHistory(transactions: transactions, earliest: log.earliest, latest: log.latest)
    }

    package var displayName: String { path }

    package var externalStorageMinimumByteCount: Int { options.externalStorageMinimumByteCount }

    package func readPlan(keys: [ObjectKey]) throws -> any StoreReadPlan {
        try readPlan(keyParts: [keys]) as ReadPlan
    }

    package func readPlan(keyParts: [[ObjectKey]]) throws -> any StoreReadPlan {
        try readPlan(keyParts: keyParts) as ReadPlan
    }

    package func liveObjectPlans(entity: EntityTag?, parts: Int) throws -> [any StoreReadPlan] {
        try (liveObjectPlans(entity: entity, parts: parts) as [ReadPlan]).map { $0 }
    }

    package func split(_ plan: any StoreReadPlan, parts: Int) -> [any StoreReadPlan] {
        (split(Self.logPlan(plan), parts: parts) as [ReadPlan]).map { $0 }
    }

    package func forEachObject(
        in plan: any StoreReadPlan,
        _ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        try forEachObject(in: Self.logPlan(plan), body)
    }

    // The coordinator checked `locks` under its lock, and this process is the file's only
    // writer: nothing can have changed since.
    // One directory holds every entity's objects: the entity tells the log nothing.
    package func withObject(
        _ key: ObjectKey,
        entity: EntityTag?,
        _ body: (
            _ value: UnsafeRawBufferPointer, _ blobs: [BlobID], _ location: RecordLocation,
            _ generation: UInt64
        ) throws -> Void
    ) throws -> Bool {
        try withObject(key, body)
    }

    package func commitSave(
        _ transaction: Transaction,
        checking locks: [StoreLockCheck]
    ) throws -> StoreCommit {
        let commit = try beginSave(transaction, checking: locks)
        try waitUntilDurable(commit)
        return StoreCommit(info: commit.info, end: commit.end, generation: commit.generation)
    }

    // The commit's own end, not the log's: saves of other threads may follow it in the same
    // flush.
    package func beginSave(
        _ transaction: Transaction,
        checking locks: [StoreLockCheck]
    ) throws -> StoreCommit {
        let written = try beginCommit(transaction)
        var commit = StoreCommit(
            info: written.info,
            end: written.end,
            generation: written.generation
        )
        commit.awaitsFlush = written.awaitsFlush
        return commit
    }

    package func waitUntilDurable(_ commit: StoreCommit) throws {
        guard commit.awaitsFlush else { return }
        try waitUntilDurable(
            WrittenCommit(
                info: commit.info,
                end: commit.end,
                generation: commit.generation,
                awaitsFlush: true
            )
        )
    }

    // A writable handle holds the log's writer lock: no other process commits, and it follows
    // nothing. A read-only one follows the process that writes the file.
    package func observeOtherProcesses(_ handler: @escaping @Sendable (StoreChanges) -> Void) {
        follow { transactions in
            for transaction in transactions {
                var changes = StoreChanges(number: transaction.number)
                for change in transaction.changes
                where change.entity != ModelHistory.schemaEntityTag {
                    let object = (key: change.key, entity: change.entity)
                    switch change.kind {
                    case .insert: changes.inserted.append(object)
                    case .update: changes.updated.append(object)
                    case .delete: changes.deleted.append(object)
                    }
                }
                handler(changes)
            }
        }
    }

    // Records are translated as they are read (`installReading`); no table changes.
    /// Batch requests run in the engine, which writes this store's records itself.
    package func execute(_ batch: StoreBatch) throws -> StoreBatchCommit? { nil }

    package func migrateTables(
        _ migration: TableMigration,
        recording: () throws -> Transaction
    ) throws -> Bool {
        false
    }

    package func finishCommit() { compactIfWorthwhile() }

    // Attribute columns narrow the log's scans instead: this process writes the log alone.
    package func candidates(
        for query: StoreQuery,
        adding keys: [ObjectKey]
    ) throws
        -> (any StoreReadPlan)?
    {
        nil
    }

    /// A plan this store made: plans never travel between stores.
    package static func logPlan(_ plan: any StoreReadPlan) -> ReadPlan {
        guard let plan = plan as? ReadPlan else {
            preconditionFailure("a read plan of another store was given to a log store")
        }
        return plan
    }
}

extension LogStore.ReadPlan: StoreReadPlan {}
