import Foundation
import ObjectLogStore

/// What the coordinator keeps its objects in: the seam between the engine and a kind of store.
///
/// Every read can throw: a store on a server can lose its connection at any moment, and a
/// failed read must never look like an empty store.
///
/// The engine speaks to a store in its own terms: objects are records (an entity tag and the
/// payload the engine encodes) under keys the store hands out; a save is one ``Transaction``;
/// external data are blobs. Each record has a version: a position that grows with every
/// commit (the log store's is the record's offset in its file, and compaction renumbers them
/// into a new generation it remembers; a database's is the number of the commit that wrote
/// the row). The engine checks optimistic locks and scans against these positions, so it
/// never needs to know how a store keeps them.
///
/// A save goes one way: context, coordinator, store. A store never calls back into the
/// coordinator, and work it does on its own after a commit (the log store's automatic
/// compaction) happens in ``finishCommit()``, which the coordinator calls once it has released
/// its lock.
///
/// Compare Core Data's `NSPersistentStore` and `NSIncrementalStore`, and SwiftData's
/// `DataStore`: the same models, contexts and fetches over another kind of store.
package protocol PersistentStore: AnyObject, Sendable {
    /// What the store can do beyond reading and committing.
    var capabilities: StoreCapabilities { get }

    /// How messages and tools name the store: a path, or a URI without its password.
    var displayName: String { get }

    /// Whether the store refuses commits.
    var isReadOnly: Bool { get }

    /// Data at least this large is kept outside the object's record, as a blob.
    var externalStorageMinimumByteCount: Int { get }

    /// Closes the store; later calls throw.
    func close() throws

    // MARK: Metadata and keys

    /// The committed metadata dictionary.
    var metadata: Metadata { get throws }

    /// Hands out `count` fresh keys, never used before in this store.
    func allocateKeys(_ count: Int) throws -> ClosedRange<ObjectKey>

    /// The number of committed transactions, counting on across compactions.
    var transactionCount: UInt64 { get throws }

    // MARK: Versions

    /// The position after the last commit, and the generation positions are counted in.
    var endAndGeneration: (end: UInt64, generation: UInt64) { get throws }

    /// The generation positions are counted in now.
    var generation: UInt64 { get }

    /// Where the live record of `key` is, and the generation its position is counted in.
    func locationAndGeneration(
        of key: ObjectKey
    ) throws -> (location: RecordLocation?, generation: UInt64)

    /// The positions of the live records of `keys` (nil for keys with none), in one step.
    func recordOffsetsAndGeneration(
        of keys: [ObjectKey]
    ) throws -> (offsets: [UInt64?], generation: UInt64)

    /// `offset`, a position in `generation`, as a position now; nil once the store no longer
    /// remembers where that record went. With `exact` false, any position in the old
    /// generation, as a bound: the first position now that lies after what came before it.
    func translateOffset(_ offset: UInt64, from generation: UInt64, exact: Bool) -> UInt64?

    // MARK: Reading

    /// Where the live record of `key` is; nil if the object is not in the store.
    func location(of key: ObjectKey) throws -> RecordLocation?

    /// The keys of the live objects of `entity` (of every entity when nil).
    func liveKeys(entity: EntityTag?) throws -> [ObjectKey]

    /// The number of live objects of `entity` (of every entity when nil).
    func liveCount(entity: EntityTag?) throws -> Int

    /// The payload and blob list of the live record of `key`; nil if there is none.
    func readObject(_ key: ObjectKey) throws -> (payload: [UInt8], blobs: [BlobID])?

    /// Calls `body` with the live record of `key`, its location and generation; false if the
    /// object is not in the store. The buffer is valid only during the call.
    ///
    /// `entity`, when the caller knows it, is the object's entity: a store that keeps each
    /// hierarchy apart looks there alone.
    func withObject(
        _ key: ObjectKey,
        entity: EntityTag?,
        _ body: (
            _ value: UnsafeRawBufferPointer, _ blobs: [BlobID], _ location: RecordLocation,
            _ generation: UInt64
        ) throws -> Void
    ) throws -> Bool

    /// Calls `body` with every live object of `entity` (every entity when nil), in the
    /// store's order.
    func forEachLiveObject(
        entity: EntityTag?,
        _ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void
    ) throws

    /// Calls `body` with each live object among `keys`, in the store's order.
    func forEachObject(
        keys: [ObjectKey],
        _ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void
    ) throws

    /// A snapshot of where the live objects among `keys` are, read later by
    /// ``forEachObject(in:_:)`` even after other commits.
    func readPlan(keys: [ObjectKey]) throws -> any StoreReadPlan

    /// ``readPlan(keys:)`` of the keys of every part, which a store may look up in parallel.
    func readPlan(keyParts: [[ObjectKey]]) throws -> any StoreReadPlan

    /// The live objects of `entity` as up to `parts` plans that can be read concurrently.
    func liveObjectPlans(entity: EntityTag?, parts: Int) throws -> [any StoreReadPlan]

    /// `plan` as up to `parts` plans that can be read concurrently, together in its order.
    func split(_ plan: any StoreReadPlan, parts: Int) -> [any StoreReadPlan]

    /// Calls `body` with each object of `plan`.
    func forEachObject(
        in plan: any StoreReadPlan,
        _ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void
    ) throws

    /// Calls `handler` with the changes of each commit another process makes, from a thread
    /// of the store's, for as long as the store is open. A store that only this process
    /// writes never calls it.
    func observeOtherProcesses(_ handler: @escaping @Sendable (StoreChanges) -> Void)

    /// Runs `batch` as one transaction of the store's own statements, and says what it changed;
    /// nil, with nothing written, when the store cannot (the engine then runs it itself).
    ///
    /// - Throws: a uniqueness violation as ``ObjectLogError/Code/uniqueness``; a failure of the
    ///   store, nothing written.
    func execute(_ batch: StoreBatch) throws -> StoreBatchCommit?

    /// Changes the store's tables from those of `migration.stored` to those of
    /// `migration.schema`, deleting the objects of removed entities and converting values as
    /// the engine does, and commits the transaction `recording` makes (the new version's
    /// record and metadata, made once the store is locked for the migration: the keys and
    /// positions it takes are the migration's), all in one transaction: how a store that keeps
    /// values in columns of its own migrates (the log store translates its records as it
    /// reads them instead). When it throws, nothing is written.
    ///
    /// - Returns: False, with nothing written, when the store cannot migrate.
    func migrateTables(
        _ migration: TableMigration,
        recording: () throws -> Transaction
    ) throws -> Bool

    /// The committed transactions numbered above `number`, up to `limit` of them, with each
    /// changed object's payload before and after, in the newest model version's layout; nil
    /// when the store keeps no history (it lacks ``StoreCapabilities/history``).
    func history(after number: UInt64, limit: Int) throws -> StoreHistory?

    /// A read-only store of this store's objects as they were when transaction `number`
    /// committed, which keeps that state whatever is saved later; nil when the store keeps no
    /// history.
    ///
    /// - Throws: ``ObjectLogError`` — ``ObjectLogError/Code/historyExpired`` when the history
    ///   back to `number` is gone, ``ObjectLogError/Code/invalidArgument`` for a transaction
    ///   not committed yet, ``ObjectLogError/Code/unsupported`` for a state before a migration
    ///   of the model; or the store's error of a failed read.
    func snapshot(asOf number: UInt64) throws -> (any PersistentStore)?

    /// Reads records as the newest version of `history` lays them out from now on (the log
    /// store translates records older versions wrote as it reads them; a store that rewrites
    /// its rows when it migrates has nothing to do). `pendingBoundary`: the end below which
    /// records are older, for a newest version that is not recorded yet.
    func installReading(of history: ModelHistory, pendingBoundary: UInt64?)

    /// The records that may satisfy `query`, with those of `keys`; nil when the store cannot
    /// select them itself (the engine then reads every object of the entity).
    ///
    /// The engine tests the predicate again on every record, and sorts them: the store may
    /// return more than match, in any order. The records of `keys`, objects the fetching
    /// context has changed, are always among them, whatever their saved values.
    func candidates(
        for query: StoreQuery,
        adding keys: [ObjectKey]
    ) throws
        -> (any StoreReadPlan)?

    // MARK: External data

    /// The bytes of a blob.
    func readBlob(_ id: BlobID) throws -> Data

    /// Keeps `bytes` as a blob, durable before the commit that first refers to it.
    func writeBlob(_ bytes: Data) throws -> BlobID

    // MARK: Writing

    /// Whether a commit may hold patches: the new values of some properties of an object.
    var allowsPatches: Bool { get }

    /// Commits `transaction` atomically: all of it or, when it throws, none of it.
    ///
    /// The coordinator has checked `locks` under its own lock, against this store's positions.
    /// A store that only this process writes (the log store holds a writer lock on its file)
    /// can rely on that; a store that other processes write too checks them again within the
    /// commit, and throws ``StoreConflict`` naming the objects that changed.
    func commitSave(
        _ transaction: Transaction,
        checking locks: [StoreLockCheck]
    ) throws
        -> StoreCommit

    /// Work the store does after a commit, once the coordinator has released its lock (the
    /// log store's automatic compaction).
    func finishCommit()

    /// Commits `transaction` as ``commitSave(_:checking:)`` does, but may return once it is
    /// written and before it is durable (its `awaitsFlush`): the coordinator then releases
    /// its lock and calls ``waitUntilDurable(_:)``, so that the saves of other contexts
    /// meanwhile can share the flush (the log store's group commit).
    ///
    /// Until then the commit is part of what later saves are checked against and follow
    /// (``recordOffsetsAndGeneration(of:)`` sees it), but not of what reads see. Every commit
    /// begun must be waited for: the store may leave the flush of others to its thread.
    func beginSave(
        _ transaction: Transaction,
        checking locks: [StoreLockCheck]
    ) throws
        -> StoreCommit

    /// Waits until a commit that ``beginSave(_:checking:)`` returned is durable.
    ///
    /// - Throws: The error of the flush, which leaves the store refusing writes.
    func waitUntilDurable(_ commit: StoreCommit) throws

    /// Waits until every commit begun is durable and seen by reads: what the coordinator
    /// calls before it reads the store to build what it keeps of it (uniqueness indexes,
    /// attribute columns) or to decide from its values.
    func waitForPendingCommits() throws
}

