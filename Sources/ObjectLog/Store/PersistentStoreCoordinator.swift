import Foundation
import ObjectLogStore

/// Joins a model to an open store: it checks the model against the stored schema, guards
/// metadata, checks conflicts and uniqueness, commits saves and tells contexts about them.
///
/// A coordinator is `Sendable` and shared by all contexts of a ``PersistentContainer``; its
/// state is protected by a lock, and a save's checks and commit happen under that lock, so two
/// contexts saving at once are serialised.
public final class PersistentStoreCoordinator: Sendable {
    /// The metadata key where stores written before model versions were kept hold the model
    /// description (JSON of ``ModelSchema``); opening such a store for writing moves it into
    /// the store's model history (``ModelHistory``).
    public static let modelKey = "ObjectLog.model"
    /// The metadata key of the ``ManagedObjectModel/versionHash`` of the model version that
    /// wrote the store last.
    public static let modelHashKey = "ObjectLog.modelHash"
    /// The prefix of metadata keys reserved for the engine and the store.
    public static let reservedKeyPrefix = "ObjectLog."

    /// The model.
    public let model: ManagedObjectModel
    /// The store underneath, for the engine's own use (the package's tools and tests reach
    /// it too); users reach the store through the coordinator and the container.
    package let store: any PersistentStore
    /// The store as the log store, for what only it does (compaction, backup, a staged
    /// migration's copy); nil on another kind of store.
    package var logStore: LogStore? { store as? LogStore }
    /// Whether this process is the store's only writer, so that what the coordinator keeps
    /// of it (attribute columns, uniqueness indexes) stays true between its own saves.
    let isExclusive: Bool

    /// The log store underneath, for `operation`, which only it does.
    /// - Throws: ``ObjectLogError/Code/unsupported`` on another kind of store.
    func logStore(for operation: String) throws(ObjectLogError) -> LogStore {
        guard let logStore else {
            throw ObjectLogError(
                .unsupported,
                "\(operation) needs a log store; '\(store.displayName)' is another kind of store"
            )
        }
        return logStore
    }
    let state: LockedValue<State>

    struct State: ~Copyable {
        var stagedMetadata: Metadata = [:]
        var hasStagedMetadata = false
        /// The committed metadata as the store last gave it.
        var lastReadMetadata: Metadata = [:]
        var observers: [UInt64: @Sendable (ObjectChanges) -> Void] = [:]
        /// Per uniqueness constraint: encoded values to key, and key to encoded values.
        var uniqueIndexes: [UniqueScope: UniqueIndex] = [:]
        /// In-memory attribute columns, per entity, that fetches filter with.
        var columns: [EntityTag: AttributeColumns] = [:]
        /// The model's declared indexes, in a log store this process alone writes.
        var declaredIndexes: DeclaredIndexSet?
    }

    struct UniqueIndex {
        var keysByValue: [[UInt8]: ObjectKey] = [:]
        var valuesByKey: [ObjectKey: [UInt8]] = [:]
    }

    /// One uniqueness constraint: the entity whose objects, its subentities' included, it
    /// spans, and its attributes' indices (the same in every entity of that hierarchy, which
    /// share the inherited properties).
    struct UniqueScope: Hashable {
        var tag: EntityTag
        var members: [Int]
    }

    /// Opens the store at `path` for `model`, migrating it when an earlier version of the
    /// model wrote it.
    ///
    /// A new store records the model as its first version. A store written by another version
    /// of the model is migrated lightweight: the differences are inferred (see "Migrating your
    /// model" in the documentation), the new version is recorded in one small transaction,
    /// and records written by earlier versions are translated as they are read (compaction
    /// rewrites them in the current layout). A read-only open translates without recording.
    /// A change that would drop stored data (an entity that has objects, or a property, that
    /// the model no longer has) is made only when the model declares it
    /// (``ManagedObjectModel/declaredRemovals``).
    ///
    /// - Parameters:
    ///   - model: The model.
    ///   - path: The store file.
    ///   - options: Store options.
    ///   - migratesStoreAutomatically: Whether a store written by another version of the model
    ///     is migrated; when `false`, such a store is refused (migrate it through a
    ///     ``MigrationPlan``), as Core Data's `shouldMigrateStoreAutomatically = false` does.
    /// - Throws: ``ObjectLogError/Code/modelMismatch`` for a store written by a newer version of
    ///   the model, or a change that cannot be inferred or drops undeclared data (one error in
    ///   ``ObjectLogError/errors`` per change when there are several; nothing is written then);
    ///   ``ObjectLogError/Code/uniqueness`` when objects violate a uniqueness constraint the new
    ///   version adds; ``ObjectLogError/Code/store`` if the store cannot be opened.
    public convenience init(
        model: ManagedObjectModel,
        path: String,
        options: StoreOptions = StoreOptions(),
        migratesStoreAutomatically: Bool = true
    )
        throws(ObjectLogError)
    {
        try self.init(
            model: model,
            path: path,
            options: options,
            authority: migratesStoreAutomatically ? .automatic : .manual
        )
    }

