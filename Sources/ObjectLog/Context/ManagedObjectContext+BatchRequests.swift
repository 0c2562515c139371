import Foundation
import ObjectLogStore

// Batch requests work on the store, not on the context's objects: they find the saved objects
// through the attribute columns, write one transaction of records encoded without managed
// objects in between, and then tell every context what changed (the executing one merges the
// changes at once, the main context through its merge observer), as a save does.

extension ManagedObjectContext {
    /// Deletes the saved objects that match the request's predicate.
    ///
    /// Objects of an entity without relationships are deleted in the store in one transaction
    /// without being loaded. Those of an entity with relationships follow their delete rules:
    /// a PostgreSQL store runs the rules as SQL statements in one transaction, without loading
    /// the objects; on a store file they are loaded into a context of their own and deleted
    /// there.
    /// - Returns: The objects deleted (and, through delete rules, the others deleted or
    ///   updated), as a save reports them.
    /// - Throws: ``ObjectLogError/Code/entityNotInModel`` for a class outside the model;
    ///   ``ObjectLogError/Code/store`` if the store cannot commit (read-only, for one);
    ///   what a delete rule refuses (``ObjectLogError/Code/validation``, for `deny`).
    @discardableResult
    public func execute<T: ManagedObject>(
        _ request: BatchDeleteRequest<T>
    ) throws(ObjectLogError) -> ObjectChanges {
        let entity = try entity(of: T.self)
        var fetched = FetchRequest<T>(predicate: request.predicate)
        fetched.includesSubentities = request.includesSubentities
        let entities = try fetchedEntities(fetched)
        if let changes = try executeInStore(fetched, entity: entity, change: .delete) {
            return changes
        }
        guard entities.allSatisfy({ $0.relationshipAccessors.isEmpty }) else {
            return try deleteThroughContext(fetched)
        }
        // One transaction for the objects of every entity the request reaches.
        var transaction = Transaction()
        var unique: [PersistentStoreCoordinator.UniqueChange] = []
        var deletedKeys: [(keys: [ObjectKey], entityName: String)] = []
        for member in entities {
            let keys = try savedKeys(of: T.self, entity: member, matching: request.predicate)
            transaction.reserveCapacity(deletes: keys.count)
            for key in keys { transaction.delete(key: key, entity: member.tag) }
            if !member.uniquenessConstraints.isEmpty {
                unique += keys.map {
                    PersistentStoreCoordinator.UniqueChange(
                        key: $0,
                        entity: member,
                        isDelete: true,
                        values: []
                    )
                }
            }
            deletedKeys.append((keys, member.name))
        }
        let lists = deletedKeys
        let deleted = changedIDs(count: lists.reduce(0) { $0 + $1.keys.count }) { lists }
        return try commitBatch(
            transaction,
            unique: unique,
            entity: entity,
            changes: { ObjectChanges(deleted: deleted()) }
        )
    }

    /// Sets the request's attribute values on every saved object that matches its predicate.
    ///
    /// The objects' records are read, and written again with the new values in place, in one
    /// transaction. If a save changes any of them in between, the update looks for its objects
    /// and reads them again, so that it overwrites nothing that save wrote.
    ///
    /// - Returns: The objects updated.
    /// - Throws: ``ObjectLogError/Code/invalidArgument`` for an update of something that is
    ///   not a stored attribute, or of an external-storage attribute;
    ///   ``ObjectLogError/Code/uniqueness`` when the new values break a uniqueness constraint
    ///   (nothing is written); ``ObjectLogError/Code/conflict`` when saves changed its objects
    ///   every time it ran (four times; nothing is written);
    ///   ``ObjectLogError/Code/entityNotInModel``; ``ObjectLogError/Code/store``.
    @discardableResult
    public func execute<T: ManagedObject>(
        _ request: BatchUpdateRequest<T>
    ) throws(ObjectLogError) -> ObjectChanges {
        let entity = try entity(of: T.self)
        let replacements = try Self.replacements(of: request, entity: entity)
        guard !replacements.isEmpty else { return ObjectChanges() }
        var fetched = FetchRequest<T>(predicate: request.predicate)
        fetched.includesSubentities = request.includesSubentities
        if let values = Self.storedValues(replacements, entity: entity),
            let changes = try executeInStore(fetched, entity: entity, change: .update(values))
        {
            return changes
        }
        var attempt = 1
        while true {
            do throws(ObjectLogError) {
                return try updateOnce(
                    request,
                    fetched,
                    entity: entity,
                    replacements: replacements
                )
            } catch  where error.code == .conflict {
                // A save changed some of the objects while the update ran: it looks for them
                // and reads them again.
                guard attempt < Self.batchUpdateAttempts else {
                    throw ObjectLogError(
                        .conflict,
                        "the objects of a batch update of \(entity.name) changed while it ran, "
                            + "\(attempt) times; nothing was written",
                        objectID: error.objectID
                    )
                }
                attempt += 1
            }
        }
    }

