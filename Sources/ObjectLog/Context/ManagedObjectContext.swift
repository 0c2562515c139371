import Foundation
import ObjectLogStore

/// A scratch pad of managed objects: it registers, tracks and saves them.
///
/// A context is Core Data's `NSManagedObjectContext` (SwiftData's `ModelContext`): insert and
/// delete objects, change their properties, fetch, then ``save()`` as one atomic transaction,
/// or ``rollback()``.
///
/// ```swift
/// let context = container.mainContext
/// let configuration = Configuration(context: context)
/// configuration.name = "Spots"
/// try context.save()
/// ```
///
/// Contexts and their objects are not `Sendable`: each lives in one isolation domain (the main
/// actor for ``PersistentContainer/mainContext``, a task for
/// ``PersistentContainer/performBackgroundTask(_:)``). Pass ``ObjectID`` values between them.
///
/// Rules:
/// 1. One instance per object per context (uniquing): fetching or resolving the same object ID
///    twice gives the same instance.
/// 2. Fetched objects are faults until a property is read; counting and fetching IDs never
///    decodes objects.
/// 3. A failed save changes nothing in the store and leaves every change in the context.
/// 4. An object belongs to one context. Inserting it into another throws; relating it to an
///    object of another context is not done, and that context's next save throws (a setter
///    cannot throw). Look objects up by ``ObjectID`` in each context instead.
/// 5. Keep a context alive while you change its objects: a write to an object whose context
///    has been released stops the program with a message (see ``ManagedObject``).
public final class ManagedObjectContext {
    /// The coordinator that commits this context's saves.
    public let coordinator: PersistentStoreCoordinator
    /// How a save treats objects changed in the store since they were loaded, and inserted
    /// objects whose unique values an existing object holds (see ``MergePolicy``).
    public var mergePolicy: MergePolicy = .error
    /// A name for debugging.
    public var name: String?
    /// Who is making this context's changes, kept with each transaction it saves for the
    /// store's history (``HistoryTransaction/author``), as Core Data's `transactionAuthor`.
    public var author: String?

    // As in `ManagedObject`, the per-object bookkeeping is `@exclusivity(unchecked)`: the
    // dynamic check cost more than the work on every insert and fetch, and a context is used
    // from one isolation domain, by engine code that never holds these in a long `inout`.
    let registry = ObjectTable()
    @exclusivity(unchecked) var insertedList: [ManagedObject] = []
    @exclusivity(unchecked) var insertedCount = 0
    let updatedMap = ObjectTable()
    @exclusivity(unchecked) var deletedMap: [ObjectKey: ManagedObject] = [:]
    /// Blob references of external data: of data not read yet, and of data read (or saved)
    /// with the value it had then, so that a save of the object writes unchanged data back as
    /// the same reference instead of hashing and storing it again.
    var externalReferences: [ExternalDataKey: ExternalReference] = [:]
    @exclusivity(unchecked) private var lastInsertedEntity: EntityDescription?
    /// Registered objects that are faults (an estimate: refaulting does not count).
    @exclusivity(unchecked) var registeredFaults = 0
    /// Faults loaded one at a time since the last bulk load.
    @exclusivity(unchecked) var faultsFiredOneByOne = 0
    @exclusivity(unchecked) private var nextKey: ObjectKey = 1
    @exclusivity(unchecked) private var lastKey: ObjectKey = 0
    /// The snapshots of the changed objects, back to back; each object knows its span.
    ///
    /// Emptied whenever no object is updated or deleted any more (after a save, a rollback or
    /// a reset), the only objects that hold snapshots.
    @exclusivity(unchecked) private var snapshotBuffer = PayloadWriter()
    /// The misuses that calls which cannot throw met (``ManagedObject/init(context:)`` of a
    /// class outside the model, a relationship set to an object of another context), in order,
    /// kept until the next ``save()`` throws them.
    var misuseErrors: [ObjectLogError] = []
    // In registration order, which is the order they run in; each with the number its
    // token carries.
    var willSaveHandlers: [(token: UInt64, handler: (ManagedObjectContext) throws -> Void)] = []
    var didSaveHandlers: [(token: UInt64, handler: (ObjectChanges) -> Void)] = []
    var changeHandlers: [(token: UInt64, handler: (ObjectChanges) -> Void)] = []
    /// The live queries' handlers (see ``observe(_:)``): told of what objects-did-change
    /// handlers are, and of a merge's every object, registered here or not.
    var liveQueryHandlers: [(token: UInt64, handler: (ObjectChanges) -> Void)] = []
    /// The first error met while loading a fault (a property getter cannot throw, so it
    /// returns the default value), kept until the next ``save()`` or fetch throws it.
    ///
    /// ``ManagedObject/fulfillFault()`` loads one object and throws at once instead.
    public internal(set) var faultError: ObjectLogError?
    /// A number that tells this context's own saves apart in broadcasts.
    let identifier = UInt64.random(in: 1...UInt64.max)
    /// When large saves, fetches and fault loads run on two threads; for tests and benchmarks
    /// to lower, not API.
    var tuning = ContextTuning()
    /// The batches of recent fetches with a `fetchBatchSize` whose objects are still faults.
    var faultBatches: [FaultBatches] = []
    /// Receives the context's events (see ``ContextTracer``); nil unless a test or benchmark
    /// installs one.
    var tracer: ContextTracer?
    /// What ``undoManager`` holds (see ManagedObjectContext+Undo.swift).
    var undoManagerStorage: ContextUndoManager?
    /// The access bits every object registered here carries besides its own state:
    /// ``AccessState/observed`` when ``objectsAreObservable`` is true, else none (see
    /// ManagedObjectContext+Observation.swift).
    @exclusivity(unchecked) var observationBits: AccessState = []