    /// Opens the store, migrating it as far as `authority` allows (a stage of a plan may
    /// migrate a change that cannot be inferred, the property starting at its default for the
    /// stage to set).
    convenience init(
        model: ManagedObjectModel,
        path: String,
        options: StoreOptions,
        authority: MigrationAuthority
    )
        throws(ObjectLogError)
    {
        let store: LogStore
        do {
            store = try LogStore.open(path: path, options: options)
        } catch {
            throw ObjectLogError.store(error, "cannot open store '\(path)'")
        }
        // A salvage may drop the record of a model version's schema: the app's model stands in
        // for it when it is that version, rather than the open refusing every object.
        try self.init(
            model: model,
            store: store,
            named: path,
            authority: authority,
            substitutes: options.salvage ? [model.schema] : []
        )
    }

    /// Joins `model` to an open store of any kind.
    ///
    /// The model is recorded in a new store; a store that another version wrote is migrated as
    /// far as the store can (see ``StoreCapabilities/migration``). The coordinator owns the
    /// store from then on; it is closed if the open is refused.
    package convenience init(
        model: ManagedObjectModel,
        store: any PersistentStore,
        migratesStoreAutomatically: Bool = true
    ) throws(ObjectLogError) {
        try self.init(
            model: model,
            store: store,
            named: store.displayName,
            authority: migratesStoreAutomatically ? .automatic : .manual,
            substitutes: []
        )
    }

    /// Joins `model` to `store`, which messages call `name`, migrating it as far as
    /// `authority` allows, with `substitutes` for schema records a salvage lost; closes the
    /// store if the open is refused.
    init(
        model: ManagedObjectModel,
        store: any PersistentStore,
        named name: String,
        authority: MigrationAuthority,
        substitutes: [ModelSchema]
    ) throws(ObjectLogError) {
        do {
            self.model = try Self.prepare(
                store,
                for: model,
                path: name,
                readOnly: store.isReadOnly,
                authority: authority,
                substitutes: substitutes
            )
        } catch {
            try? store.close()
            throw error
        }
        self.store = store
        self.isExclusive = store.capabilities.contains(.exclusiveWriter)
        self.state = LockedValue(State())
        let declaredIndexes = makeDeclaredIndexes()
        state.withLock { $0.declaredIndexes = declaredIndexes }
        store.observeOtherProcesses { [weak self] changes in self?.receive(changes) }
    }

    /// A coordinator of a child context, over its parent (see
    /// ``ManagedObjectContext/newChildContext()``): the model is the parent's, so there is
    /// nothing to check or migrate.
    init(model: ManagedObjectModel, parentStore store: ParentContextStore) {
        self.model = model
        self.store = store
        self.isExclusive = false
        self.state = LockedValue(State())
    }

    /// A coordinator of a context pinned to a past transaction (see
    /// ``PersistentContainer/newContext(asOf:)``): the model is the container's.
    init(model: ManagedObjectModel, pinnedStore store: any PersistentStore) {
        self.model = model
        self.store = store
        self.isExclusive = false
        self.state = LockedValue(State())
    }

    /// Reads a store's metadata without opening it for objects (no replay of the log).
    ///
    /// Compare Core Data's `metadataForPersistentStore(ofType:at:)`.
    public static func metadataForStore(at path: String) throws(ObjectLogError) -> Metadata {
        do {
            return try LogStore.readMetadata(path: path)
        } catch {
            throw ObjectLogError.store(error, "cannot read the metadata of '\(path)'")
        }
    }

    /// The store's metadata: the committed dictionary with unsaved changes applied.
    ///
    /// Should the store fail to read it (a database server out of reach), this is the
    /// dictionary it read last, as Core Data's coordinator keeps the metadata it loaded.
    public var metadata: Metadata {
        let read = try? store.metadata
        return state.withLock { state in
            if let read { state.lastReadMetadata = read }
            guard state.hasStagedMetadata else { return state.lastReadMetadata }
            return state.stagedMetadata
        }
    }

    /// Sets (or with `nil`, removes) a metadata value; it becomes durable with the next save.
    /// - Throws: ``ObjectLogError/Code/invalidArgument`` for keys starting with
    ///   ``reservedKeyPrefix``.
    public func setMetadata(_ value: MetadataValue?, forKey key: String) throws(ObjectLogError) {
        guard !key.hasPrefix(Self.reservedKeyPrefix) else {
            throw ObjectLogError(
                .invalidArgument,
                "metadata key '\(key)' is reserved (keys starting with '\(Self.reservedKeyPrefix)')"
            )
        }
        try stageMetadata(value, forKey: key)
    }