    /// How many times a batch update runs when saves keep changing its objects meanwhile.
    static var batchUpdateAttempts: Int { 4 }

    /// One run of a batch update: looks for the objects, splices their new records and commits
    /// them, unless a save changed any of them since they were read.
    private func updateOnce<T: ManagedObject>(
        _ request: BatchUpdateRequest<T>,
        _ fetched: FetchRequest<T>,
        entity: EntityDescription,
        replacements: [Int: [UInt8]]
    ) throws(ObjectLogError) -> ObjectChanges {
        // Taken before the objects are looked for: a commit after it may have changed them.
        let basis = try readingStore { try store.endAndGeneration }
        // The inherited attributes have the same indices in every entity of the hierarchy, so
        // the replacements hold for each; all their puts go into one transaction.
        var transaction: Transaction?
        var unique: [PersistentStoreCoordinator.UniqueChange] = []
        var plans: [any StoreReadPlan] = []
        var names: [String] = []
        for member in try fetchedEntities(fetched) {
            guard
                let part = try spliceUpdate(
                    request,
                    entity: member,
                    replacements: replacements,
                    unique: &unique
                )
            else { continue }
            if transaction == nil {
                transaction = part.transaction
            } else {
                transaction?.append(putsOf: part.transaction)
            }
            plans.append(part.plan)
            names.append(member.name)
        }
        guard let transaction else { return ObjectChanges() }
        trace(.beforeBatchUpdateCommit)
        let members = Array(zip(plans, names))
        let updated = changedIDs(count: plans.reduce(0) { $0 + $1.count }) {
            members.map { ($0.keys, $1) }
        }
        return try commitBatch(
            transaction,
            unique: unique,
            entity: entity,
            changes: { ObjectChanges(updated: updated()) },
            batchUpdate: PersistentStoreCoordinator.BatchUpdateBasis(
                basis: basis,
                lockChecks: {
                    plans.flatMap { plan in
                        let generation = UInt32(truncatingIfNeeded: plan.generation)
                        return plan.keysAndOffsets.map {
                            PersistentStoreCoordinator.LockCheck(
                                key: $0.key,
                                expectedOffset: $0.offset,
                                offsetBound: 0,
                                generation: generation
                            )
                        }
                    }
                },
                encodings: replacements
            )
        )
    }

    /// The encoding of each value a batch update sets, by property index (every other value is
    /// kept as its record has it).
    private static func replacements<T: ManagedObject>(
        of request: BatchUpdateRequest<T>,
        entity: EntityDescription
    ) throws(ObjectLogError) -> [Int: [UInt8]] {
        let scratch = unsafeDowncast(entity.objectType.init(), to: T.self)
        var replacements: [Int: [UInt8]] = [:]
        for update in request.updates {
            guard let accessor = entity.attributeAccessor(for: update.keyPath),
                let attribute = accessor.attribute, !attribute.options.contains(.transient)
            else {
                throw ObjectLogError(
                    .invalidArgument,
                    "a batch update sets stored attributes only; \(update.keyPath) is not one of "
                        + entity.name
                )
            }
            guard !attribute.options.contains(.externalStorage) else {
                throw ObjectLogError(
                    .invalidArgument,
                    "a batch update cannot set the external-storage attribute "
                        + "\(entity.name).\(accessor.name); change it through a context",
                    property: accessor.name
                )
            }
            update.assign(scratch)
            var writer = PayloadWriter()
            var sink = BlobSink(store: nil)
            try accessor.encode(scratch, to: &writer, blobs: &sink)
            replacements[accessor.index] = writer.bytes
        }
        return replacements
    }

