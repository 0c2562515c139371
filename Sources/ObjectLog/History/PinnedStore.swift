import Foundation
import ObjectLogStore

/// The store of a context pinned to a past transaction: the log store's objects as they were
/// then (``LogStore/snapshot(asOf:)``), read-only.
///
/// Positions: every record is at position 1 of generation 1, as a child context's are
/// (`ParentContextStore`): nothing changes under a pinned context, so every optimistic check
/// holds, and no save is made.
///
/// `@unchecked Sendable`: the snapshot is never changed after `init`, and its values are read
/// with positioned reads of the log file, which any thread may make.
final class PinnedStore: PinnedStateStore, @unchecked Sendable {
    private let log: LogStore
    private let snapshot: LogSnapshot
    /// The live keys, sorted, by entity tag, and all of them under nil.
    private let keysByEntity: [EntityTag?: [ObjectKey]]

    init(log: LogStore, snapshot: LogSnapshot) {
        self.log = log
        self.snapshot = snapshot
        var keys: [EntityTag?: [ObjectKey]] = [nil: snapshot.objects.keys.sorted()]
        for key in keys[nil]! {
            keys[snapshot.objects[key]!.entity, default: []].append(key)
        }
        keysByEntity = keys
    }

    var displayName: String { "\(log.path) as of transaction \(snapshot.number)" }
    var externalStorageMinimumByteCount: Int { log.externalStorageMinimumByteCount }

    // The store's history up to the pinned transaction.
    func history(after number: UInt64, limit: Int) throws -> StoreHistory? {
        guard var history = try log.history(after: number, limit: limit) as StoreHistory? else {
            return nil
        }
        history.transactions.removeAll { $0.number > snapshot.number }
        history.latest = min(history.latest, snapshot.number)
        return history
    }

    // MARK: Metadata, keys, versions

    var metadata: Metadata { get throws { log.metadata } }

    var pinnedTransaction: UInt64 { snapshot.number }

    // MARK: Reading

    private func withValue(
        of key: ObjectKey,
        _ body: (EntityTag, UnsafeRawBufferPointer, [BlobID]) throws -> Void
    ) throws -> Bool {
        guard let (entity, value) = snapshot.objects[key] else { return false }
        try log.withHistoryValue(of: key, value, in: snapshot.history) { bytes, blobs in
            try body(entity, bytes, blobs)
        }
        return true
    }

    func location(of key: ObjectKey) throws -> RecordLocation? {
        snapshot.objects[key].map {
            RecordLocation(entity: $0.entity, offset: Self.recordPosition, length: 0)
        }
    }

    func liveKeys(entity: EntityTag?) throws -> [ObjectKey] { keysByEntity[entity] ?? [] }

    func liveCount(entity: EntityTag?) throws -> Int { keysByEntity[entity]?.count ?? 0 }

    func readObject(_ key: ObjectKey) throws -> (payload: [UInt8], blobs: [BlobID])? {
        var found: (payload: [UInt8], blobs: [BlobID])?
        _ = try withValue(of: key) { _, bytes, blobs in found = (Array(bytes), blobs) }
        return found
    }

    func withObject(
        _ key: ObjectKey,
        entity: EntityTag?,
        _ body: (
            _ value: UnsafeRawBufferPointer, _ blobs: [BlobID], _ location: RecordLocation,
            _ generation: UInt64
        ) throws -> Void
    ) throws -> Bool {
        try withValue(of: key) { tag, bytes, blobs in
            let location = RecordLocation(
                entity: tag,
                offset: Self.recordPosition,
                length: UInt32(clamping: bytes.count)
            )
            try body(bytes, blobs, location, 1)
        }
    }

    func forEachObject(
        keys: [ObjectKey],
        _ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        for key in keys {
            _ = try withValue(of: key) { entity, bytes, _ in try body(key, entity, bytes) }
        }
    }

    func readPlan(keys: [ObjectKey]) throws -> any StoreReadPlan {
        var records: [RecordsPlan.Record] = []
        records.reserveCapacity(keys.count)
        for key in keys {
            _ = try withValue(of: key) { entity, bytes, _ in
                records.append((key, entity, Self.recordPosition, Array(bytes)))
            }
        }
        return RecordsPlan(records)
    }

    // MARK: External data and writing

    func readBlob(_ id: BlobID) throws -> Data { try log.readBlob(id) }
}

extension PersistentContainer {
    /// A new context that reads the store as it was when transaction `token` committed, as
    /// Core Data's query generations pin a context: it keeps reading that state whatever
    /// other contexts and processes save, and cannot save itself.
    ///
    /// Pin to ``ManagedObjectContext/currentHistoryToken`` to read a stable state while others
    /// write. A past state is readable within the history the store keeps (see
    /// ``HistoryRetention``).
    ///
    /// - Throws: ``ObjectLogError/Code/historyExpired`` for a transaction whose history is
    ///   gone; ``ObjectLogError/Code/invalidArgument`` for one not committed yet;
    ///   ``ObjectLogError/Code/unsupported`` for a store that keeps no history, or a state
    ///   before a migration of the model.
    public func newContext(asOf token: HistoryToken) throws(ObjectLogError) -> ManagedObjectContext
    {
        let store = coordinator.store
        let pinned: (any PersistentStore)?
        do {
            pinned = try store.snapshot(asOf: token.transaction)
        } catch let error as ObjectLogError {
            throw error
        } catch {
            throw ObjectLogError.store(error, "cannot read the store as of \(token)")
        }
        guard let pinned else {
            throw ObjectLogError(
                .unsupported,
                "the store \(store.displayName) keeps no history of its transactions"
            )
        }
        let context = ManagedObjectContext(
            coordinator: PersistentStoreCoordinator(
                model: coordinator.model,
                pinnedStore: pinned
            )
        )
        context.name = "as of \(token)"
        return context
    }
}