    /// Stages `value` under `key` for the next save, reserved keys included: the engine's own
    /// settings (the history retention) travel as metadata.
    func stageMetadata(_ value: MetadataValue?, forKey key: String) throws(ObjectLogError) {
        // With the commits of saves still waiting for their flush: one of them may change the
        // metadata, and the staged dictionary replaces the whole.
        let committed = try readingStore {
            try store.waitForPendingCommits()
            return try store.metadata
        }
        state.withLock { state in
            if !state.hasStagedMetadata {
                state.stagedMetadata = committed
                state.hasStagedMetadata = true
            }
            state.stagedMetadata[key] = value
        }
    }

    /// Whether metadata changes wait for the next save.
    public var hasMetadataChanges: Bool { state.withLock { $0.hasStagedMetadata } }

    /// Calls `handler` after every successful save of any context on this coordinator.
    ///
    /// The handler runs on the saving context's thread, after the commit and after the saving
    /// context's own handlers; several observers run in the order they were added. Keep the
    /// returned token to remove it with ``removeObserver(_:)``; dropping the token leaves the
    /// handler registered for the life of the coordinator.
    @discardableResult
    public func addSaveObserver(
        _ handler: @escaping @Sendable (ObjectChanges) -> Void
    ) -> ObserverToken {
        let token = ObserverToken.make()
        state.withLock { $0.observers[token.number] = handler }
        return token
    }

    /// Removes a save observer: it is not called for saves that commit afterwards.
    ///
    /// A save broadcasting at the same moment on another thread may still call it once. A
    /// token of a context's handler or of another coordinator, or one already removed,
    /// changes nothing.
    public func removeObserver(_ token: ObserverToken) {
        _ = state.withLock { $0.observers.removeValue(forKey: token.number) }
    }

    // MARK: - Loading

    /// Loads an object's saved values from the store into `object`.
    ///
    /// With a context, unread external data stays lazy (the context remembers where it is);
    /// without one it is read at once.
    /// - Throws: ``ObjectLogError/Code/notFound`` if the store no longer has the object,
    ///   `store` if the store cannot read it, `corrupt` if its bytes cannot be decoded.
    func loadValues(
        of object: ManagedObject,
        entity: EntityDescription,
        context: ManagedObjectContext?
    ) throws(ObjectLogError) {
        let key = object.key
        let source = RecordSource(store: store, key: key, context: context)
        let found: Bool
        do {
            // A decoding error leaves the closure as itself: `withObject` rethrows it, and
            // `ObjectLogError.store` passes an `ObjectLogError` through unchanged. (Keeping it in
            // a captured optional instead cost a copy and a destroy of that optional per load.)
            found = try store.withObject(key, entity: entity.tag) {
                value,
                _,
                location,
                generation in
                object.loadedRecordOffset = location.offset
                object.recordOffsetBound = 0
                object.loadedGeneration = UInt32(truncatingIfNeeded: generation)
                var reader = PayloadReader(value)
                try ObjectDecoder.decode(&reader, into: object, entity: entity, source: source)
            }
        } catch {
            throw ObjectLogError.store(error, "cannot load \(object.objectID)")
        }
        guard found else {
            throw ObjectLogError(
                .notFound,
                "cannot fulfill the fault \(object.objectID): the store no longer has the object",
                objectID: object.objectID
            )
        }
    }

    // MARK: - Commit

    /// An updated or deleted object whose record must not have changed since it was loaded.
    struct LockCheck {
        var key: ObjectKey
        /// The record offset the context loaded; 0 when only ``offsetBound`` is known.
        var expectedOffset: UInt64
        /// Without an exact offset: the loaded record was older than this offset.
        var offsetBound: UInt64
        /// The low 32 bits of the file generation both offsets refer to (as objects keep it).
        var generation: UInt32

        /// The full generation the offsets refer to, given the file's `current` one; nil if
        /// it cannot be told (it would be 2^32 or more generations old).
        ///
        /// The check's generation is at most `current`, and compaction remembers far fewer
        /// than 2^32 generations, so the nearest generation at or below `current` with the
        /// same low bits is the right one whenever the offsets can still be translated.
        func fullGeneration(current: UInt64) -> UInt64? {
            // Safe: wrapping subtraction of 32-bit values gives the distance modulo 2^32.
            let behind = UInt64(UInt32(truncatingIfNeeded: current) &- generation)
            return behind <= current ? current - behind : nil
        }
    }

    /// An object of an entity with uniqueness constraints, as a save leaves it.
    struct UniqueChange {
        var key: ObjectKey
        var entity: EntityDescription
        var isDelete: Bool
        /// Encoded values per uniqueness constraint (empty for deletes).
        var values: [[UInt8]]
    }