    /// The puts of a batch update for the saved objects of one entity, `T`'s or a
    /// subentity's, and the plan they were read by; nil when none match.
    ///
    /// The uniqueness changes to check are added to `unique`.
    private func spliceUpdate<T: ManagedObject>(
        _ request: BatchUpdateRequest<T>,
        entity: EntityDescription,
        replacements: [Int: [UInt8]],
        unique: inout [PersistentStoreCoordinator.UniqueChange]
    ) throws(ObjectLogError) -> (transaction: Transaction, plan: any StoreReadPlan)? {
        let plan = try savedObjects(of: T.self, entity: entity, matching: request.predicate)
        guard plan.count > 0 else { return nil }
        let splice = BatchUpdateSplice(
            shapes: entity.schema.properties.map(ValueShape.init),
            replacements: replacements
        )
        // Room for every record grown by all the new encodings: the transaction's buffer is
        // then allocated once (grown as records came, it would copy the records so far at
        // every growth, into fresh memory that faults in page by page).
        let growth = replacements.values.reduce(0) { $0 + $1.count }
        // Constraints over an updated attribute are checked with the objects' new values.
        let groups = entity.uniquenessConstraints.filter { group in
            group.contains { replacements[$0] != nil }
        }
        let transaction: Transaction
        do {
            if groups.isEmpty, store.allowsPatches {
                transaction = try patchUpdate(
                    plan,
                    splice,
                    growth: growth,
                    replacements: replacements
                )
            } else if groups.isEmpty,
                let parallel = try spliceInParallel(plan, splice, growth: growth)
            {
                transaction = parallel
            } else {
                // Safe: `entity` is `T`'s or a subentity's, whose class is a `T`.
                let object = unsafeDowncast(entity.objectType.init(), to: T.self)
                var serial = Transaction()
                serial.reserveCapacity(
                    changes: plan.count,
                    valueBytes: plan.recordBytes + plan.count * growth
                )
                var pieces = BatchUpdateSplice.Pieces()
                try store.forEachObject(in: plan) { key, tag, value in
                    try splice.put(value, key: key, entity: tag, pieces: &pieces, into: &serial)
                    guard !groups.isEmpty else { return }
                    var decoder = PayloadReader(value)
                    try ObjectDecoder.decode(&decoder, into: object, entity: entity, source: nil)
                    for update in request.updates { update.assign(object) }
                    unique.append(Self.uniqueChange(of: object, key: key, entity: entity))
                }
                transaction = serial
            }
        } catch let error as ObjectLogError {
            throw error
        } catch {
            throw ObjectLogError(.store, "cannot read the objects to update: \(error)")
        }
        return (transaction, plan)
    }