    /// Creates a context on a coordinator.
    public init(coordinator: PersistentStoreCoordinator) {
        self.coordinator = coordinator
        link = ContextLink(coordinator: coordinator)
        link.context = self
    }

    /// What this context's objects refer to it through (see ``ManagedObject/contextLink``).
    let link: ContextLink
    /// Further links to this context, one for each part of a fetch that made its faults on
    /// two threads (see `makeFaultsInParallel`).
    @exclusivity(unchecked) private var workerLinks: [ContextLink] = []

    /// A new link to this context, for a worker thread to give the objects it makes.
    func workerLink() -> ContextLink {
        let made = ContextLink(coordinator: coordinator)
        made.context = self
        workerLinks.append(made)
        return made
    }

    deinit {
        // The objects outlive the context: from now on they see no context, and refuse
        // writes, which no context could save (see `ManagedObject.willWrite`).
        link.context = nil
        link.isContextReleased = true
        for workerLink in workerLinks {
            workerLink.context = nil
            workerLink.isContextReleased = true
        }
        // Objects with unsaved changes write without a check (nothing more to record); make
        // their next write take the checked path too. Unchanged objects already do.
        for object in insertedList where object.isInserted && object.contextLink === link {
            object.accessState.insert(.tracksUpdates)
        }
        for object in updatedMap.allObjects { object.accessState.insert(.tracksUpdates) }
        // Unread external data stays readable after the context is gone: the blob references
        // move to the objects, which read them through the coordinator.
        for (reference, external) in externalReferences {
            registry[reference.key]?.detachedExternal[reference.propertyIndex] = external.blob
        }
    }

    /// Creates a context on a container's coordinator.
    public convenience init(container: PersistentContainer) {
        self.init(coordinator: container.coordinator)
    }

    var store: any PersistentStore { coordinator.store }
    var model: ManagedObjectModel { coordinator.model }

    // MARK: - State

    /// Whether there are unsaved inserts, updates or deletes.
    public var hasChanges: Bool {
        insertedCount > 0 || updatedMap.count > 0 || !deletedMap.isEmpty
    }

    /// Objects inserted since the last save.
    public var insertedObjects: Set<ManagedObject> {
        Set(insertedList.lazy.filter { $0.isInserted && $0.managedObjectContext === self })
    }

    /// Saved objects changed since the last save.
    public var updatedObjects: Set<ManagedObject> { Set(updatedMap.allObjects) }

    /// Saved objects deleted since the last save.
    public var deletedObjects: Set<ManagedObject> { Set(deletedMap.values) }

    /// Every object the context knows, faults included.
    public var registeredObjects: Set<ManagedObject> { Set(registry.allObjects) }

    // MARK: - Insert and delete