    /// What a batch update's commit rests on: the store's end and generation before it looked
    /// for its objects, where it found their records, and the new encodings of the attributes
    /// it set (by payload index), which each of its puts sets while keeping every other value
    /// as its record had it.
    struct BatchUpdateBasis {
        var basis: (end: UInt64, generation: UInt64)
        /// A check of each object's record against the one the update read (made only when
        /// something was committed since `basis`).
        var lockChecks: () -> [LockCheck]
        var encodings: [Int: [UInt8]]
    }

    /// Has the store run `batch` as its own statements, under the lock, as a commit; nil when
    /// the store cannot.
    func executeInStore(_ batch: StoreBatch) throws(ObjectLogError) -> StoreBatchCommit? {
        let result: Result<StoreBatchCommit?, ObjectLogError> = state.withLock { state in
            // The batch changes values the indexes hold, in a store others write too.
            if !isExclusive { state.uniqueIndexes = [:] }
            do {
                let commit = try store.execute(batch)
                if commit != nil { invalidateDeclaredIndexes(state: &state) }
                return .success(commit)
            } catch let error as ObjectLogError {
                return .failure(error)
            } catch {
                return .failure(ObjectLogError.store(error, "cannot run the batch request"))
            }
        }
        let commit = try result.get()
        if commit != nil { store.finishCommit() }
        return commit
    }

