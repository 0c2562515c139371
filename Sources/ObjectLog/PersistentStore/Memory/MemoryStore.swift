import Foundation
import ObjectLogStore

/// A store that keeps its objects in memory only, as Core Data's in-memory store type and
/// SwiftData's `isStoredInMemoryOnly` do: for previews, tests and scratch data.
///
/// It is the seam's smallest implementation: a dictionary of records under a lock. A record's
/// version is the number of the commit that wrote it, so positions grow with every commit and
/// never move (its generation is always 1).
package final class MemoryStore: PersistentStore {
    private struct Record {
        var entity: EntityTag
        var payload: [UInt8]
        var blobs: [BlobID]
        var version: UInt64
    }

    private struct State {
        var records: [ObjectKey: Record] = [:]
        var counts: [EntityTag: Int] = [:]
        var blobs: [BlobID: Data] = [:]
        var metadata: Metadata = [:]
        var nextKey: ObjectKey = 1
        /// The version the next commit writes; versions start at 1, as 0 means "unknown" to
        /// the engine.
        var end: UInt64 = 1
        var transactions: UInt64 = 0
        var isClosed = false
    }

    private let state = LockedValue(State())

    package let displayName: String
    package let externalStorageMinimumByteCount: Int

    /// An empty store.
    package init(name: String = "memory", externalStorageMinimumByteCount: Int = 16 * 1024) {
        self.displayName = name
        self.externalStorageMinimumByteCount = externalStorageMinimumByteCount
    }

    package var capabilities: StoreCapabilities { [.exclusiveWriter] }

    // The memory store keeps each object's latest value only.
    package func history(after number: UInt64, limit: Int) -> StoreHistory? { nil }
    package func snapshot(asOf number: UInt64) -> (any PersistentStore)? { nil }
    package var isReadOnly: Bool { false }
    package var allowsPatches: Bool { false }

    /// Closes the store and lets its objects go; closing twice does nothing.
    package func close() throws {
        locked { state in
            state = State()
            state.isClosed = true
        }
    }

    private func locked<Result, Failure: Error>(
        _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try state.withLock(body)
    }

    private static func checkOpen(_ state: State, _ name: String) throws(StoreError) {
        if state.isClosed { throw StoreError(.closed, "the store is closed", path: name) }
    }

    // MARK: Metadata, keys, versions

    package var metadata: Metadata { locked { $0.metadata } }

    package func allocateKeys(_ count: Int) -> ClosedRange<ObjectKey> {
        precondition(count > 0, "allocateKeys needs a positive count")
        return locked { state in
            let first = state.nextKey
            state.nextKey += UInt64(count)
            return first...(first + UInt64(count) - 1)
        }
    }

    package var transactionCount: UInt64 { locked { $0.transactions } }
    package var endAndGeneration: (end: UInt64, generation: UInt64) { (locked { $0.end }, 1) }
    package var generation: UInt64 { 1 }

    package func locationAndGeneration(
        of key: ObjectKey
    ) -> (location: RecordLocation?, generation: UInt64) {
        (location(of: key), 1)
    }

    package func recordOffsetsAndGeneration(
        of keys: [ObjectKey]
    ) -> (offsets: [UInt64?], generation: UInt64) {
        let offsets = locked { state in keys.map { state.records[$0]?.version } }
        return (offsets, 1)
    }

    package func translateOffset(_ offset: UInt64, from generation: UInt64, exact: Bool) -> UInt64?
    {
        generation == 1 ? offset : nil
    }

    // MARK: Reading

    package func location(of key: ObjectKey) -> RecordLocation? {
        locked { state in
            state.records[key].map { record in
                RecordLocation(
                    entity: record.entity,
                    offset: record.version,
                    length: UInt32(clamping: record.payload.count)
                )
            }
        }
    }

    package func liveKeys(entity: EntityTag?) -> [ObjectKey] {
        locked { state in
            state.records.compactMap { key, record in
                entity == nil || record.entity == entity ? key : nil
            }
        }.sorted()
    }

    package func liveCount(entity: EntityTag?) -> Int {
        locked { state in entity.map { state.counts[$0] ?? 0 } ?? state.records.count }
    }

    package func readObject(_ key: ObjectKey) throws -> (payload: [UInt8], blobs: [BlobID])? {
        try locked { state throws(StoreError) in
            try Self.checkOpen(state, displayName)
            return state.records[key].map { ($0.payload, $0.blobs) }
        }
    }

    package func withObject(
        _ key: ObjectKey,
        entity: EntityTag?,
        _ body: (
            _ value: UnsafeRawBufferPointer, _ blobs: [BlobID], _ location: RecordLocation,
            _ generation: UInt64
        ) throws -> Void
    ) throws -> Bool {
        // Taken out under the lock, read outside it: `body` may read blobs of this store.
        let record = try locked { state throws(StoreError) in
            try Self.checkOpen(state, displayName)
            return state.records[key]
        }
        guard let record else { return false }
        let location = RecordLocation(
            entity: record.entity,
            offset: record.version,
            length: UInt32(clamping: record.payload.count)
        )
        try record.payload.withUnsafeBytes { try body($0, record.blobs, location, 1) }
        return true
    }

    package func forEachLiveObject(
        entity: EntityTag?,
        _ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        try forEachObject(in: readPlan(keys: liveKeys(entity: entity)), body)
    }

    package func forEachObject(
        keys: [ObjectKey],
        _ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        try forEachObject(in: readPlan(keys: keys), body)
    }

    package func readPlan(keys: [ObjectKey]) throws -> any StoreReadPlan {
        try readPlan(keyParts: [keys])
    }

    package func readPlan(keyParts: [[ObjectKey]]) throws -> any StoreReadPlan {
        try locked { state throws(StoreError) in
            try Self.checkOpen(state, displayName)
            var records: [RecordsPlan.Record] = []
            for part in keyParts {
                for key in part {
                    if let record = state.records[key] {
                        records.append((key, record.entity, record.version, record.payload))
                    }
                }
            }
            return RecordsPlan(records)
        }
    }

    package func liveObjectPlans(entity: EntityTag?, parts: Int) throws -> [any StoreReadPlan] {
        split(try readPlan(keys: liveKeys(entity: entity)), parts: parts)
    }

    package func split(_ plan: any StoreReadPlan, parts: Int) -> [any StoreReadPlan] {
        RecordsPlan.of(plan, store: "a memory store").split(parts: parts)
    }

    package func forEachObject(
        in plan: any StoreReadPlan,
        _ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        try RecordsPlan.of(plan, store: "a memory store").forEach(body)
    }

    // MARK: External data

    package func readBlob(_ id: BlobID) throws -> Data {
        guard let data = locked({ $0.blobs[id] }) else {
            throw StoreError(.missingBlob, "external blob \(id.hex) is missing", path: displayName)
        }
        return data
    }

    package func writeBlob(_ bytes: Data) throws -> BlobID {
        let id = BlobID(contentsOf: bytes)
        locked { state in
            if state.blobs[id] == nil { state.blobs[id] = bytes }
        }
        return id
    }

    // MARK: Writing

    // The coordinator checked `locks` under its lock, and no other process reaches the store.
    package func commitSave(
        _ transaction: Transaction,
        checking locks: [StoreLockCheck]
    ) throws -> StoreCommit {
        let changes = transaction.changes
        return try locked { state throws(StoreError) in
            try Self.checkOpen(state, displayName)
            // Checked before anything changes: a commit is all or nothing.
            for change in changes {
                if change.patchBase != nil {
                    throw StoreError(.invalidArgument, "a memory store holds no patches")
                }
                if change.key >= state.nextKey {
                    throw StoreError(.invalidArgument, "key \(change.key) was never allocated")
                }
            }
            let version = state.end
            var counts = (inserted: 0, updated: 0, deleted: 0)
            for change in changes {
                let old = state.records[change.key]
                if let old { state.counts[old.entity, default: 0] -= 1 }
                if change.isDelete {
                    state.records[change.key] = nil
                    counts.deleted += 1
                } else {
                    state.records[change.key] = Record(
                        entity: change.entity,
                        payload: change.payload,
                        blobs: change.blobs,
                        version: version
                    )
                    state.counts[change.entity, default: 0] += 1
                    if old == nil { counts.inserted += 1 } else { counts.updated += 1 }
                }
            }
            if let metadata = transaction.metadata { state.metadata = metadata }
            state.end += 1
            state.transactions += 1
            let info = CommitInfo(
                number: state.transactions,
                offset: version,
                date: Date(),
                inserted: counts.inserted,
                updated: counts.updated,
                deleted: counts.deleted
            )
            return StoreCommit(info: info, end: state.end, generation: 1)
        }
    }

    // No other process reaches it.
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

    package func finishCommit() {}

    // Attribute columns narrow its scans instead: no other process writes it.
    package func candidates(
        for query: StoreQuery,
        adding keys: [ObjectKey]
    ) throws
        -> (any StoreReadPlan)?
    {
        nil
    }

    // A memory store lives as long as one model version: there is nothing older to translate.
    package func installReading(of history: ModelHistory, pendingBoundary: UInt64?) {}
}