    /// Inserts the request's objects into the store.
    ///
    /// - Returns: The objects inserted, in the order `fill` made them.
    /// - Throws: what `fill` throws (kept as ``ObjectLogError/underlyingError``, nothing
    ///   written); ``ObjectLogError/Code/uniqueness`` when the new objects break a uniqueness
    ///   constraint; ``ObjectLogError/Code/entityNotInModel``; ``ObjectLogError/Code/store``.
    @discardableResult
    public func execute<T: ManagedObject>(
        _ request: BatchInsertRequest<T>
    ) throws(ObjectLogError) -> ObjectChanges {
        let entity = try entity(of: T.self)
        guard !entity.isAbstract else {
            throw ObjectLogError(
                .abstractEntity,
                "cannot batch insert objects of the abstract entity '\(entity.name)'; insert those "
                    + "of one of its subentities ("
                    + entity.concreteEntities.map(\.name).joined(separator: ", ") + ")"
            )
        }
        guard request.count > 0 else { return ObjectChanges() }
        // One object takes every new object's values in turn, reset to the defaults first.
        let defaults = entity.objectType.init()
        let object = unsafeDowncast(entity.objectType.init(), to: T.self)
        let keys = try readingStore { try store.allocateKeys(request.count) }
        var transaction = Transaction()
        var unique: [PersistentStoreCoordinator.UniqueChange] = []
        var writer = PayloadWriter()
        var sink = BlobSink(store: store)
        for index in 0..<request.count {
            for accessor in entity.accessors { accessor.copy(from: defaults, to: object) }
            do {
                try request.fill(index, object)
            } catch {
                throw ObjectLogError(
                    .callbackFailed,
                    "the batch insert's values for object \(index) failed: \(error)",
                    underlyingError: error
                )
            }
            writer.removeAll()
            try ObjectEncoder.encode(object, entity: entity, to: &writer, blobs: &sink)
            let key = keys.lowerBound + ObjectKey(index)
            writer.withUnsafeBytes {
                transaction.put(
                    key: key,
                    entity: entity.tag,
                    bytes: $0,
                    blobs: sink.blobs,
                    isInsert: true
                )
            }
            sink.blobs = []
            if !entity.uniquenessConstraints.isEmpty {
                unique.append(Self.uniqueChange(of: object, key: key, entity: entity))
            }
        }
        return try commitBatch(
            transaction,
            unique: unique,
            entity: entity,
            changes: {
                ObjectChanges(
                    inserted: (0..<request.count).map {
                        ObjectID(entityName: entity.name, key: keys.lowerBound + ObjectKey($0))
                    }
                )
            }
        )
    }

    /// Has the store run a batch as its own statements; nil when the engine is to run it.
    ///
    /// Only when the store can and the request's predicate is exactly the query's condition.
    /// Then the contexts are told what changed, as ``commitBatch(_:unique:entity:changes:batchUpdate:)``
    /// tells them.
    private func executeInStore<T: ManagedObject>(
        _ fetched: FetchRequest<T>,
        entity: EntityDescription,
        change: StoreBatch.Change
    ) throws(ObjectLogError) -> ObjectChanges? {
        guard !coordinator.isExclusive, let query = StoreQuery(fetched, model: model),
            query.translation.isExact,
            let commit = try coordinator.executeInStore(StoreBatch(query: query, change: change))
        else { return nil }
        trace(.storeBatch)
        let ids = commit.objects.map { object in
            ObjectID(
                entityName: model.entity(tag: object.entity)?.name ?? entity.name,
                key: object.key
            )
        }
        var changes: ObjectChanges
        switch change {
        case .delete:
            let updated = commit.updated.compactMap { object in
                model.entity(tag: object.entity).map {
                    ObjectID(entityName: $0.name, key: object.key)
                }
            }
            changes = ObjectChanges(updated: updated, deleted: ids)
        case .update: changes = ObjectChanges(updated: ids)
        }
        changes.transactionNumber = commit.info.number
        mergeChanges(from: changes)
        coordinator.broadcast(changes)
        return changes
    }

    /// A batch update's new values by attribute name, decoded from their encodings; nil if one
    /// cannot be (the engine then writes the encodings itself).
    private static func storedValues(
        _ replacements: [Int: [UInt8]],
        entity: EntityDescription
    ) -> [(attribute: String, value: StoredValue)]? {
        var values: [(attribute: String, value: StoredValue)] = []
        for (index, bytes) in replacements.sorted(by: { $0.key < $1.key }) {
            guard index < entity.schema.properties.count else { return nil }
            let property = entity.schema.properties[index]
            let value: StoredValue? = bytes.withUnsafeBytes { buffer in
                var reader = PayloadReader(buffer)
                return try? StoredValue.decode(property, from: &reader)
            }
            guard let value else { return nil }
            values.append((property.name, value))
        }
        return values
    }