    /// Checks conflicts and uniqueness and writes the commit, all under the lock; then waits
    /// for the commit's flush without it, so that the saves of other contexts meanwhile share
    /// the flush (group commit, see ``PersistentStore/beginSave(_:checking:)``).
    ///
    /// A batch update's records hold the values it found: its `batchUpdate` basis makes the
    /// commit fail with ``ObjectLogError/Code/conflict`` if any of its objects changed since it
    /// read them (a save meanwhile would be overwritten), and, when nothing at all was
    /// committed since, lets the columns take its new values without reading its records.
    ///
    /// - Returns: The commit (nil if nothing was written), the log's end after it, and the keys
    ///   of conflicting objects that the `.rollback` policy left out.
    func commit(
        _ transaction: Transaction,
        lockChecks: [LockCheck],
        uniqueChanges: [UniqueChange],
        objectIDs: (ObjectKey) -> ObjectID,
        policy: MergePolicy,
        batchUpdate: BatchUpdateBasis? = nil,
        loadedValues: (ObjectKey) -> [UInt8]? = { _ in nil }
    ) throws(ObjectLogError) -> (
        CommitInfo?, endOffset: UInt64, generation: UInt64, conflicts: [ObjectKey]
    ) {
        let result: Result<(StoreCommit?, [ObjectKey]), ObjectLogError> =
            state
            .withLock {
                state in
                var lockChecks = lockChecks
                var policy = policy
                var setValues: [Int: [UInt8]]?
                if let batchUpdate {
                    let now: (end: UInt64, generation: UInt64)
                    do {
                        // The end reads see: once the commits before it are, the end after
                        // them, which the basis is compared with.
                        try store.waitForPendingCommits()
                        now = try store.endAndGeneration
                    } catch {
                        return .failure(ObjectLogError.store(error, "cannot commit the save"))
                    }
                    if now == batchUpdate.basis {
                        setValues = batchUpdate.encodings
                    } else {
                        lockChecks = batchUpdate.lockChecks()
                        policy = .error
                    }
                }
                var conflicts: [ObjectKey] = []
                // The checks that held, as the store's positions now: a store that other
                // processes write checks them again within its commit.
                var held: [StoreLockCheck] = []
                // A store others write checks the versions again within its commit, where a
                // change since is found for certain: a save that fails on any conflict leaves
                // the checks to it alone, saving a read of every version first.
                let storeChecksAlone = !isExclusive && policy == .error && batchUpdate == nil
                if storeChecksAlone {
                    held = lockChecks.map {
                        StoreLockCheck(
                            key: $0.key,
                            expectedOffset: $0.expectedOffset,
                            offsetBound: $0.offsetBound
                        )
                    }
                } else if policy != .overwrite, !lockChecks.isEmpty {
                    // Every record offset in one round trip to the store's lock.
                    let offsets: [UInt64?]
                    let generation: UInt64
                    do {
                        (offsets, generation) = try store.recordOffsetsAndGeneration(
                            of: lockChecks.map(\.key)
                        )
                    } catch {
                        return .failure(ObjectLogError.store(error, "cannot commit the save"))
                    }
                    for (var check, current) in zip(lockChecks, offsets) {
                        let checkGeneration = check.fullGeneration(current: generation) ?? 0
                        if checkGeneration != generation {
                            // Compaction moved the records since the context saw them; it keeps
                            // their order, so the offsets translate while it remembers the move.
                            let translated: UInt64?
                            if check.expectedOffset != 0 {
                                translated = store.translateOffset(
                                    check.expectedOffset,
                                    from: checkGeneration,
                                    exact: true
                                )
                                check.expectedOffset = translated ?? 0
                            } else if check.offsetBound != 0 {
                                translated = store.translateOffset(
                                    check.offsetBound,
                                    from: checkGeneration,
                                    exact: false
                                )
                                check.offsetBound = translated ?? 0
                            } else {
                                translated = 0
                            }
                            if translated == nil {
                                // Compactions since have forgotten where the record was: the
                                // values decide. The object is unchanged in the store if its
                                // record holds the values the context loaded, as reads see it
                                // once every commit before is.
                                do {
                                    try store.waitForPendingCommits()
                                } catch {
                                    return .failure(
                                        ObjectLogError.store(error, "cannot commit the save")
                                    )
                                }
                                if !storedValues(of: check.key, equal: loadedValues(check.key)) {
                                    conflicts.append(check.key)
                                } else {
                                    held.append(
                                        StoreLockCheck(
                                            key: check.key,
                                            expectedOffset: current ?? 0,
                                            offsetBound: 0
                                        )
                                    )
                                }
                                continue
                            }
                        }
                        // Any write after the one this context saw lies beyond the bound.
                        let lock = StoreLockCheck(
                            key: check.key,
                            expectedOffset: check.expectedOffset,
                            offsetBound: check.offsetBound
                        )
                        if lock.holds(current: current) {
                            held.append(lock)
                        } else {
                            conflicts.append(check.key)
                        }
                    }
                    if !conflicts.isEmpty, policy == .error {
                        return .failure(Self.conflictError(conflicts, objectIDs: objectIDs))
                    }
                }
                var transaction = transaction
                var uniqueChanges = uniqueChanges
                if !conflicts.isEmpty {
                    let skipped = Set(conflicts)
                    held.removeAll { skipped.contains($0.key) }
                    transaction = transaction.filter { !skipped.contains($0) }
                    uniqueChanges.removeAll { skipped.contains($0.key) }
                }
                // Another process may have saved since the indexes were read.
                if !isExclusive { state.uniqueIndexes = [:] }
                if let error = checkUniqueness(uniqueChanges, state: &state, objectIDs: objectIDs) {
                    return .failure(error)
                }
                if state.hasStagedMetadata { transaction.metadata = state.stagedMetadata }
                guard !transaction.isEmpty else { return .success((nil, conflicts)) }
                let commit: StoreCommit
                do {
                    commit = try commitUpdatingColumns(
                        transaction,
                        setting: setValues,
                        locks: held,
                        state: &state
                    )
                } catch let conflict as StoreConflict {
                    // Another process saved the objects since the checks above.
                    state.columns = [:]
                    invalidateDeclaredIndexes(state: &state)
                    return .failure(Self.conflictError(conflict.keys, objectIDs: objectIDs))
                } catch {
                    // They may hold the values of a save that failed: they are built again from
                    // the store when next needed.
                    state.columns = [:]
                    invalidateDeclaredIndexes(state: &state)
                    return .failure(ObjectLogError.store(error, "cannot commit the save"))
                }
                state.hasStagedMetadata = false
                state.stagedMetadata = [:]
                if isExclusive {
                    applyUniqueness(uniqueChanges, state: &state)
                } else {
                    // Other processes save too: the indexes are read again when next needed.
                    state.uniqueIndexes = [:]
                }
                return .success((commit, conflicts))
            }
        let (commit, conflicts) = try result.get()
        guard let commit else { return (nil, 0, 0, conflicts) }
        do {
            try store.waitUntilDurable(commit)
        } catch {
            // What the coordinator keeps holds the commit's values: built again from the store
            // when next needed (the store, poisoned, takes no more saves meanwhile).
            state.withLock { state in
                state.columns = [:]
                state.uniqueIndexes = [:]
            }
            throw ObjectLogError.store(error, "cannot commit the save")
        }
        // Once the coordinator's lock is released: contexts keep reading and saving while a
        // compaction copies the store, as they do while one is started by hand.
        store.finishCommit()
        return (commit.info, commit.end, commit.generation, conflicts)
    }

    /// The error of a save whose objects `keys` changed in the store since they were loaded.
    private static func conflictError(
        _ keys: [ObjectKey],
        objectIDs: (ObjectKey) -> ObjectID
    ) -> ObjectLogError {
        ObjectLogError(
            .conflict,
            "optimistic locking failure: "
                + keys.map { "\(objectIDs($0))" }.joined(separator: ", ")
                + " changed in the store since this context loaded them",
            objectID: keys.first.map(objectIDs)
        )
    }

    /// Saves at least this large update the attribute columns on this thread while another
    /// commits them; smaller ones update them after their commit, as handing a commit to
    /// another thread would cost more than the update.
    static var concurrentColumnUpdateChanges: Int { 4_096 }