    /// Inserts a new object; it is saved by the next ``save()``.
    ///
    /// The object gets its permanent ``ObjectID`` at once. Inserting an object already in this
    /// context does nothing (or undoes its deletion).
    ///
    /// ``ManagedObject/init(context:)`` inserts too, but an initializer that cannot throw
    /// cannot report a class missing from the model: it leaves the object outside any context,
    /// and this context's next ``save()`` throws the error.
    /// - Throws: ``ObjectLogError/Code/contextMismatch`` if the object belongs to another
    ///   context, live or released (pass its ``ManagedObject/objectID`` and look it up
    ///   instead);
    ///   ``ObjectLogError/Code/entityNotInModel`` if its class is not an entity of the model;
    ///   ``ObjectLogError/Code/abstractEntity`` if its entity is abstract.
    public func insert(_ object: ManagedObject) throws(ObjectLogError) {
        // The link, not `managedObjectContext`: comparing it retains and releases nothing,
        // which shows in bulk inserts. (Faults made on worker threads have links of their own.)
        if object.contextLink === link || object.contextLink?.context === self {
            if object.isDeleted {
                recordUndoState(of: object)
                undelete(object)
            }
            return
        }
        if object.contextLink != nil, let other = object.managedObjectContext {
            throw ObjectLogError(
                .contextMismatch,
                "cannot insert \(object) into context \(name ?? "(unnamed)"): it belongs to "
                    + "context \(other.name ?? "(unnamed)"); look it up there by its objectID",
                objectID: object.objectID
            )
        }
        if object.contextLink?.isContextReleased == true {
            // Inserting it anew would make a second copy of a saved object under a new key.
            throw ObjectLogError(
                .contextMismatch,
                "cannot insert \(object) into context \(name ?? "(unnamed)"): it belongs to a "
                    + "context that was released; look it up by its objectID instead",
                objectID: object.objectID
            )
        }
        let entity: EntityDescription
        if let cached = lastInsertedEntity, cached.objectType == type(of: object) {
            entity = cached
        } else {
            entity = try self.entity(of: type(of: object))
            guard !entity.isAbstract else {
                throw ObjectLogError(
                    .abstractEntity,
                    "cannot insert \(object): entity '\(entity.name)' is abstract; insert an object "
                        + "of one of its subentities ("
                        + entity.concreteEntities.map(\.name).joined(separator: ", ") + ")"
                )
            }
            lastInsertedEntity = entity
        }
        if nextKey > lastKey {
            let range = try readingStore { try store.allocateKeys(4096) }
            nextKey = range.lowerBound
            lastKey = range.upperBound
        }
        recordUndoState(of: object)
        object.key = nextKey
        nextKey += 1
        object.entity = entity
        object.contextLink = link
        object.lifecycle = .inserted
        object.accessState = observationBits
        registry.insert(object, for: object.key)
        insertedList.append(object)
        insertedCount += 1
        object.awakeFromInsert()
    }

    /// Deletes an object; the deletion is saved by the next ``save()``.
    ///
    /// Delete rules run at once: `cascade` deletes the destinations, `nullify` removes the
    /// object from their inverse, `deny` is checked when saving.
    public func delete(_ object: ManagedObject) {
        guard object.managedObjectContext === self, !object.isDeleted else { return }
        if object.isFault { object.fireFault() }
        guard let entity = object.entity else { return }
        recordUndoState(of: object)
        // Before the rules, while the relationships still hold their objects.
        object.prepareForDeletion()
        if object.isInserted {
            object.lifecycle.remove(.inserted)
            insertedCount -= 1
        } else {
            updatedMap[object.key] = nil
            deletedMap[object.key] = object
        }
        object.lifecycle.insert(.deleted)
        for (index, accessor) in entity.relationshipAccessors.enumerated() {
            let rule = entity.rules[index].deleteRule
            guard rule == .nullify || rule == .cascade else { continue }
            for key in accessor.keys(of: object) {
                guard let destination = registeredObject(forKey: key) else { continue }
                if let inverse = accessor.inverse, !destination.isDeleted {
                    prepareModification(of: destination)
                    inverse.removeKey(object.key, from: destination)
                }
                if rule == .cascade { delete(destination) }
            }
        }
        if !object.lifecycle.contains(.inserted), deletedMap[object.key] == nil {
            // An inserted object that is deleted again is simply forgotten.
            registry[object.key] = nil
            object.managedObjectContext = nil
            object.lifecycle = []
        }
    }

    private func undelete(_ object: ManagedObject) {
        deletedMap[object.key] = nil
        object.lifecycle.remove(.deleted)
        markUpdated(object)
    }

    // MARK: - Objects by ID

    /// The registered object with a key, or a fault if the store has it.
    func registeredObject(forKey key: ObjectKey) -> ManagedObject? {
        if let registered = registry[key] { return registered }
        let location: RecordLocation?
        do {
            location = try store.location(of: key)
        } catch {
            recordFaultError(ObjectLogError.store(error, "cannot look up object \(key)"))
            return nil
        }
        guard let location, let entity = model.entity(tag: location.entity) else { return nil }
        return makeFault(key: key, entity: entity)
    }

    /// The registered object with a key as a given class.
    func registeredObject<T: ManagedObject>(forKey key: ObjectKey, as: T.Type) -> T? {
        registeredObject(forKey: key) as? T
    }

    /// Registers a fault for a saved object.
    func makeFault(key: ObjectKey, entity: EntityDescription) -> ManagedObject {
        let object = entity.objectType.init()
        register(fault: object, key: key, entity: entity)
        return object
    }

    /// Registers a new object as the fault of a saved object.
    func register(fault object: ManagedObject, key: ObjectKey, entity: EntityDescription) {
        object.key = key
        object.entity = entity
        object.managedObjectContext = self
        object.accessState = observationBits.union([.fault, .tracksUpdates])
        registry.insert(object, for: key)
        registeredFaults += 1
    }

    // MARK: - Change tracking