    // MARK: - Implementation

    /// The keys of the saved objects of `entity` that match `predicate`, found as
    /// ``savedObjects(of:entity:matching:)`` finds them: what a delete needs, without reading
    /// the records again as a plan of them would.
    private func savedKeys<T: ManagedObject>(
        of type: T.Type,
        entity: EntityDescription,
        matching predicate: Predicate<T>?
    ) throws(ObjectLogError) -> [ObjectKey] {
        let finder = ManagedObjectContext(coordinator: coordinator)
        do {
            guard let predicate else { return try store.liveKeys(entity: entity.tag) }
            if let plan = try finder.columnMatchPlan(of: entity, predicate: predicate) {
                return plan.keys
            }
            var request = FetchRequest<T>(predicate: predicate)
            request.includesPendingChanges = false
            // The objects of `entity` only, which may be a subentity of `T`'s.
            return try finder.fetchIdentifiers(request).lazy.filter {
                $0.entityName == entity.name
            }.map(\.key)
        } catch let error as ObjectLogError {
            throw error
        } catch {
            throw ObjectLogError.store(error, "cannot find the objects of \(entity.name)")
        }
    }

    /// The saved objects of `entity` (`T`'s or a subentity's) that match `predicate`, as a plan
    /// to read them, found without loading them into this context: through the attribute
    /// columns alone when they decide the predicate, else by evaluating it on objects decoded in
    /// a context of its own.
    private func savedObjects<T: ManagedObject>(
        of type: T.Type,
        entity: EntityDescription,
        matching predicate: Predicate<T>?
    ) throws(ObjectLogError) -> any StoreReadPlan {
        let finder = ManagedObjectContext(coordinator: coordinator)
        do {
            guard let predicate else {
                return try store.readPlan(keys: store.liveKeys(entity: entity.tag))
            }
            if let plan = try finder.columnMatchPlan(of: entity, predicate: predicate) {
                return plan
            }
            var request = FetchRequest<T>(predicate: predicate)
            request.includesPendingChanges = false
            // The objects of `entity` only, which may be a subentity of `T`'s.
            let keys = try finder.fetchIdentifiers(request).lazy.filter {
                $0.entityName == entity.name
            }.map(\.key)
            return try store.readPlan(keys: Array(keys))
        } catch let error as ObjectLogError {
            throw error
        } catch {
            throw ObjectLogError.store(error, "cannot find the objects of \(entity.name)")
        }
    }

    /// Commits a batch's transaction, then tells the contexts what `changes` gives (asked for
    /// after the commit).
    private func commitBatch(
        _ transaction: Transaction,
        unique: [PersistentStoreCoordinator.UniqueChange],
        entity: EntityDescription,
        changes: () -> ObjectChanges,
        batchUpdate: PersistentStoreCoordinator.BatchUpdateBasis? = nil
    ) throws(ObjectLogError) -> ObjectChanges {
        guard !transaction.isEmpty else { return changes() }
        var transaction = transaction
        transaction.author = author
        transaction.contextName = name
        let (info, _, _, _) = try coordinator.commit(
            transaction,
            lockChecks: [],
            uniqueChanges: unique,
            objectIDs: { ObjectID(entityName: entity.name, key: $0) },
            policy: .overwrite,
            batchUpdate: batchUpdate
        )
        var changes = changes()
        changes.transactionNumber = info?.number
        mergeChanges(from: changes)
        coordinator.broadcast(changes)
        return changes
    }

