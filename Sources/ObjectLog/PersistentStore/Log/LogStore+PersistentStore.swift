import Foundation
import ObjectLogStore

/// The log store: the default, a file (or, with ``StoreOptions/inMemory``, memory) holding
/// the append-only log. Most of the seam is the store's own API, unchanged.
extension LogStore: PersistentStore {
    package var capabilities: StoreCapabilities {
        [.compaction, .backup, .batchRequests, .migration, .exclusiveWriter]
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
        let info = try commitWithoutCompacting(transaction)
        // Read at once: the coordinator's lock keeps every other save of this process out.
        let (end, generation) = endAndGeneration
        return StoreCommit(info: info, end: end, generation: generation)
    }

    // This process holds the log's writer lock: no other process commits.
    package func observeOtherProcesses(_ handler: @escaping @Sendable (StoreChanges) -> Void) {}

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
