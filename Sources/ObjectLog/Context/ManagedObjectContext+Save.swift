import Foundation
import ObjectLogStore

extension ManagedObjectContext {
    /// Validates and writes every unsaved change as one atomic transaction.
    ///
    /// The save runs will-save handlers, calls ``ManagedObject/willSave()`` on changed objects
    /// (and on the objects their hooks change, see the article "Validating and reacting to
    /// changes"), resolves inserts that collide on a uniqueness constraint per ``mergePolicy``
    /// (see ``MergePolicy``), validates (relationship counts, deny rules, the attributes'
    /// ``ValidationRule``s, ``ManagedObject/validateForInsert()`` and its siblings,
    /// uniqueness), checks optimistic locking per ``mergePolicy``, commits inserts, updates,
    /// deletes and metadata changes together, and calls ``ManagedObject/didSave()`` on the
    /// objects it wrote.
    /// Saving without changes writes nothing.
    ///
    /// A save of 65,536 changed objects or more, all of entities whose properties are
    /// non-optional `Int`, `Int64`, `Double`, `String`, `Date` or `Bool` attributes, without
    /// uniqueness constraints, encodes its records on two threads when the machine has two
    /// processors; the objects are only read meanwhile, while `save()` waits, and the log is
    /// the same as on one thread.
    /// - Throws: ``ObjectLogError`` with code `validation`, `uniqueness` or `conflict` naming the
    ///   objects, properties and rules, or `store` (the store's own error, such as a read-only
    ///   store's, is its ``ObjectLogError/storeError``). After a failure the store is unchanged
    ///   and the context keeps its changes, to be fixed or rolled back. `callbackFailed` when a
    ///   will-save handler threw (its error is the ``ObjectLogError/underlyingError``);
    ///   `willSaveLoop` when `willSave()` hooks kept changing other objects.
    ///   `contextMismatch` or `entityNotInModel` for a misuse that a call which cannot throw
    ///   met since the last save: a relationship set to an object of another context (the
    ///   assignment was not made), or ``ManagedObject/init(context:)`` of a class outside the
    ///   model (the object was not inserted). Several such misuses are thrown as one error
    ///   listing each in ``ObjectLogError/errors``, with the code of the first. They are
    ///   thrown once, and nothing is saved with them.
    public func save() throws(ObjectLogError) {
        try throwMisuseError()
        try throwFaultError()
        try runWillSaveHandlers()
        guard hasChanges || coordinator.hasMetadataChanges else { return }
        // By link rather than `managedObjectContext`, which retains and releases the context
        // for each object of a bulk insert. Checking and `willSave()` share one pass: every
        // pass over a large insert reads memory that is no longer in the cache. When every
        // listed object is still pending, as usual, the list itself is the save's: a filtered
        // copy would retain and later release each object once more, touching it in memory
        // twice more.
        var inserted = insertedList
        let insertedBefore = inserted.count
        var allPending = true
        inserted.forEachUnretained { object in
            if object.isInserted && object.contextLink === link {
                object.willSave()
            } else {
                allPending = false
            }
        }
        if !allPending {
            inserted = inserted.filter { $0.isInserted && $0.contextLink === link }
        }
        var updated = updatedMap.allObjects
        let updatesBefore = updatedMap.mutations
        updated.forEachUnretained { $0.willSave() }
        let deletedBefore = Array(deletedMap.values)
        for object in deletedBefore { object.willSave() }
        // Objects that those hooks inserted, deleted or changed get theirs, round by round.
        var ledger = WillSaveLedger(
            insertedSeen: insertedBefore,
            updateMutations: updatesBefore,
            deletedSeen: deletedMap.count,
            firstRound: updated + deletedBefore
        )
        if try runLaterWillSaveRounds(&ledger) {
            inserted = insertedList.filter { $0.isInserted && $0.contextLink === link }
        }
        var resolved = resolveUniquenessConflicts(among: inserted)
        for attempt in 1... {
            if let changed = resolved {
                for object in changed { object.willSave() }
                inserted = insertedList.filter { $0.isInserted && $0.contextLink === link }
            }
            // `willSave()` or a resolution may have changed which objects are updated.
            if updatedMap.mutations != updatesBefore { updated = updatedMap.allObjects }
            do {
                return try writeChanges(inserted: inserted, updated: updated)
            } catch {
                // Another context's save can take a unique value between the resolution and
                // the commit; under a merge policy, resolve that too instead of failing.
                guard error.code == .uniqueness, attempt < 4 else { throw error }
                resolved = resolveUniquenessConflicts(among: inserted)
                guard resolved != nil else { throw error }
            }
        }
    }