    /// Loads a fault's values from the store; a failure is recorded in ``faultError``.
    func loadValues(of object: ManagedObject) {
        registeredFaults = max(0, registeredFaults - 1)
        // A fault of a batched fetch loads its batch instead of, after a few, every fault.
        if faultBatches.isEmpty || !loadBatch(containing: object.key) {
            faultsFiredOneByOne += 1
            if faultsFiredOneByOne >= bulkLoadThresholds.fired,
                registeredFaults >= bulkLoadThresholds.left, let entity = object.entity
            {
                loadAllFaults(of: entity)
            }
        }
        guard let entity = object.entity else { return }
        do {
            try coordinator.loadValues(of: object, entity: entity, context: self)
            object.awakeAfterLoad()
        } catch {
            object.loadError = error
            recordFaultError(error)
        }
    }

    /// Keeps a misuse met by a call that cannot throw until the next save reports it.
    ///
    /// Every one is kept, not just the first: the save reports and forgets them all, and a
    /// misuse dropped here would leave its assignment undone without a word at the retry.
    func recordMisuse(_ error: ObjectLogError) {
        misuseErrors.append(error)
    }

    /// Throws (and clears) the misuses calls that cannot throw recorded: one as it is, several
    /// in one error that lists each in ``ObjectLogError/errors`` and has the code, object and
    /// property of the first.
    func throwMisuseError() throws(ObjectLogError) {
        guard let first = misuseErrors.first else { return }
        let errors = misuseErrors
        misuseErrors = []
        if errors.count == 1 { throw first }
        throw ObjectLogError(
            first.code,
            "\(errors.count) misuses since the last save; nothing was saved",
            objectID: first.objectID,
            property: first.property,
            errors: errors
        )
    }

    /// Keeps the first fault-loading error until a save or fetch reports it.
    func recordFaultError(_ error: ObjectLogError) {
        if faultError == nil { faultError = error }
    }

    /// Throws (and clears) the error of a fault that could not be loaded.
    func throwFaultError() throws(ObjectLogError) {
        guard let error = faultError else { return }
        faultError = nil
        throw error
    }

    /// After this many single fault loads, a context considers loading all faults at once.
    static let faultsBeforeBulkLoad = 256
    /// The least number of registered faults for which one pass over the log pays off.
    static let faultsForBulkLoad = 4096

    /// After how many single loads, and with how many faults left, a context loads every
    /// fault at once: soon on a store on a server, where each single load is a round trip
    /// that costs as much as reading many records at once.
    var bulkLoadThresholds: (fired: Int, left: Int) {
        coordinator.isExclusive ? (Self.faultsBeforeBulkLoad, Self.faultsForBulkLoad) : (16, 64)
    }

    /// Loads every registered fault of an entity in one sequential pass over the log.
    ///
    /// Code that reads the properties of many fetched faults (a loop over a large fetch)
    /// would otherwise read the store once per object; after ``faultsBeforeBulkLoad`` single
    /// loads with many faults left, one scan is much cheaper.
    func loadAllFaults(of entity: EntityDescription) {
        faultsFiredOneByOne = 0
        trace(.bulkFaultLoad)
        do {
            let (scanBound, generation) = try store.endAndGeneration
            // When the faults are a minority of the entity's objects, read just their records
            // rather than check and decode every record to load a few; otherwise scan them all.
            if try registeredFaults * 2 < store.liveCount(entity: entity.tag) {
                let keys = registry.allObjects.lazy.filter { $0.isFault && $0.hasEntity(entity) }
                    .map(\.key)
                try store.forEachObject(keys: Array(keys)) { key, _, buffer in
                    try loadFault(
                        key: key,
                        buffer: buffer,
                        entity: entity,
                        bound: scanBound,
                        generation: generation
                    )
                }
            } else if try !loadAllFaultsInParallel(
                of: entity,
                bound: scanBound,
                generation: generation
            ) {
                try store.forEachLiveObject(entity: entity.tag) { key, _, buffer in
                    try loadFault(
                        key: key,
                        buffer: buffer,
                        entity: entity,
                        bound: scanBound,
                        generation: generation
                    )
                }
            }
        } catch {
            // A store error (a damaged record) stays reachable as the cause.
            recordFaultError(
                ObjectLogError.store(error, "cannot load the faults of \(entity.name)")
            )
        }
    }

    /// Loads every registered fault of `entity` from a scan of all its records on two
    /// threads; false when the load does not qualify, and nothing was done.
    ///
    /// A load qualifies with at least `tuning.parallelDecodingThreshold` live objects of an
    /// entity with a ``ScalarLayout`` (non-optional scalar attributes only: decoding one
    /// touches nothing but the object), on a machine with two processors or more. The records
    /// are cut into parts between windows of the log (see `ContextTuning.parts(for:)`), which
    /// the threads take in turn: each reads and checks a part's records and decodes them into
    /// their faults, which it borrows from the registry. The calling thread waits for all
    /// parts, so nothing changes the registry or the objects meanwhile, and each object is
    /// decoded once. A part stops at its first error, as a scan on one thread does, and the
    /// faults it did not reach stay faults; the error of the first part that failed (the first
    /// the scan meets) is recorded.
    private func loadAllFaultsInParallel(
        of entity: EntityDescription,
        bound: UInt64,
        generation: UInt64
    ) throws -> Bool {
        let count = try store.liveCount(entity: entity.tag)
        guard entity.scalarLayout != nil, count >= max(tuning.parallelDecodingThreshold, 2),
            ProcessInfo.processInfo.activeProcessorCount >= 2
        else { return false }
        let plans = try store.liveObjectPlans(entity: entity.tag, parts: tuning.parts(for: count))
        try loadFaultsInParallel(of: entity, from: plans, bound: bound, generation: generation)
        return true
    }