extension PersistentStore {
    /// Commits at once: a store without group commit.
    package func beginSave(
        _ transaction: Transaction,
        checking locks: [StoreLockCheck]
    ) throws -> StoreCommit {
        try commitSave(transaction, checking: locks)
    }

    /// Nothing to wait for: ``beginSave(_:checking:)`` committed.
    package func waitUntilDurable(_ commit: StoreCommit) throws {}

    /// Nothing to wait for: every commit is durable when it returns.
    package func waitForPendingCommits() throws {}
}

/// A snapshot of where some objects' records are, taken by
/// ``PersistentStore/readPlan(keys:)`` and read by ``PersistentStore/forEachObject(in:_:)``.
package protocol StoreReadPlan: Sendable {
    /// The number of records.
    var count: Int { get }
    /// About how many bytes the records take, for reserving room.
    var recordBytes: Int { get }
    /// The generation of the positions in ``keysAndOffsets``.
    var generation: UInt64 { get }
    /// The keys of the records, in the plan's order.
    var keys: [ObjectKey] { get }
    /// Each object's key and record position, in the plan's order.
    var keysAndOffsets: [(key: ObjectKey, offset: UInt64)] { get }
}

/// What a commit of another process changed: the objects, by key and entity.
package struct StoreChanges: Sendable {
    /// The commit's number.
    package var number: UInt64
    /// The objects it inserted.
    package var inserted: [(key: ObjectKey, entity: EntityTag)] = []
    /// The objects it updated.
    package var updated: [(key: ObjectKey, entity: EntityTag)] = []
    /// The objects it deleted.
    package var deleted: [(key: ObjectKey, entity: EntityTag)] = []
    /// Whether what the commits up to `number` changed is unknown (the store no longer holds
    /// their lists): every object may have changed.
    package var isIncomplete = false

    /// The changes of commit `number`, none yet.
    package init(number: UInt64) { self.number = number }
}