    /// The values the object `key` held when it was loaded, encoded as the engine writes them:
    /// its snapshot if it changed since, else its values; nil for a fault.
    ///
    /// The lock check of a record that compactions have moved further than they remember
    /// compares them with the record.
    private func loadedValues(ofKey key: ObjectKey) -> [UInt8]? {
        guard let object = registry[key] else { return nil }
        if let snapshot = object.snapshot { return snapshot }
        // Without a snapshot a saved object's values are unchanged since it was loaded (a
        // deleted one's included).
        guard !object.isFault, let entity = object.entity else { return nil }
        var writer = PayloadWriter()
        var sink = BlobSink(store: nil, context: self)
        guard (try? ObjectEncoder.encode(object, entity: entity, to: &writer, blobs: &sink)) != nil
        else { return nil }
        return writer.bytes
    }

    /// The optimistic-locking check of a saved update or delete: the record `object`'s values
    /// were loaded from, or a bound on it.
    private static func lockCheck(for object: ManagedObject) -> PersistentStoreCoordinator.LockCheck
    {
        .init(
            key: object.key,
            expectedOffset: object.loadedRecordOffset,
            offsetBound: object.recordOffsetBound,
            generation: object.loadedGeneration
        )
    }

    /// The puts of a large save, encoded and framed on two threads; nil when the save does not
    /// qualify, and is then encoded on the calling thread.
    ///
    /// A save qualifies with at least `tuning.parallelEncodingThreshold` changed objects, all of
    /// entities with a ``ScalarLayout`` (non-optional scalar attributes only: no external data, so
    /// no blobs to write, and no encoding that can fail) and that have no uniqueness constraints,
    /// on a machine with two processors or more. Each half of the list is encoded by one worker
    /// into a transaction of its own, and the halves are joined in order: the records are byte for
    /// byte those of a save on one thread. The calling thread waits for both workers, so nothing
    /// changes the objects meanwhile; workers only read them, and borrow each object and entity
    /// without retaining it (both workers retaining the one entity would make its reference count
    /// bounce between the processors' caches).
    private func encodePutsInParallel(
        inserted: [ManagedObject],
        updated: [ManagedObject]
    ) -> Transaction? {
        let total = inserted.count + updated.count
        let workers = 2
        guard total >= max(tuning.parallelEncodingThreshold, workers),
            ProcessInfo.processInfo.activeProcessorCount >= workers
        else { return nil }
        let chunk = (total + workers - 1) / workers
        let parts = ParallelParts(count: workers)
        // Safe to share: the arrays are only read, and the objects they hold only read, until
        // every worker has finished (see above).
        let lists = UncheckedSendable((inserted, updated))
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            let (inserted, updated) = lists.value
            let start = worker * chunk
            let end = min(total, start + chunk)
            var part = Transaction()
            var writer = PayloadWriter()
            var qualifies = true
            func encode(_ object: ManagedObject, index: Int, isInsert: Bool) {
                guard qualifies, let unretained = object.unretainedEntity else {
                    qualifies = false
                    return
                }
                unretained._withUnsafeGuaranteedRef { entity in
                    guard let layout = entity.scalarLayout, entity.uniquenessConstraints.isEmpty
                    else {
                        qualifies = false
                        return
                    }
                    writer.removeAll()
                    layout.encode(object, to: &writer)
                    if index == start {
                        // The first part has room for all, so joining the others to it copies
                        // them once and grows nothing.
                        let count = worker == 0 ? total : end - start
                        part.reserveCapacity(
                            changes: count,
                            valueBytes: count * (writer.count + 16)
                        )
                    }
                    writer.withUnsafeBytes {
                        part.put(
                            key: object.key,
                            entity: entity.tag,
                            bytes: $0,
                            isInsert: isInsert
                        )
                    }
                }
            }
            let insertEnd = min(end, inserted.count)
            if start < insertEnd {
                inserted.forEachUnretained(in: start..<insertEnd) { index, object in
                    encode(object, index: index, isInsert: true)
                }
            }
            let updateStart = max(start, inserted.count)
            if updateStart < end {
                updated.forEachUnretained(
                    in: (updateStart - inserted.count)..<(end - inserted.count)
                ) { index, object in
                    encode(object, index: index + inserted.count, isInsert: false)
                }
            }
            if qualifies { parts.store(part, at: worker) }
        }
        guard var transaction = parts.take(0) else { return nil }
        for worker in 1..<workers {
            guard let part = parts.take(worker) else { return nil }
            transaction.append(putsOf: part)
        }
        return transaction
    }

    /// Validates, encodes and commits the changes, then marks the objects saved and notifies.
    ///
    /// A failure leaves the context's changes and the store's objects as they were.
    private func writeChanges(
        inserted: [ManagedObject],
        updated: [ManagedObject]
    ) throws(ObjectLogError) {
        let deleted = Array(deletedMap.values)
        try validate(inserted: inserted, updated: updated, deleted: deleted)

        var transaction = Transaction()
        var lockChecks: [PersistentStoreCoordinator.LockCheck] = []
        lockChecks.reserveCapacity(updated.count + deleted.count)
        var uniqueChanges: [PersistentStoreCoordinator.UniqueChange] = []
        var writer = PayloadWriter()
        // One sink for the save; its blob list is emptied after each object that wrote one.
        var sink = BlobSink(store: store, context: self)
        var isFirst = true
        var encodingError: ObjectLogError?
        var failed = false
        let encodedInParallel = encodePutsInParallel(inserted: inserted, updated: updated)
        if let encodedInParallel {
            trace(.parallelEncoding)
            transaction = encodedInParallel
            updated.forEachUnretained { object in
                lockChecks.append(Self.lockCheck(for: object))
            }
        }
        for (objects, isInsert) in [(inserted, true), (updated, false)]
        where !failed && encodedInParallel == nil {
            objects.forEachUnretained { object in
                // The entity is borrowed: the model keeps it, and retaining and releasing it
                // for every object of a bulk save would be two atomic writes per object.
                guard !failed, let unretained = object.unretainedEntity else { return }
                unretained._withUnsafeGuaranteedRef { entity in
                    writer.removeAll()
                    do throws(ObjectLogError) {
                        try ObjectEncoder.encode(object, entity: entity, to: &writer, blobs: &sink)
                    } catch {
                        encodingError = error
                        failed = true
                        return
                    }
                    if isFirst {
                        // Values are packed in one buffer: size it from the first object's payload
                        // (with slack) instead of doubling and copying it again and again.
                        isFirst = false
                        let count = inserted.count + updated.count + deleted.count
                        transaction.reserveCapacity(
                            changes: count,
                            valueBytes: count * (writer.count + 16)
                        )
                    }
                    writer.withUnsafeBytes {
                        transaction.put(
                            key: object.key,
                            entity: entity.tag,
                            bytes: $0,
                            blobs: sink.blobs,
                            isInsert: isInsert
                        )
                    }
                    if !sink.blobs.isEmpty { sink.blobs = [] }
                    if !isInsert {
                        lockChecks.append(Self.lockCheck(for: object))
                    }
                    if !entity.uniquenessConstraints.isEmpty {
                        uniqueChanges.append(
                            .init(
                                key: object.key,
                                entity: entity,
                                isDelete: false,
                                values: entity.uniquenessConstraints.map {
                                    ObjectEncoder.uniqueValue(of: object, group: $0, entity: entity)
                                }
                            )
                        )
                    }
                }
            }
        }
        if let encodingError { throw encodingError }
        for object in deleted {
            guard let entity = object.entity else { continue }
            transaction.delete(key: object.key, entity: entity.tag)
            lockChecks.append(Self.lockCheck(for: object))
            if !entity.uniquenessConstraints.isEmpty {
                uniqueChanges.append(
                    .init(key: object.key, entity: entity, isDelete: true, values: [])
                )
            }
        }
        transaction.author = author
        transaction.contextName = name
        let (info, endOffset, generation, conflicts) = try coordinator.commit(
            transaction,
            lockChecks: lockChecks,
            uniqueChanges: uniqueChanges,
            objectIDs: { key in self.registry[key]?.objectID ?? ObjectID(entityName: "?", key: key)
            },
            policy: mergePolicy,
            loadedValues: { key in self.loadedValues(ofKey: key) }
        )
        let skipped = Set(conflicts)
        // Records of this save lie before the log's end after it; later writes lie beyond.
        let commitOffset = endOffset
        var saved = ObjectChanges(transactionNumber: info?.number)
        // The IDs are made only for listeners: a bulk save would otherwise build and store
        // one per object for nobody.
        let listens = hasSaveListeners
        if listens {
            saved.inserted.reserveCapacity(inserted.count)
            saved.updated.reserveCapacity(updated.count)
        }
        let savedState = observationBits.union(.tracksUpdates)
        inserted.forEachUnretained { object in
            guard !skipped.contains(object.key) else { return }
            object.lifecycle = []
            object.accessState = savedState
            object.loadedRecordOffset = 0
            object.recordOffsetBound = commitOffset
            object.loadedGeneration = UInt32(truncatingIfNeeded: generation)
            if listens { saved.inserted.append(object.objectID) }
        }
        // Without conflicts every updated object was saved: the table is emptied at once
        // instead of by one hashed removal per object.
        let savesAllUpdated = conflicts.isEmpty && updatedMap.count == updated.count
        for object in updated where !skipped.contains(object.key) {
            object.lifecycle = []
            object.loadedRecordOffset = 0
            object.recordOffsetBound = commitOffset
            object.loadedGeneration = UInt32(truncatingIfNeeded: generation)
            if !object.isFault { object.accessState.insert(.tracksUpdates) }
            if !savesAllUpdated { updatedMap[object.key] = nil }
            object.snapshot = nil
            if listens { saved.updated.append(object.objectID) }
        }
        if savesAllUpdated { updatedMap.removeAll() }
        for object in deleted where !skipped.contains(object.key) {
            saved.deleted.append(object.objectID)
            registry[object.key] = nil
            deletedMap[object.key] = nil
            object.snapshot = nil
            object.managedObjectContext = nil
        }
        insertedList = []
        insertedCount = 0
        for key in conflicts {
            // `.rollback` policy: the store's version wins for these objects.
            guard let object = registry[key] else { continue }
            updatedMap[key] = nil
            deletedMap[key] = nil
            object.snapshot = nil
            object.lifecycle = []
            refault(object)
        }
        releaseSnapshotsIfUnused()
        undoManagerStorage?.contextDidSave()
        callDidSave(inserted: inserted, updated: updated, deleted: deleted, skipped: skipped)
        if !saved.isEmpty {
            post(objectsDidChange: saved)
        }
        post(didSave: saved)
        var broadcast = saved
        broadcast.origin = identifier
        coordinator.broadcast(broadcast)
    }

    /// Checks relationship counts and deny rules, the attributes' validation rules and the
    /// objects' `validateFor…` methods, throwing every failure in one error.
    private func validate(
        inserted: [ManagedObject],
        updated: [ManagedObject],
        deleted: [ManagedObject]
    ) throws(ObjectLogError) {
        var errors: [ObjectLogError] = []
        // Only entities with relationships have counts to check; without any, no object needs
        // to be read (a pass over a million objects is a pass over memory out of the cache).
        let checksCounts = model.entities.contains { !$0.relationshipAccessors.isEmpty }
        for objects in checksCounts ? [inserted, updated] : [] {
            for object in objects {
                guard let entity = object.entity, !entity.relationshipAccessors.isEmpty else {
                    continue
                }
                for (index, accessor) in entity.relationshipAccessors.enumerated() {
                    let rule = entity.rules[index]
                    let count = accessor.keys(of: object).count
                    if count < rule.minimumCount {
                        errors.append(
                            ObjectLogError(
                                .validation,
                                rule.minimumCount == 1 && !accessor.isToMany
                                    ? "\(object.objectID).\(accessor.name) is required but has no value"
                                    : "\(object.objectID).\(accessor.name) has \(count) objects, "
                                        + "fewer than the minimum \(rule.minimumCount)",
                                objectID: object.objectID,
                                property: accessor.name
                            )
                        )
                    } else if count > rule.maximumCount {
                        errors.append(
                            ObjectLogError(
                                .validation,
                                "\(object.objectID).\(accessor.name) has \(count) objects, "
                                    + "more than the maximum \(rule.maximumCount)",
                                objectID: object.objectID,
                                property: accessor.name
                            )
                        )
                    }
                }
            }
        }
        for object in deleted {
            guard let entity = object.entity else { continue }
            for (index, accessor) in entity.relationshipAccessors.enumerated()
            where entity.rules[index].deleteRule == .deny {
                var remaining: [ObjectKey] = []
                for key in accessor.keys(of: object) {
                    if let destination = registry[key] {
                        if !destination.isDeleted { remaining.append(key) }
                    } else if try readingStore({ try store.location(of: key) }) != nil {
                        remaining.append(key)
                    }
                }
                if !remaining.isEmpty {
                    errors.append(
                        ObjectLogError(
                            .validation,
                            "cannot delete \(object.objectID): its relationship '\(accessor.name)' "
                                + "has the deny rule and \(remaining.count) related objects",
                            objectID: object.objectID,
                            property: accessor.name
                        )
                    )
                }
            }
        }
        validateObjects(inserted: inserted, updated: updated, deleted: deleted, into: &errors)
        guard !errors.isEmpty else { return }
        if errors.count == 1 { throw errors[0] }
        throw ObjectLogError(
            .validation,
            "\(errors.count) validation errors",
            objectID: errors[0].objectID,
            property: errors[0].property,
            errors: errors
        )
    }
}

/// The transactions the workers of a parallel encoding fill, one slot each.
///
/// `@unchecked Sendable`: each worker writes only its own slot, and the slots are read after
/// `concurrentPerform` has returned, which orders those writes before the reads.
private final class ParallelParts: @unchecked Sendable {
    // Raw memory rather than an array: writing one element of an array from two threads would
    // make both mutate the array itself.
    private let slots: UnsafeMutableBufferPointer<Transaction?>

    init(count: Int) {
        slots = .allocate(capacity: count)
        slots.initialize(repeating: nil)
    }

    deinit {
        _ = slots.deinitialize()
        slots.deallocate()
    }

    func store(_ part: Transaction, at index: Int) { slots[index] = part }

    func take(_ index: Int) -> Transaction? {
        defer { slots[index] = nil }
        return slots[index]
    }
}