    /// A batch update's records for a store that holds patches: a patch that sets the new
    /// values, the same bytes for every object, of each object whose record is a put, and a
    /// spliced put of each whose record is already a patch (a patch takes no patch).
    ///
    /// The objects' records are not read, only those of the objects patched before.
    private func patchUpdate(
        _ plan: any StoreReadPlan,
        _ splice: BatchUpdateSplice,
        growth: Int,
        replacements: [Int: [UInt8]]
    ) throws -> Transaction {
        let partial = PartialValue.encode(replacements)
        // Only a log store holds patches, so the plan is one of its own.
        let plan = LogStore.logPlan(plan)
        let direct = plan.objects(patched: false)
        // The most bytes a patch of this plan takes, from its largest key, offset and length:
        // the transaction's room is then about what the patches fill (fresh memory costs a
        // page fault a page on this path).
        let largest = direct.largest
        let most = RecordLayout.patchLength(
            key: largest.key,
            entity: UInt32.max,
            base: RecordLocation(entity: 0, offset: largest.offset, length: largest.length),
            valueCount: partial.count
        )
        let parts = tuning.parts(for: direct.count)
        var built: Transaction?
        if direct.count >= max(tuning.parallelBatchThreshold, 2), parts > 1,
            ProcessInfo.processInfo.activeProcessorCount >= 2
        {
            trace(.parallelBatchUpdate)
            let cuts = (0...parts).map { direct.count * $0 / parts }
            let rooms = (0..<parts).map { part in
                (
                    changes: cuts[part + 1] - cuts[part],
                    recordBytes: (cuts[part + 1] - cuts[part]) * most
                )
            }
            // The rooms hold every patch, so no part outgrows its room (were one to, the
            // patches are framed again on this thread).
            built = try Transaction.buildingInParallel(rooms: rooms) { part, writer in
                partial.withUnsafeBytes { partial in
                    direct.forEachLocation(at: cuts[part]..<cuts[part + 1]) { key, location in
                        writer.patch(
                            key: key,
                            entity: location.entity,
                            base: location,
                            value: partial
                        )
                    }
                }
            }
        }
        var transaction: Transaction
        if let built {
            transaction = built
        } else {
            transaction = Transaction()
            transaction.reserveCapacity(changes: direct.count, valueBytes: direct.count * most)
            partial.withUnsafeBytes { partial in
                direct.forEachLocation(at: 0..<direct.count) { key, location in
                    transaction.patch(
                        key: key,
                        entity: location.entity,
                        base: location,
                        value: partial
                    )
                }
            }
        }
        let repatched = plan.objects(patched: true)
        guard repatched.count > 0 else { return transaction }
        if let parallel = try spliceInParallel(repatched, splice, growth: growth) {
            // (Appending copies every record: with no patch to go with them, they are the
            // transaction.)
            if transaction.isEmpty { return parallel }
            transaction.append(putsOf: parallel)
        } else {
            var serial = Transaction()
            serial.reserveCapacity(
                changes: repatched.count,
                valueBytes: repatched.recordBytes + repatched.count * growth
            )
            var pieces = BatchUpdateSplice.Pieces()
            try store.forEachObject(in: repatched) { key, tag, value in
                try splice.put(value, key: key, entity: tag, pieces: &pieces, into: &serial)
            }
            transaction.append(putsOf: serial)
        }
        return transaction
    }

    /// The puts of a large batch update, spliced on two threads or more; nil when the update
    /// does not qualify (fewer than `tuning.parallelBatchThreshold` objects, or one processor)
    /// or its new records outgrow the room reckoned for them (values that an older model wrote
    /// and that the inferred mapping lengthens), and is then spliced on the calling thread.
    ///
    /// The plan is cut into parts between read windows; each part is read and spliced straight
    /// into its region of the one transaction, and the regions are closed up in order, so that
    /// the records are byte for byte those of the update on one thread. Only updates without
    /// uniqueness constraints to check come here.
    private func spliceInParallel(
        _ plan: any StoreReadPlan,
        _ splice: BatchUpdateSplice,
        growth: Int
    ) throws -> Transaction? {
        guard plan.count >= max(tuning.parallelBatchThreshold, 2),
            ProcessInfo.processInfo.activeProcessorCount >= 2
        else { return nil }
        let plans = store.split(plan, parts: tuning.parts(for: plan.count))
        guard plans.count > 1 else { return nil }
        trace(.parallelBatchUpdate)
        // Safe to share: the store and the splice are only read.
        let shared = UncheckedSendable((store, splice))
        // A new record is its old one (frame included) with the new encodings in place of
        // the old ones, framed anew.
        let rooms = plans.map {
            (
                changes: $0.count,
                recordBytes: $0.recordBytes
                    + $0.count * (growth + RecordLayout.compact.maximumFrameLength)
            )
        }
        return try Transaction.buildingInParallel(rooms: rooms) { part, writer in
            let (store, splice) = shared.value
            var pieces = BatchUpdateSplice.Pieces()
            try store.forEachObject(in: plans[part]) { key, tag, value in
                try splice.put(value, key: key, entity: tag, pieces: &pieces, into: &writer)
            }
        }
    }