/// What a commit was, and the store's end and generation right after it (the positions the
/// committing context's objects now carry).
package struct StoreCommit: Sendable {
    /// The commit.
    package var info: CommitInfo
    /// The position after the commit.
    package var end: UInt64
    /// The generation positions are counted in.
    package var generation: UInt64
    /// Whether the commit is written but not durable yet: see
    /// ``PersistentStore/beginSave(_:checking:)``.
    package var awaitsFlush = false

    /// A commit's description.
    package init(info: CommitInfo, end: UInt64, generation: UInt64) {
        self.info = info
        self.end = end
        self.generation = generation
    }
}

/// An object a save updates or deletes, and the version of it the saving context read: the
/// record must still be that one (``expectedOffset``) or older than ``offsetBound``.
package struct StoreLockCheck: Sendable, Equatable {
    /// The object.
    package var key: ObjectKey
    /// The position of the record the context read, in the store's current generation; 0
    /// when only ``offsetBound`` is known.
    package var expectedOffset: UInt64
    /// Without an exact position: the record the context read lay below this one.
    package var offsetBound: UInt64

    /// A check.
    package init(key: ObjectKey, expectedOffset: UInt64, offsetBound: UInt64) {
        self.key = key
        self.expectedOffset = expectedOffset
        self.offsetBound = offsetBound
    }

    /// Whether the live record's position `current` (nil when the object is gone) is what the
    /// context read.
    package func holds(current: UInt64?) -> Bool {
        if expectedOffset != 0 { return current == expectedOffset }
        if offsetBound != 0 { return (current ?? .max) < offsetBound }
        return true
    }
}