    /// Commits `transaction` to the store and brings the attribute columns up to date with it,
    /// the two at once for a large save.
    ///
    /// The store is told nothing of the columns and never calls back: a large save's commit
    /// runs on another thread while this one, holding the coordinator's lock, updates them.
    /// A small save's commit may return before it is durable (``PersistentStore/beginSave(_:checking:)``);
    /// the columns then hold its values before reads see them, which ``withColumns(of:indices:_:)``
    /// waits for. When the commit throws, the caller drops the columns.
    private func commitUpdatingColumns(
        _ transaction: Transaction,
        setting setValues: [Int: [UInt8]]?,
        locks: [StoreLockCheck],
        state: inout State
    ) throws -> StoreCommit {
        func updateColumns(state: inout State) {
            if let setValues {
                self.updateColumns(setting: setValues, by: transaction, state: &state)
            } else {
                self.updateColumns(with: transaction, state: &state)
            }
            updateDeclaredIndexes(
                with: transaction,
                setting: setValues.map { Set($0.keys) },
                state: &state
            )
        }
        guard !state.columns.isEmpty, transaction.count >= Self.concurrentColumnUpdateChanges
        else {
            let commit = try store.beginSave(transaction, checking: locks)
            updateColumns(state: &state)
            return commit
        }
        let commit = ConcurrentCommit(store: store, transaction: transaction, locks: locks)
        updateColumns(state: &state)
        return try commit.wait()
    }