    /// Loads the registered faults of `entity` that `plans` hold records of, a plan a thread
    /// at a time (see ``loadAllFaultsInParallel(of:bound:generation:)``); the entity must have a
    /// ``ScalarLayout``.
    func loadFaultsInParallel(
        of entity: EntityDescription,
        from plans: [any StoreReadPlan],
        bound: UInt64,
        generation: UInt64
    ) throws {
        let results = ParallelDecodeResults(count: plans.count)
        // Safe to share: see above. The registry, the entity and the store are only read.
        let shared = UncheckedSendable((self, registry, entity, store))
        DispatchQueue.concurrentPerform(iterations: plans.count) { part in
            let (context, registry, entity, store) = shared.value
            var loaded = 0
            // The hooks run on the calling thread afterwards, not here (see below).
            var awaken: [Unmanaged<ManagedObject>] = []
            do {
                try store.forEachObject(in: plans[part]) { key, _, buffer in
                    guard let registered = registry.unretainedObject(forKey: key) else { return }
                    try registered._withUnsafeGuaranteedRef { object in
                        if try context.fill(
                            object,
                            buffer: buffer,
                            entity: entity,
                            bound: bound,
                            generation: generation
                        ) {
                            loaded += 1
                            awaken.append(registered)
                        }
                    }
                }
            } catch {
                results.fail(part, error)
            }
            results.count(part, loaded)
            results.awaken(part, awaken)
        }
        trace(.parallelDecoding)
        // `awakeFromFetch()` is the caller's code: it runs on the context's isolation domain,
        // where it may touch other objects, rather than on a worker that owns one object.
        results.forEachLoaded { $0._withUnsafeGuaranteedRef { $0.awakeAfterLoad() } }
        registeredFaults = max(0, registeredFaults - results.loaded)
        if let error = results.firstError { throw error }
    }

    /// Loads one registered fault from a record seen by a scan.
    func loadFault(
        key: ObjectKey,
        buffer: UnsafeRawBufferPointer,
        entity: EntityDescription,
        bound: UInt64,
        generation: UInt64
    ) throws {
        // Borrowed from the registry, which keeps it alive while it is loaded: retaining and
        // releasing it would write to each object's header twice more during a bulk load.
        guard let registered = registry.unretainedObject(forKey: key) else { return }
        try registered._withUnsafeGuaranteedRef { object in
            if try fill(
                object,
                buffer: buffer,
                entity: entity,
                bound: bound,
                generation: generation
            ) {
                registeredFaults = max(0, registeredFaults - 1)
                object.awakeAfterLoad()
            }
        }
    }

    /// Decodes a record into `object` if it is still a fault of `entity`; returns whether it
    /// did.
    ///
    /// Touches only `object` when the entity has a ``ScalarLayout``: the parallel bulk load
    /// runs it on worker threads.
    private func fill(
        _ object: ManagedObject,
        buffer: UnsafeRawBufferPointer,
        entity: EntityDescription,
        bound: UInt64,
        generation: UInt64
    ) throws -> Bool {
        guard object.isFault, object.hasEntity(entity) else { return false }
        let key = object.key
        var reader = PayloadReader(buffer)
        // Scalar attributes need no source for external data; not making one saves retaining
        // and releasing the store and the context for every object decoded.
        try ObjectDecoder.decode(
            &reader,
            into: object,
            entity: entity,
            source: entity.scalarLayout == nil
                ? RecordSource(store: store, key: key, context: self) : nil
        )
        object.accessState.remove(.fault)
        object.loadedRecordOffset = 0
        object.recordOffsetBound = bound
        object.loadedGeneration = UInt32(truncatingIfNeeded: generation)
        return true
    }

    // MARK: - Lazily loaded external data

    /// Remembers where unread external data of an object lives.
    func recordExternalReference(
        _ blob: BlobID,
        byteCount: Int,
        of object: ManagedObject,
        propertyIndex: Int
    ) {
        externalReferences[ExternalDataKey(key: object.key, propertyIndex: propertyIndex)] =
            ExternalReference(blob: blob, byteCount: byteCount, data: nil)
    }

    /// Remembers that external data of an object, now `data`, is stored in `blob`.
    func recordExternalData(
        _ data: Data,
        in blob: BlobID,
        of object: ManagedObject,
        propertyIndex: Int
    ) {
        externalReferences[ExternalDataKey(key: object.key, propertyIndex: propertyIndex)] =
            ExternalReference(blob: blob, byteCount: data.count, data: data)
    }

