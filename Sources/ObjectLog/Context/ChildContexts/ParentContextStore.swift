import Foundation
import ObjectLogStore

/// The store a child context reads and saves through: its parent context, over the parent's
/// own store.
///
/// A read sees the parent as it is at that moment: the parent's inserted and changed objects
/// as the parent holds them (encoded on demand), its deleted objects as gone, and every other
/// object as the parent's store has it. A commit does not reach the store: it applies the
/// child's changes to the parent's objects (``ManagedObjectContext/applyChildSave(_:)``),
/// where they are the parent's unsaved changes until the parent saves. A child of a child
/// reads and saves through this store of its parent in turn.
///
/// Positions: every record is at position 1 of generation 1, and the end is 2. The child's
/// optimistic-locking checks then hold for any object its parent still has, whatever the
/// parent did to it since (the child's save overwrites, as in Core Data), and fail for an
/// object its parent deleted meanwhile (a conflict, per the child's merge policy).
///
/// `@unchecked Sendable`: the seam asks for `Sendable`, but the store reads the parent, which
/// is not. The child shares its parent's isolation domain (it is made by, and holds, the
/// parent), and calls every method below from there; the workers of a parallel fetch only
/// read plans, which hold their records (``RecordsPlan``).
final class ParentContextStore: RecordsPlanStore, @unchecked Sendable {
    /// The parent context.
    let parent: ManagedObjectContext
    /// The parent's store.
    private let base: any PersistentStore
    /// The child's saves into the parent so far.
    private var commits: UInt64 = 0

    init(parent: ManagedObjectContext) {
        self.parent = parent
        self.base = parent.store
    }

    var capabilities: StoreCapabilities { [] }

    // A child's history is the store's: the transactions committed, not what the parents hold.
    // A past state is the root store's: a container pins it, not a child.
    func snapshot(asOf number: UInt64) -> (any PersistentStore)? { nil }

    func history(after number: UInt64, limit: Int) throws -> StoreHistory? {
        try base.history(after: number, limit: limit)
    }
    var displayName: String { "the parent context of a child, over \(base.displayName)" }
    var isReadOnly: Bool { false }
    /// External data stays in the child's records: nothing reaches the store before the
    /// parent saves, which writes the blobs.
    var externalStorageMinimumByteCount: Int { .max }
    var allowsPatches: Bool { false }

    func close() throws {}

    // MARK: Metadata, keys, versions

    var metadata: Metadata { get throws { try base.metadata } }

    /// Keys of the store underneath: an object the child inserts keeps its key in the parent
    /// and in the store.
    func allocateKeys(_ count: Int) throws -> ClosedRange<ObjectKey> {
        try base.allocateKeys(count)
    }

    var transactionCount: UInt64 { commits }

    // MARK: The parent's state

    /// What the parent holds of an object.
    private enum ParentState {
        /// An inserted or changed object: the parent's values are the object's.
        case changed(ManagedObject, EntityDescription)
        /// Deleted in the parent.
        case deleted
        /// As the parent's store has it (or not).
        case unchanged
    }

    private func parentState(of key: ObjectKey) -> ParentState {
        guard let object = parent.registry[key] else { return .unchanged }
        if object.isDeleted { return .deleted }
        guard object.isInserted || object.isUpdated, let entity = object.entity else {
            return .unchanged
        }
        return .changed(object, entity)
    }

    /// An object of the parent, encoded as a record.
    private func record(
        of object: ManagedObject,
        entity: EntityDescription
    ) throws -> (payload: [UInt8], blobs: [BlobID]) {
        var writer = PayloadWriter()
        // No store: external data goes inline, or as the blob it already is.
        var sink = BlobSink(store: nil, context: parent)
        try ObjectEncoder.encode(object, entity: entity, to: &writer, blobs: &sink)
        return (writer.bytes, sink.blobs)
    }

    // MARK: Reading

    func location(of key: ObjectKey) throws -> RecordLocation? {
        switch parentState(of: key) {
        case .changed(_, let entity):
            return RecordLocation(entity: entity.tag, offset: Self.recordPosition, length: 0)
        case .deleted:
            return nil
        case .unchanged:
            return try base.location(of: key).map {
                RecordLocation(entity: $0.entity, offset: Self.recordPosition, length: $0.length)
            }
        }
    }