    /// Runs `body` under the lock with the columns of `entity` that hold at least the attributes
    /// at `indices` (built from the store first if needed): the columns then equal the saved
    /// objects, and no commit can happen before `body` returns.
    ///
    /// - Returns: What `body` returns, or nil if there can be no such columns (an attribute
    ///   that is not a scalar, an unreadable record).
    func withColumns<Result>(
        of entity: EntityDescription,
        indices: [Int],
        _ body: (AttributeColumns) throws -> Result
    ) throws -> Result? {
        // Columns of a store that other processes write would miss their saves.
        guard isExclusive, indices.allSatisfy({ AttributeColumns.canHold($0, of: entity) }) else {
            return nil
        }
        var output: Result?
        var failure: (any Error)?
        state.withLock { state in
            // The columns hold the values of saves whose commits may still wait for their
            // flush, and `body` reads records as reads see them: once those commits are
            // durable, the two agree (no save can begin another meanwhile, as this holds the
            // coordinator's lock).
            do {
                try store.waitForPendingCommits()
            } catch {
                failure = error
                return
            }
            let columns: AttributeColumns
            if let existing = state.columns[entity.tag] {
                columns = existing
            } else {
                columns = AttributeColumns.make(for: entity, store: store)
                state.columns[entity.tag] = columns
            }
            guard columns.add(indices, store: store) else { return }
            do {
                output = try body(columns)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        return output
    }

    /// Brings the columns up to date with a committed transaction.
    private func updateColumns(with transaction: Transaction, state: inout State) {
        guard !state.columns.isEmpty else { return }
        // The entries are read in place, field by field (a copy of one retains its blob list).
        // A save's entries are mostly puts of one entity: each run of puts of an entity goes
        // to its columns in one call.
        transaction.records.withUnsafeBytes { records in
            transaction.entries.withUnsafeBufferPointer { entries in
                var index = 0
                while index < entries.count {
                    let tag = entries[index].entity
                    guard let columns = state.columns[tag] else {
                        index += 1
                        continue
                    }
                    let keeps: Bool
                    if entries[index].isDelete {
                        columns.remove(entries[index].key)
                        keeps = !columns.isWasteful
                        index += 1
                    } else {
                        var end = index + 1
                        while end < entries.count, entries[end].entity == tag,
                            !entries[end].isDelete
                        {
                            end += 1
                        }
                        // A patch's value is partial: the columns are built again when
                        // next asked for (a batch update that patches keeps them up to date
                        // through its new values instead, when nothing came between).
                        keeps =
                            !entries[index..<end].contains { $0.isPatch }
                            && columns.put(entries, index..<end, records: records)
                        index = end
                    }
                    if !keeps { state.columns[tag] = nil }
                }
            }
        }
    }

    /// Brings the columns up to date with a committed batch update, whose puts (of objects
    /// live before it) set the attributes of `encodings` and keep the others.
    private func updateColumns(
        setting encodings: [Int: [UInt8]],
        by transaction: Transaction,
        state: inout State
    ) {
        guard !state.columns.isEmpty else { return }
        transaction.entries.withUnsafeBufferPointer { entries in
            var index = 0
            while index < entries.count {
                let tag = entries[index].entity
                var end = index + 1
                while end < entries.count, entries[end].entity == tag { end += 1 }
                if let columns = state.columns[tag],
                    !columns.set(encodings, of: entries, index..<end)
                {
                    state.columns[tag] = nil
                }
                index = end
            }
        }
    }

    /// Tells save observers (and so the contexts that merge) about a commit another process
    /// made, as about a save of this one.
    private func receive(_ changes: StoreChanges) {
        // What the coordinator keeps of the store describes it before this commit (a read-only
        // log store's, which follows its writer): it is built again when next needed.
        state.withLock { state in
            state.columns = [:]
            state.uniqueIndexes = [:]
        }
        func ids(_ objects: [(key: ObjectKey, entity: EntityTag)]) -> [ObjectID] {
            objects.compactMap { object in
                model.entity(tag: object.entity).map {
                    ObjectID(entityName: $0.name, key: object.key)
                }
            }
        }
        let objectChanges = ObjectChanges(
            inserted: ids(changes.inserted),
            updated: ids(changes.updated),
            deleted: ids(changes.deleted),
            transactionNumber: changes.number,
            isIncomplete: changes.isIncomplete
        )
        guard !objectChanges.isEmpty else { return }
        broadcast(objectChanges)
    }

    /// Whether any save observer is registered.
    var hasSaveObservers: Bool { state.withLock { !$0.observers.isEmpty } }

    /// Whether the live record of `key` holds exactly `values` (as the engine encodes them);
    /// false without values, or when the record cannot be read.
    private func storedValues(of key: ObjectKey, equal values: [UInt8]?) -> Bool {
        guard let values, let record = try? store.readObject(key) else { return false }
        return record.payload == values
    }

    /// Tells save observers about a commit, in the order they were added (tokens number
    /// them in that order).
    func broadcast(_ changes: ObjectChanges) {
        let observers = state.withLock { state in
            state.observers.sorted { $0.key < $1.key }.map(\.value)
        }
        for observer in observers { observer(changes) }
    }

    /// The constraints of an entity, parallel to its `uniquenessConstraints`.
    private static func scopes(of entity: EntityDescription) -> [UniqueScope] {
        zip(entity.uniquenessScopes, entity.uniquenessConstraints).map {
            UniqueScope(tag: $0, members: $1)
        }
    }

    /// Builds the indexes of the constraints of `entities` not built yet from the store: one
    /// pass over the objects of each hierarchy a constraint spans.
    private func buildUniqueIndexes(
        for entities: some Sequence<EntityDescription>,
        state: inout State
    ) {
        var missing: [EntityTag: [UniqueScope]] = [:]
        for entity in entities {
            for scope in Self.scopes(of: entity) where state.uniqueIndexes[scope] == nil {
                if missing[scope.tag]?.contains(scope) != true {
                    missing[scope.tag, default: []].append(scope)
                }
            }
        }
        // Built from the store as reads see it: once the commits of saves that still wait for
        // their flush are too (the indexes already hold their values only where built). A
        // failed flush leaves the store refusing saves, so the indexes need not be right then.
        if !missing.isEmpty { try? store.waitForPendingCommits() }
        for (tag, scopes) in missing {
            var indexes = Array(repeating: UniqueIndex(), count: scopes.count)
            for entity in model.entity(tag: tag)?.concreteEntities ?? [] {
                let scratch = entity.objectType.init()
                try? store.forEachLiveObject(entity: entity.tag) { key, _, buffer in
                    var reader = PayloadReader(buffer)
                    guard
                        (try? ObjectDecoder.decode(
                            &reader,
                            into: scratch,
                            entity: entity,
                            source: nil
                        )) != nil
                    else { return }
                    for (index, scope) in scopes.enumerated() {
                        let value = ObjectEncoder.uniqueValue(
                            of: scratch,
                            group: scope.members,
                            entity: entity
                        )
                        indexes[index].keysByValue[value] = key
                        indexes[index].valuesByKey[key] = value
                    }
                }
            }
            for (index, scope) in scopes.enumerated() {
                state.uniqueIndexes[scope] = indexes[index]
            }
        }
    }

    /// For objects about to be inserted: per object and uniqueness constraint, the key of the
    /// saved object that holds the same values, leaving out `excluded` (objects the save updates
    /// or deletes).
    ///
    /// The holder may be of another entity of the constraint's hierarchy.
    func savedUniqueHolders(
        entity: EntityDescription,
        values: [[[UInt8]]],
        excluding excluded: Set<ObjectKey>
    ) -> [[ObjectKey?]] {
        state.withLock { state in
            if !isExclusive { state.uniqueIndexes = [:] }
            buildUniqueIndexes(for: [entity], state: &state)
            let scopes = Self.scopes(of: entity)
            return values.map { objectValues in
                objectValues.enumerated().map { constraint, value in
                    state.uniqueIndexes[scopes[constraint]]?.keysByValue[value].flatMap {
                        excluded.contains($0) ? nil : $0
                    }
                }
            }
        }
    }

    /// Checks the objects a save leaves against each other and the store, constraint by
    /// constraint: a constraint of a superentity holds across the objects of every entity
    /// below it.
    private func checkUniqueness(
        _ changes: [UniqueChange],
        state: inout State,
        objectIDs: (ObjectKey) -> ObjectID
    ) -> ObjectLogError? {
        var errors: [ObjectLogError] = []
        // Grouped by entity first (hashing a tag per object), then by constraint.
        var entities: [EntityTag: EntityDescription] = [:]
        var byEntity: [EntityTag: [UniqueChange]] = [:]
        for change in changes where !change.entity.uniquenessConstraints.isEmpty {
            if byEntity[change.entity.tag] == nil { entities[change.entity.tag] = change.entity }
            byEntity[change.entity.tag, default: []].append(change)
        }
        var order: [UniqueScope] = []
        var byScope: [UniqueScope: [(change: UniqueChange, constraint: Int)]] = [:]
        for (tag, group) in byEntity.sorted(by: { $0.key < $1.key }) {
            guard let entity = entities[tag] else { continue }
            for (constraint, scope) in Self.scopes(of: entity).enumerated() {
                if byScope[scope] == nil { order.append(scope) }
                byScope[scope, default: []].append(contentsOf: group.lazy.map { ($0, constraint) })
            }
        }
        buildUniqueIndexes(for: entities.values, state: &state)
        // A saved holder may be of another entity of the hierarchy than the save's objects.
        func objectID(_ key: ObjectKey) -> ObjectID {
            // For the message only: a key whose entity cannot be read is named as the save has it.
            if let location = try? store.location(of: key),
                let entity = model.entity(tag: location.entity)
            {
                return ObjectID(entityName: entity.name, key: key)
            }
            return objectIDs(key)
        }
        for scope in order {
            guard let group = byScope[scope], let owner = model.entity(tag: scope.tag) else {
                continue
            }
            let index = state.uniqueIndexes[scope] ?? UniqueIndex()
            let leaving = Set(group.map(\.change.key))
            var claimed: [[UInt8]: ObjectKey] = [:]
            for (change, constraint) in group where !change.isDelete {
                let value = change.values[constraint]
                if let other = claimed[value]
                    ?? index.keysByValue[value].flatMap({ leaving.contains($0) ? nil : $0 })
                {
                    if other == change.key { continue }
                    let names = scope.members.map { owner.accessors[$0].name }
                    let values = Self.describeUniqueValue(
                        value,
                        members: scope.members,
                        entity: owner
                    )
                    errors.append(
                        ObjectLogError(
                            .uniqueness,
                            "uniqueness constraint of '\(owner.name)' on "
                                + names.map { "'\($0)'" }.joined(separator: ", ")
                                + " violated: \(objectID(change.key)) has the same values ("
                                + values + ") as \(objectID(other))",
                            objectID: objectID(change.key),
                            property: names.joined(separator: ",")
                        )
                    )
                }
                claimed[value] = change.key
            }
        }
        guard !errors.isEmpty else { return nil }
        if errors.count == 1 { return errors[0] }
        return ObjectLogError(
            .uniqueness,
            "\(errors.count) uniqueness violations",
            objectID: errors[0].objectID,
            property: errors[0].property,
            errors: errors
        )
    }

    /// The values of a uniqueness group, decoded from their concatenated encodings.
    static func describeUniqueValue(
        _ bytes: [UInt8],
        members: [Int],
        entity: EntityDescription
    ) -> String {
        bytes.withUnsafeBytes { buffer in
            var reader = PayloadReader(buffer)
            return members.map { index in
                let accessor = entity.accessors[index]
                let value = (try? accessor.decodeValue(from: &reader, source: nil)).map {
                    String(reflecting: $0)
                }
                return "\(accessor.name) = \(value ?? "?")"
            }.joined(separator: ", ")
        }
    }

    private func applyUniqueness(_ changes: [UniqueChange], state: inout State) {
        var byEntity: [EntityTag: [UniqueChange]] = [:]
        for change in changes where !change.entity.uniquenessConstraints.isEmpty {
            byEntity[change.entity.tag, default: []].append(change)
        }
        for group in byEntity.values {
            for (constraint, scope) in Self.scopes(of: group[0].entity).enumerated() {
                // Taken out and put back, so that it is changed in place, not copied.
                guard var index = state.uniqueIndexes.removeValue(forKey: scope) else { continue }
                for change in group {
                    if let old = index.valuesByKey.removeValue(forKey: change.key),
                        index.keysByValue[old] == change.key
                    {
                        index.keysByValue[old] = nil
                    }
                    if !change.isDelete {
                        let value = change.values[constraint]
                        index.keysByValue[value] = change.key
                        index.valuesByKey[change.key] = value
                    }
                }
                state.uniqueIndexes[scope] = index
            }
        }
    }
}