    /// The blob reference of external data of an object (see ``externalReferences``).
    func externalReference(
        of object: ManagedObject,
        propertyIndex: Int
    ) -> ExternalReference? {
        externalReferences[ExternalDataKey(key: object.key, propertyIndex: propertyIndex)]
    }

    /// Drops the unread external data references of an object that was only looked at.
    func forgetExternalReferences(ofKey key: ObjectKey, entity: EntityDescription) {
        for accessor in entity.accessors
        where accessor.attribute?.options.contains(.externalStorage) == true {
            externalReferences[ExternalDataKey(key: key, propertyIndex: accessor.index)] = nil
        }
    }

    /// Reads external data on first access; `nil` if its blob cannot be read.
    func loadExternalData(of object: ManagedObject, propertyIndex: Int) -> Data? {
        let key = ExternalDataKey(key: object.key, propertyIndex: propertyIndex)
        guard let reference = externalReferences[key] else { return nil }
        do {
            let data = try store.readBlob(reference.blob)
            externalReferences[key]?.data = data
            return data
        } catch {
            externalReferences[key] = nil
            let failure = ObjectLogError.store(
                error,
                "cannot read the external data of \(object.objectID)"
            )
            object.loadError = failure
            recordFaultError(failure)
            return nil
        }
    }

    /// Loads a fault and records that a saved object is about to change.
    func prepareModification(of object: ManagedObject) {
        if object.accessState.rawValue != 0 { object.willWrite() }
    }

    /// Records the first change to a saved object, keeping its committed values.
    func markUpdated(_ object: ManagedObject) {
        guard !object.lifecycle.contains(.inserted), let entity = object.entity else { return }
        if !object.lifecycle.contains(.deleted) {
            object.lifecycle.insert(.updated)
            updatedMap[object.key] = object
        }
        if object.snapshotSpan == 0 {
            let start = snapshotBuffer.count
            var sink = BlobSink(store: nil, context: self)
            try? ObjectEncoder.encode(object, entity: entity, to: &snapshotBuffer, blobs: &sink)
            object.snapshotSpan = Self.snapshotSpan(
                offset: start,
                count: snapshotBuffer.count - start
            )
        }
    }

    /// A snapshot's place in the snapshot buffer.
    ///
    /// The offset goes in the high 36 bits, the length in the low 28 (payloads are at most
    /// 64 MiB, and never empty). 0 means none, and is also what a buffer past 64 GiB gives:
    /// that snapshot is then not kept.
    static func snapshotSpan(offset: Int, count: Int) -> UInt64 {
        guard count > 0, count < 1 << 28, offset < 1 << 36 else { return 0 }
        return UInt64(offset) << 28 | UInt64(count)
    }

    /// The bytes of a snapshot span, or nil if it is not in the buffer.
    func snapshotBytes(_ span: UInt64) -> [UInt8]? {
        let offset = Int(span >> 28)
        let count = Int(span & (1 << 28 - 1))
        guard count > 0, offset + count <= snapshotBuffer.count else { return nil }
        return snapshotBuffer.withUnsafeBytes { Array($0[offset..<offset + count]) }
    }

    /// Adds snapshot bytes to the buffer; returns their span.
    func storeSnapshot(_ bytes: [UInt8]) -> UInt64 {
        let start = snapshotBuffer.count
        snapshotBuffer.write(raw: bytes)
        return Self.snapshotSpan(offset: start, count: bytes.count)
    }

    /// Empties the snapshot buffer once no object can hold a snapshot, keeping up to 1 MiB of
    /// its room for the next changes.
    func releaseSnapshotsIfUnused() {
        guard updatedMap.count == 0 && deletedMap.isEmpty else { return }
        if snapshotBuffer.storage.capacity > 1 << 20 {
            snapshotBuffer = PayloadWriter()
        } else {
            snapshotBuffer.removeAll()
        }
    }

    /// The changed properties of an object and their new values (relationships as object keys).
    public func changedValues(of object: ManagedObject) -> [String: Any] {
        guard let entity = object.entity, object.managedObjectContext === self else { return [:] }
        if object.isInserted {
            var values: [String: Any] = [:]
            for accessor in entity.accessors { values[accessor.name] = accessor.value(of: object) }
            return values
        }
        guard let snapshot = object.snapshot else { return [:] }
        let committed = entity.objectType.init()
        committed.key = object.key
        let decoded: Void? = snapshot.withUnsafeBytes { buffer in
            var reader = PayloadReader(buffer)
            return try? ObjectDecoder.decode(
                &reader,
                into: committed,
                entity: entity,
                source: RecordSource(store: store, key: object.key, context: self)
            )
        }
        guard decoded != nil else { return [:] }
        var values: [String: Any] = [:]
        for accessor in entity.accessors
        where ObjectEncoder.encodedValue(of: object, accessor: accessor, context: self)
            != ObjectEncoder.encodedValue(of: committed, accessor: accessor, context: self)
        {
            values[accessor.name] = accessor.value(of: object)
        }
        return values
    }