    func liveKeys(entity: EntityTag?) throws -> [ObjectKey] {
        var keys = try base.liveKeys(entity: entity).filter { key in
            if case .deleted = parentState(of: key) { return false }
            return true
        }
        for object in parent.insertedList
        where object.isInserted && object.managedObjectContext === parent
            && (entity == nil || object.entity?.tag == entity)
        {
            keys.append(object.key)
        }
        return keys.sorted()
    }

    func liveCount(entity: EntityTag?) throws -> Int {
        try liveKeys(entity: entity).count
    }

    func readObject(_ key: ObjectKey) throws -> (payload: [UInt8], blobs: [BlobID])? {
        switch parentState(of: key) {
        case .changed(let object, let entity): try record(of: object, entity: entity)
        case .deleted: nil
        case .unchanged: try base.readObject(key)
        }
    }

    func withObject(
        _ key: ObjectKey,
        entity: EntityTag?,
        _ body: (
            _ value: UnsafeRawBufferPointer, _ blobs: [BlobID], _ location: RecordLocation,
            _ generation: UInt64
        ) throws -> Void
    ) throws -> Bool {
        switch parentState(of: key) {
        case .changed(let object, let described):
            let (payload, blobs) = try record(of: object, entity: described)
            let location = RecordLocation(
                entity: described.tag,
                offset: Self.recordPosition,
                length: UInt32(clamping: payload.count)
            )
            try payload.withUnsafeBytes { try body($0, blobs, location, 1) }
            return true
        case .deleted:
            return false
        case .unchanged:
            return try base.withObject(key, entity: entity) { value, blobs, location, _ in
                var moved = location
                moved.offset = Self.recordPosition
                try body(value, blobs, moved, 1)
            }
        }
    }

    func forEachObject(
        keys: [ObjectKey],
        _ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        try forEachObject(in: readPlan(keys: keys), body)
    }

    /// The records of `keys` taken now, the parent's changed objects encoded and the others
    /// copied from the parent's store, so that the plan can be read later and on any thread.
    func readPlan(keys: [ObjectKey]) throws -> any StoreReadPlan {
        var records: [RecordsPlan.Record] = []
        records.reserveCapacity(keys.count)
        var fromBase: [ObjectKey] = []
        for key in keys {
            switch parentState(of: key) {
            case .changed(let object, let entity):
                let payload = try record(of: object, entity: entity).payload
                records.append((key, entity.tag, Self.recordPosition, payload))
            case .deleted:
                continue
            case .unchanged:
                fromBase.append(key)
            }
        }
        if !fromBase.isEmpty {
            try base.forEachObject(keys: fromBase) { key, entity, buffer in
                records.append((key, entity, Self.recordPosition, Array(buffer)))
            }
        }
        return RecordsPlan(records)
    }

    // The parent tells its child nothing: the child reads it anew at each fetch and fault.
    func observeOtherProcesses(_ handler: @escaping @Sendable (StoreChanges) -> Void) {}

    // Batch requests of a child run in the engine, through this store, into the parent.
    func execute(_ batch: StoreBatch) throws -> StoreBatchCommit? { nil }

    // MARK: External data

    func readBlob(_ id: BlobID) throws -> Data { try base.readBlob(id) }

    func writeBlob(_ bytes: Data) throws -> BlobID { try base.writeBlob(bytes) }

    // MARK: Writing

    /// Applies a child's save to the parent; nothing reaches the parent's store.
    func commitSave(
        _ transaction: Transaction,
        checking locks: [StoreLockCheck]
    ) throws -> StoreCommit {
        let conflicts = try locks.filter { lock in
            !lock.holds(current: try location(of: lock.key) == nil ? nil : Self.recordPosition)
        }
        if !conflicts.isEmpty { throw StoreConflict(keys: conflicts.map(\.key)) }
        if transaction.metadata != nil {
            throw ObjectLogError(
                .unsupported,
                "a child context cannot save metadata; set it on the coordinator of the "
                    + "context that saves to the store"
            )
        }
        let changes = transaction.changes
        try parent.applyChildSave(changes)
        commits += 1
        let info = CommitInfo(
            number: commits,
            offset: Self.recordPosition,
            date: Date(),
            inserted: changes.count { $0.isInsert },
            updated: changes.count { !$0.isInsert && !$0.isDelete },
            deleted: changes.count { $0.isDelete }
        )
        return StoreCommit(info: info, end: Self.recordPosition + 1, generation: 1)
    }

    func finishCommit() {}
}