/// Thrown by a commit whose optimistic locks another process broke: the objects changed in
/// the store since the saving context read them.
package struct StoreConflict: Error, Sendable {
    /// The objects that changed.
    package var keys: [ObjectKey]

    /// A conflict of `keys`.
    package init(keys: [ObjectKey]) { self.keys = keys }
}

/// What a store can do beyond reading and committing.
package struct StoreCapabilities: OptionSet, Sendable {
    package let rawValue: Int

    package init(rawValue: Int) { self.rawValue = rawValue }

    /// Compaction by hand and automatically (``PersistentContainer/compact(progress:)``).
    package static let compaction = StoreCapabilities(rawValue: 1 << 0)
    /// A consistent copy while the store is in use (``PersistentContainer/backup(to:progress:)``).
    package static let backup = StoreCapabilities(rawValue: 1 << 1)
    /// Batch requests that run in the store without loading objects into a context.
    package static let batchRequests = StoreCapabilities(rawValue: 1 << 2)
    /// Migration of a store written by an earlier model version.
    package static let migration = StoreCapabilities(rawValue: 1 << 3)
    /// Only this process writes the store, so what the coordinator keeps of it (attribute
    /// columns, uniqueness indexes) stays true between its own saves.
    package static let exclusiveWriter = StoreCapabilities(rawValue: 1 << 4)
    /// Its committed transactions with each object's value before and after
    /// (``PersistentStore/history(after:limit:)``).
    package static let history = StoreCapabilities(rawValue: 1 << 5)
}

/// What `body` reads from a store, a failure thrown as the engine's error (an `ObjectLogError`
/// as it is, any other as ``ObjectLogError/Code/store``).
func readingStore<Result>(
    _ body: () throws -> Result
) throws(ObjectLogError) -> Result {
    do {
        return try body()
    } catch {
        throw ObjectLogError.store(error, "cannot read the store")
    }
}