    /// The last saved values of an object's properties (relationships as object keys).
    ///
    /// - Parameters:
    ///   - object: A registered object.
    ///   - keys: Property names, or `nil` for all.
    /// - Returns: Property names to saved values; empty for inserted objects.
    public func committedValues(
        of object: ManagedObject,
        forKeys keys: [String]? = nil
    ) -> [String: Any] {
        guard let entity = object.entity, !object.isInserted else { return [:] }
        let payload: [UInt8]
        if let snapshot = object.snapshot {
            payload = snapshot
        } else if let record = try? store.readObject(object.key) {
            payload = record.payload
        } else {
            return [:]
        }
        let values = payload.withUnsafeBytes { buffer in
            var reader = PayloadReader(buffer)
            return
                (try? ObjectDecoder.decodeValues(
                    &reader,
                    entity: entity,
                    source: RecordSource(store: store, key: object.key)
                )) ?? [:]
        }
        guard let keys else { return values }
        return values.filter { keys.contains($0.key) }
    }

    // MARK: - Rollback, reset, refresh

    /// Discards every unsaved change: inserted objects leave the context, changed and deleted
    /// objects go back to their saved values.
    public func rollback() {
        let changes = pendingChanges()
        for object in insertedList where object.isInserted && object.managedObjectContext === self {
            registry[object.key] = nil
            object.managedObjectContext = nil
            object.lifecycle = []
            object.key = 0
        }
        for object in insertedList where object.isDeleted && object.managedObjectContext === self {
            registry[object.key] = nil
            object.managedObjectContext = nil
            object.lifecycle = []
        }
        for object in updatedMap.allObjects + Array(deletedMap.values) {
            object.lifecycle = []
            refault(object)
        }
        for object in registry.allObjects { object.snapshot = nil }
        insertedList = []
        insertedCount = 0
        updatedMap.removeAll()
        deletedMap = [:]
        releaseSnapshotsIfUnused()
        undoManagerStorage?.removeAllActions()
        if !changes.isEmpty { post(objectsDidChange: changes) }
    }

    /// Takes the store's current record of `object` as the one it was loaded from, for the
    /// optimistic-locking check of its save: for a pending delete that a merge has shown the
    /// store's change to.
    private func adoptStoredRecord(of object: ManagedObject) {
        let found: RecordLocation?
        let generation: UInt64
        do {
            (found, generation) = try store.locationAndGeneration(of: object.key)
        } catch {
            recordFaultError(ObjectLogError.store(error, "cannot look up \(object.objectID)"))
            return
        }
        guard let location = found else { return }
        object.loadedRecordOffset = location.offset
        object.recordOffsetBound = 0
        object.loadedGeneration = UInt32(truncatingIfNeeded: generation)
    }

    /// Forgets every registered object and unsaved change; the objects leave the context.
    public func reset() {
        for object in registry.allObjects {
            object.managedObjectContext = nil
            object.lifecycle = []
            object.accessState = []
            object.snapshot = nil
        }
        registry.removeAll()
        insertedList = []
        insertedCount = 0
        updatedMap.removeAll()
        deletedMap = [:]
        releaseSnapshotsIfUnused()
        externalReferences = [:]
        faultBatches = []
        undoManagerStorage?.removeAllActions()
    }

    /// Reloads an object from the store.
    /// - Parameters:
    ///   - object: A registered, saved object.
    ///   - mergeChanges: `true` keeps the object's unsaved changes over the store's values
    ///     (and takes the store's values for the other properties); `false` discards them and
    ///     turns the object into a fault.
    public func refresh(_ object: ManagedObject, mergeChanges: Bool) {
        guard object.managedObjectContext === self, !object.isInserted, let entity = object.entity
        else { return }
        let changed = mergeChanges ? changedValues(of: object) : [:]
        guard !changed.isEmpty else {
            updatedMap[object.key] = nil
            object.snapshot = nil
            object.lifecycle.remove(.updated)
            if object.isDeleted {
                adoptStoredRecord(of: object)
            } else {
                refault(object)
            }
            return
        }
        let fresh = entity.objectType.init()
        fresh.entity = entity
        fresh.key = object.key
        let found: RecordLocation?
        let generation: UInt64
        let record: (payload: [UInt8], blobs: [BlobID])?
        do {
            (found, generation) = try store.locationAndGeneration(of: object.key)
            record = try store.readObject(object.key)
        } catch {
            recordFaultError(ObjectLogError.store(error, "cannot refresh \(object.objectID)"))
            return
        }
        guard let location = found, let record else { return }
        let decoded: Void? = record.payload.withUnsafeBytes { buffer in
            var reader = PayloadReader(buffer)
            return try? ObjectDecoder.decode(
                &reader,
                into: fresh,
                entity: entity,
                source: RecordSource(store: store, key: object.key, context: self)
            )
        }
        guard decoded != nil else { return }
        assignValues(
            of: entity.accessors.filter { changed[$0.name] == nil },
            from: fresh,
            to: object
        )
        var writer = PayloadWriter()
        var sink = BlobSink(store: nil, context: self)
        try? ObjectEncoder.encode(fresh, entity: entity, to: &writer, blobs: &sink)
        object.snapshot = writer.bytes
        object.loadedRecordOffset = location.offset
        object.recordOffsetBound = 0
        object.loadedGeneration = UInt32(truncatingIfNeeded: generation)
    }

