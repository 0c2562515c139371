import Foundation
import ObjectLogStore

/// A read-only store of `objects`, the state of `base` as of transaction `number`: what a
/// store without a log returns from ``PersistentStore/snapshot(asOf:)``.
package func pinnedState(
    of base: any PersistentStore,
    asOf number: UInt64,
    objects: [ObjectKey: (entity: EntityTag, payload: [UInt8])]
) -> any PersistentStore {
    StateSnapshotStore(base: base, number: number, objects: objects)
}

/// The objects of a store as they were when a past transaction committed, held in memory:
/// what a store that has no log to read past states from (PostgreSQL) gives a pinned context.
///
/// The store rebuilds the state once, from its rows and its history (see
/// ``PersistentStore/snapshot(asOf:)``); nothing changes it afterwards, so every record stands
/// at one position, as a child context's do, and no save is made. Metadata, external data and
/// the history up to the pinned transaction come from the store itself.
///
/// `@unchecked Sendable`: the objects are never changed after `init`, and the base store is
/// `Sendable`.
final class StateSnapshotStore: PinnedStateStore, @unchecked Sendable {
    private let base: any PersistentStore
    private let number: UInt64
    private let objects: [ObjectKey: (entity: EntityTag, payload: [UInt8])]
    /// The live keys, sorted, by entity tag, and all of them under nil.
    private let keysByEntity: [EntityTag?: [ObjectKey]]

    /// The state of `base` as of transaction `number`: `objects`, each key's entity and value.
    init(
        base: any PersistentStore,
        number: UInt64,
        objects: [ObjectKey: (entity: EntityTag, payload: [UInt8])]
    ) {
        self.base = base
        self.number = number
        self.objects = objects
        var keys: [EntityTag?: [ObjectKey]] = [nil: objects.keys.sorted()]
        for key in keys[nil]! {
            keys[objects[key]!.entity, default: []].append(key)
        }
        keysByEntity = keys
    }

    var displayName: String { "\(base.displayName) as of transaction \(number)" }
    var externalStorageMinimumByteCount: Int { base.externalStorageMinimumByteCount }

    // The store's history up to the pinned transaction.
    func history(after number: UInt64, limit: Int) throws -> StoreHistory? {
        guard var history = try base.history(after: number, limit: limit) else { return nil }
        history.transactions.removeAll { $0.number > self.number }
        history.latest = min(history.latest, self.number)
        return history
    }

    var metadata: Metadata { get throws { try base.metadata } }

    var pinnedTransaction: UInt64 { number }

    // MARK: Reading

    func location(of key: ObjectKey) throws -> RecordLocation? {
        objects[key].map {
            RecordLocation(
                entity: $0.entity,
                offset: Self.recordPosition,
                length: UInt32(clamping: $0.payload.count)
            )
        }
    }

    func liveKeys(entity: EntityTag?) throws -> [ObjectKey] { keysByEntity[entity] ?? [] }

    func liveCount(entity: EntityTag?) throws -> Int { keysByEntity[entity]?.count ?? 0 }

    func readObject(_ key: ObjectKey) throws -> (payload: [UInt8], blobs: [BlobID])? {
        objects[key].map { ($0.payload, []) }
    }

    func withObject(
        _ key: ObjectKey,
        entity: EntityTag?,
        _ body: (
            _ value: UnsafeRawBufferPointer, _ blobs: [BlobID], _ location: RecordLocation,
            _ generation: UInt64
        ) throws -> Void
    ) throws -> Bool {
        guard let object = objects[key] else { return false }
        let location = RecordLocation(
            entity: object.entity,
            offset: Self.recordPosition,
            length: UInt32(clamping: object.payload.count)
        )
        try object.payload.withUnsafeBytes { try body($0, [], location, 1) }
        return true
    }

    func forEachObject(
        keys: [ObjectKey],
        _ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        for key in keys {
            guard let object = objects[key] else { continue }
            try object.payload.withUnsafeBytes { try body(key, object.entity, $0) }
        }
    }

    func readPlan(keys: [ObjectKey]) throws -> any StoreReadPlan {
        RecordsPlan(
            keys.compactMap { key in
                objects[key].map { (key, $0.entity, Self.recordPosition, $0.payload) }
            }
        )
    }

    // MARK: External data and writing

    func readBlob(_ id: BlobID) throws -> Data { try base.readBlob(id) }
}