    /// The IDs of the objects of `lists` (keys and their entity's name), `count` of them: for a
    /// large batch made on another thread, while the commit writes and syncs the records with
    /// a processor to spare (an ID for every changed object, each retaining its entity's name,
    /// is work in proportion to the batch), else on this one when asked for.
    private func changedIDs(
        count: Int,
        _ lists: @escaping () -> [(keys: [ObjectKey], entityName: String)]
    ) -> () -> [ObjectID] {
        let make = {
            let lists = lists()
            guard lists.count > 1 else {
                return lists.first.map { Self.objectIDs(of: $0.keys, entityName: $0.entityName) }
                    ?? []
            }
            return lists.flatMap { Self.objectIDs(of: $0.keys, entityName: $0.entityName) }
        }
        guard count >= tuning.parallelBatchThreshold,
            ProcessInfo.processInfo.activeProcessorCount >= 2
        else { return make }
        let made = ConcurrentValue(make)
        return { made.value }
    }

    /// The IDs of `keys`' objects of the entity `entityName`, in an array faulted in at once
    /// (see ``FreshMemory``): a batch request's list of what it changed.
    ///
    /// Built here, where `ObjectID` is known: a generic transform passed to the store's module
    /// runs unspecialized, copying each 24-byte ID through a call to a value witness.
    private static func objectIDs(of keys: [ObjectKey], entityName: String) -> [ObjectID] {
        [ObjectID](unsafeUninitializedCapacity: keys.count) { buffer, count in
            FreshMemory.prepareForWriting(buffer)
            for (index, key) in keys.enumerated() {
                (buffer.baseAddress! + index).initialize(
                    to: ObjectID(entityName: entityName, key: key)
                )
            }
            count = keys.count
        }
    }

    /// Deletes through a context of its own, where delete rules apply.
    private func deleteThroughContext<T: ManagedObject>(
        _ request: FetchRequest<T>
    ) throws(ObjectLogError) -> ObjectChanges {
        let worker = ManagedObjectContext(coordinator: coordinator)
        let saved = LockedValue<ObjectChanges?>(nil)
        let origin = worker.identifier
        let token = coordinator.addSaveObserver { changes in
            if changes.origin == origin { saved.withLock { $0 = changes } }
        }
        defer { coordinator.removeObserver(token) }
        var request = request
        request.includesPendingChanges = false
        for object in try worker.fetch(request) { worker.delete(object) }
        try worker.save()
        let changes = saved.withLock { $0 } ?? ObjectChanges()
        mergeChanges(from: changes)
        return changes
    }

    /// The values `object` (saved under `key`) gives each uniqueness constraint of `entity`.
    private static func uniqueChange(
        of object: ManagedObject,
        key: ObjectKey,
        entity: EntityDescription
    ) -> PersistentStoreCoordinator.UniqueChange {
        PersistentStoreCoordinator.UniqueChange(
            key: key,
            entity: entity,
            isDelete: false,
            values: entity.uniquenessConstraints.map {
                ObjectEncoder.uniqueValue(of: object, group: $0, entity: entity)
            }
        )
    }
}