    // MARK: - Notifications (registration and delivery: ManagedObjectContext+Observers.swift)

    /// The IDs of the pending changes.
    func pendingChanges() -> ObjectChanges {
        ObjectChanges(
            inserted: insertedList.filter { $0.isInserted && $0.managedObjectContext === self }
                .map(\.objectID),
            updated: updatedMap.allObjects.map(\.objectID),
            deleted: deletedMap.values.map(\.objectID)
        )
    }

    // MARK: - Merging

    /// Brings another context's saved changes into this one.
    ///
    /// Registered objects that were updated elsewhere are refreshed (keeping this context's
    /// unsaved changes to them), deleted ones leave the context. Inserted objects appear in the
    /// next fetch. Changes that are ``ObjectChanges/isIncomplete`` count every saved object
    /// the context holds as updated, or as deleted when the store no longer has it.
    public func mergeChanges(from changes: ObjectChanges) {
        var merged = ObjectChanges(inserted: changes.inserted, isIncomplete: changes.isIncomplete)
        var updated = changes.updated
        var deleted = changes.deleted
        if changes.isIncomplete { heldObjectsChanged(updated: &updated, deleted: &deleted) }
        for id in updated {
            guard let object = registry[id.key] else { continue }
            merged.updated.append(id)
            if object.isFault {
                // A pending delete has seen the change now: its save must not call it a
                // conflict.
                if object.isDeleted { adoptStoredRecord(of: object) }
                // Its next load reads the change; observers of what it held are told now.
                replacingValuesWithStored(object) {}
                continue
            }
            refresh(object, mergeChanges: true)
        }
        for id in deleted {
            guard let object = registry[id.key] else { continue }
            merged.deleted.append(id)
            registry[id.key] = nil
            updatedMap[id.key] = nil
            deletedMap[id.key] = nil
            object.snapshot = nil
            object.lifecycle = [.deleted]
            object.managedObjectContext = nil
        }
        // A live query needs the objects this context has not registered too: one of them may
        // now match its predicate.
        if !merged.isEmpty || !changes.isEmpty { post(objectsDidChange: merged, all: changes) }
    }

    /// Adds every saved object the context holds to `updated`, or to `deleted` if it is gone.
    ///
    /// That is what incomplete changes may have done to them. When the store cannot be read,
    /// every one counts as updated, and a deleted one's next load finds it gone.
    private func heldObjectsChanged(updated: inout [ObjectID], deleted: inout [ObjectID]) {
        let held = registry.allObjects.filter { !$0.isInserted }
        let offsets = try? store.recordOffsetsAndGeneration(of: held.map(\.key)).offsets
        for (index, object) in held.enumerated() {
            if let offsets, offsets[index] == nil {
                deleted.append(object.objectID)
            } else {
                updated.append(object.objectID)
            }
        }
    }
}

/// Identifies a property of an object whose external data is not loaded yet.
struct ExternalDataKey: Hashable {
    var key: ObjectKey
    var propertyIndex: Int
}

/// Where one object's external data is stored, and the data itself once read or saved.
struct ExternalReference {
    var blob: BlobID
    var byteCount: Int
    /// The data the blob holds, when the context has it (nil while it is not read yet).
    var data: Data?
}

/// The outcome of each part of a parallel bulk fault load, one slot each.
private final class ParallelDecodeResults: Sendable {
    private let loadedCounts: PartSlots<Int>
    private let errors: PartSlots<(any Error)?>
    private let loadedObjects: PartSlots<[Unmanaged<ManagedObject>]>

    init(count: Int) {
        loadedCounts = PartSlots(count: count, initial: 0)
        loadedObjects = PartSlots(count: count, initial: [])
        errors = PartSlots(count: count, initial: nil)
    }

    func count(_ part: Int, _ loaded: Int) { loadedCounts[part] = loaded }
    func fail(_ part: Int, _ error: any Error) { errors[part] = error }
    func awaken(_ part: Int, _ objects: [Unmanaged<ManagedObject>]) {
        loadedObjects[part] = objects
    }

    /// Calls `body` with each object the parts loaded (the registry keeps them alive).
    func forEachLoaded(_ body: (Unmanaged<ManagedObject>) -> Void) {
        for part in loadedObjects.values { part.forEach(body) }
    }

    /// The objects loaded by all workers.
    var loaded: Int { loadedCounts.values.reduce(0, +) }
    /// The error of the first part (in log order) that failed.
    var firstError: (any Error)? { errors.firstError() }
}
