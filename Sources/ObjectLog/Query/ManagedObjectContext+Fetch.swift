import Foundation
import ObjectLogStore

extension ManagedObjectContext {
    /// Returns the objects a request selects, in its order.
    ///
    /// Without a predicate or sort descriptors the objects come back as faults and nothing is
    /// decoded; otherwise each candidate is decoded once into a scratch object to evaluate the
    /// predicate, and only matches are registered.
    /// - Throws: ``ObjectLogError/Code/invalidArgument`` if the predicate cannot be evaluated;
    ///   ``ObjectLogError/Code/entityNotInModel`` if `T` is not an entity of the context's
    ///   model.
    public func fetch<T: ManagedObject>(_ request: FetchRequest<T>) throws(ObjectLogError) -> [T] {
        try throwFaultError()
        if request.fetchBatchSize > 0 { return try fetchInBatches(request) }
        if let saved = try savedStateIdentifiers(request) {
            var objects: [T] = []
            objects.reserveCapacity(saved.count)
            for id in saved { objects.append(try object(with: id, as: T.self)) }
            if !request.returnsObjectsAsFaults {
                for object in objects where object.isFault { object.fireFault() }
                try throwFaultError()
            }
            return objects
        }
        let entities = try fetchedEntities(request)
        if entities.count == 1 { return try fetch(request, entity: entities[0]) }
        // Each entity's best `offset + limit`, merged in the request's order (then by key).
        let part = Self.part(of: request)
        var merged: [T] = []
        for entity in entities { merged += try fetch(part, entity: entity) }
        sort(&merged, request)
        return window(merged, request)
    }

    /// ``fetch(_:)`` of the objects of one entity, its subentities left out.
    private func fetch<T: ManagedObject>(
        _ request: FetchRequest<T>,
        entity: EntityDescription
    ) throws(ObjectLogError) -> [T] {
        // Faults for every key cost a store this process alone writes nothing until they are
        // read; a store on a server would then read them one by one, so it is scanned instead.
        if request.predicate == nil, request.textMatch == nil, request.sortDescriptors.isEmpty,
            coordinator.isExclusive
        {
            let found = faults(forKeys: window(try allKeys(of: entity, request), request), entity)
            // Safe: `entity` is `T`'s own entity or one of its subentities, and every object
            // registered under one of its keys, or made for one, is an instance of its class: a
            // `T`. (A checked cast or a generic `map` per object cost more than making the
            // fault.)
            let objects = unsafeBitCast(found, to: [T].self)
            if !request.returnsObjectsAsFaults {
                // One pass over the log pays off only for many objects.
                if objects.count >= Self.faultsForBulkLoad / 4 {
                    loadAllFaults(of: entity)
                } else {
                    for object in objects where object.isFault { object.fireFault() }
                }
                try throwFaultError()
            }
            return objects
        }
        if let whole = try fetchWholeEntityFromStore(request, entity: entity) { return whole }
        // With a sort and a small window, only the best `offset + limit` matches are kept and
        // registered: the others are decoded into reused scratch objects and dropped.
        var keepBest: Int?
        if let limit = request.fetchLimit, !request.sortDescriptors.isEmpty {
            let wanted = max(0, request.fetchOffset) + max(0, limit)
            if wanted <= 4096 { keepBest = wanted }
        }
        var matches = try matchingObjects(
            of: entity,
            request,
            register: true,
            keepBest: keepBest
        ).objects
        sort(&matches, request)
        return window(matches, request)
    }

    /// Counts the objects a request selects, without registering them.
    ///
    /// The count is that of the matches less ``FetchRequest/fetchOffset``, at most
    /// ``FetchRequest/fetchLimit``: the number of objects a fetch of the same request
    /// returns. SwiftData calls this ``fetchCount(_:)``.
    /// - Throws: ``ObjectLogError/Code/entityNotInModel`` if `T` is not an entity of the
    ///   context's model; ``ObjectLogError/Code/invalidArgument`` if the predicate cannot be
    ///   evaluated.
    public func count<T: ManagedObject>(_ request: FetchRequest<T>) throws(ObjectLogError) -> Int {
        try throwFaultError()
        if !request.includesPendingChanges, hasChanges {
            return try savedStateContext().count(request.includingPendingChanges)
        }
        var part = request
        part.fetchOffset = 0
        part.fetchLimit = nil
        var total = 0
        for entity in try fetchedEntities(request) { total += try count(part, entity: entity) }
        total = max(0, total - request.fetchOffset)
        if let limit = request.fetchLimit { total = min(total, limit) }
        return total
    }

    /// The number of objects of one entity (its subentities left out) a request selects,
    /// before its window.
    private func count<T: ManagedObject>(
        _ request: FetchRequest<T>,
        entity: EntityDescription
    ) throws(ObjectLogError) -> Int {
        var total: Int
        if request.predicate == nil, request.textMatch == nil {
            total = try readingStore { try store.liveCount(entity: entity.tag) }
            if request.includesPendingChanges {
                total +=
                    insertedList.lazy.filter {
                        $0.isInserted && $0.managedObjectContext === self && $0.hasEntity(entity)
                    }.count
                total -= deletedMap.values.lazy.filter { $0.hasEntity(entity) }.count
            }
        } else {
            total = try matchingObjects(of: entity, request, register: false, countOnly: true).count
        }
        return total
    }

    /// Returns the IDs of the objects a request selects, without registering them.
    /// - Throws: ``ObjectLogError/Code/entityNotInModel`` if `T` is not an entity of the
    ///   context's model; ``ObjectLogError/Code/invalidArgument`` if the predicate cannot be
    ///   evaluated.
    public func fetchIdentifiers<T: ManagedObject>(
        _ request: FetchRequest<T>
    ) throws(ObjectLogError) -> [ObjectID] {
        if let saved = try savedStateIdentifiers(request) { return saved }
        let entities = try fetchedEntities(request)
        if entities.count == 1, request.predicate == nil, request.textMatch == nil,
            request.sortDescriptors.isEmpty
        {
            let entity = entities[0]
            return window(try allKeys(of: entity, request), request).map {
                ObjectID(entityName: entity.name, key: $0)
            }
        }
        let part = Self.part(of: request)
        var matches: [T] = []
        for entity in entities {
            var found = try matchingObjects(of: entity, part, register: false).objects
            if entities.count > 1 {
                // Only each entity's best `offset + limit` can be among the results.
                sort(&found, part)
                found = window(found, part)
            }
            matches += found
        }
        sort(&matches, request)
        let ids = window(matches, request).map(\.objectID)
        // The unregistered matches kept their context until now: a sort through a
        // relationship reaches the destinations through it.
        for object in matches where registry[object.key] !== object {
            object.managedObjectContext = nil
        }
        return ids
    }

    /// The IDs a request selects by the saved state alone, when it leaves out the context's
    /// pending changes and the context has some; nil otherwise.
    ///
    /// Saved values decide which objects match and their order, through relationships too
    /// (an unsaved rename of an owner must not move the objects it owns): the request runs in
    /// a context of the same coordinator that has no unsaved changes.
    private func savedStateIdentifiers<T: ManagedObject>(
        _ request: FetchRequest<T>
    ) throws(ObjectLogError) -> [ObjectID]? {
        guard !request.includesPendingChanges, hasChanges else { return nil }
        return try savedStateContext().fetchIdentifiers(request.includingPendingChanges)
    }

    /// A context of the same coordinator without changes, which sees the saved state only.
    func savedStateContext() -> ManagedObjectContext {
        let context = ManagedObjectContext(coordinator: coordinator)
        context.tuning = tuning
        return context
    }

    /// Fetches all objects of a class.
    /// - Throws: ``ObjectLogError/Code/entityNotInModel`` if `T` is not an entity of the
    ///   context's model.
    public func fetch<T: ManagedObject>(_ type: T.Type) throws(ObjectLogError) -> [T] {
        try fetch(FetchRequest<T>())
    }

    // MARK: - Implementation

    /// The objects of `keys` (of `entity`): those registered, and faults registered for the
    /// others, made on two threads when there are many (``makeFaultsInParallel(keys:entity:)``).
    func faults(forKeys keys: [ObjectKey], _ entity: EntityDescription) -> [ManagedObject] {
        registry.reserveCapacity(registry.count + keys.count)
        if let made = makeFaultsInParallel(keys: keys, entity: entity) { return made }
        var found: [ManagedObject] = []
        found.reserveCapacity(keys.count)
        for key in keys {
            found.append(registry[key] ?? makeFault(key: key, entity: entity))
        }
        return found
    }

    /// The objects registered under `keys`, with faults made for the keys that have none, on
    /// two threads; nil when the fetch does not qualify, and nothing was done.
    ///
    /// A fetch qualifies with at least `tuning.parallelDecodingThreshold` keys on a machine with
    /// two processors or more. The keys are cut into parts (see `ContextTuning.parts(for:)`), which
    /// the threads take in turn. For each part, a thread makes and sets up the faults (running the
    /// class's `init()`, which the strict concurrency checking of Swift 6 keeps free of unprotected
    /// shared state), gives them the part's own context link (so that the threads do not contend
    /// for one reference count), retains each for the registry, and only reads the registry. The
    /// calling thread waits for all parts, then registers the new faults without touching them:
    /// reading their memory again would be most of the cost of registering them there.
    func makeFaultsInParallel(
        keys: [ObjectKey],
        entity: EntityDescription
    ) -> [ManagedObject]? {
        guard keys.count >= max(tuning.parallelDecodingThreshold, 2),
            ProcessInfo.processInfo.activeProcessorCount >= 2
        else { return nil }
        let type = entity.objectType
        let parts = tuning.parts(for: keys.count)
        let links = (0..<parts).map { _ in workerLink() }
        // A fresh context has nothing registered to look up.
        let looksUp = registry.count > 0
        let chunk = (keys.count + parts - 1) / parts
        let faultState = observationBits.union([.fault, .tracksUpdates])
        let objects = [ManagedObject](unsafeUninitializedCapacity: keys.count) {
            buffer,
            initialized in
            // Safe to share: each part initialises its own elements of the buffer and sets up
            // only the objects it makes, and the registry, keys and entity are only read, until
            // all parts have finished.
            let shared = UncheckedSendable((buffer, keys, registry, entity, links))
            DispatchQueue.concurrentPerform(iterations: parts) { part in
                let (buffer, keys, registry, entity, links) = shared.value
                let link = links[part]
                let start = part * chunk
                let end = min(keys.count, start + chunk)
                guard start < end, let base = buffer.baseAddress else { return }
                for index in start..<end {
                    if looksUp, let registered = registry.unretainedObject(forKey: keys[index]) {
                        (base + index).initialize(to: registered.takeUnretainedValue())
                        continue
                    }
                    let object = type.init()
                    object.key = keys[index]
                    object.entity = entity
                    object.contextLink = link
                    object.accessState = faultState
                    // The registry's reference, taken while the object is at hand.
                    _ = Unmanaged.passUnretained(object).retain()
                    (base + index).initialize(to: object)
                }
            }
            initialized = keys.count
        }
        var made = 0
        objects.withUnsafeBufferPointer { objects in
            for index in keys.indices {
                if looksUp, registry.unretainedObject(forKey: keys[index]) != nil { continue }
                registry.insert(
                    retained: Unmanaged.passUnretained(objects[index]),
                    for: keys[index]
                )
                made += 1
            }
        }
        registeredFaults += made
        registry.holdsObjectsMadeInParallel = true
        trace(.parallelFaultBatch)
        return objects
    }

    /// The number of objects of `entity` whose text matches, the saved ones counted on their
    /// record bytes by two threads or more; nil when the count does not qualify (fewer records
    /// than `tuning.parallelDecodingThreshold`, or one processor), and the scan counts instead.
    ///
    /// Objects registered here are then tested as the scan tests them (their own values when
    /// loaded, the store's otherwise), and with `pending` the deleted ones are left out and the
    /// inserted ones tested. A record whose bytes cannot tell (text that is not ASCII) is
    /// decoded and tested on the calling thread afterwards.
    private func countInParallel(
        entity: EntityDescription,
        text: CompiledTextMatch,
        pending: Bool
    ) throws(ObjectLogError) -> Int? {
        let count = try readingStore { try store.liveCount(entity: entity.tag) }
        guard count >= max(tuning.parallelDecodingThreshold, 2),
            ProcessInfo.processInfo.activeProcessorCount >= 2
        else { return nil }
        var registered = Set<ObjectKey>()
        registry.forEachObject { key, object in
            if object.hasEntity(entity) { registered.insert(key) }
        }
        let plans: [any StoreReadPlan]
        do {
            plans = try store.liveObjectPlans(entity: entity.tag, parts: tuning.parts(for: count))
        } catch {
            throw ObjectLogError.store(error, "cannot scan \(entity.name)")
        }
        trace(.parallelTextCount)
        // Per part: the records that matched, and those whose bytes could not tell.
        let found = PartSlots(count: plans.count, initial: (matched: 0, undecided: [ObjectKey]()))
        let errors = PartSlots<(any Error)?>(count: plans.count, initial: nil)
        // Safe to share: the entity, the matcher, the keys and the store are only read.
        let shared = UncheckedSendable((entity, text, store, registered))
        DispatchQueue.concurrentPerform(iterations: plans.count) { part in
            let (entity, text, store, registered) = shared.value
            var matched = 0
            var undecided: [ObjectKey] = []
            do {
                try store.forEachObject(in: plans[part]) { key, _, buffer in
                    guard registered.isEmpty || !registered.contains(key) else { return }
                    switch text.test(payload: buffer, entity: entity) {
                    case true?: matched += 1
                    case false?: break
                    case nil: undecided.append(key)
                    }
                }
                found[part] = (matched, undecided)
            } catch {
                errors[part] = error
            }
        }
        if let error = errors.firstError() {
            throw ObjectLogError.store(error, "cannot scan \(entity.name)")
        }
        var total = found.values.reduce(0) { $0 + $1.matched }
        // Registered objects with their own values, as the scan tests them.
        var fromStore = found.values.flatMap(\.undecided)
        // (Only those saved: the inserted ones are counted below, with `pending`.)
        for key in registered where try readingStore({ try store.location(of: key) }) != nil {
            guard let object = registry[key] else { continue }
            if pending, object.isDeleted { continue }
            if !object.isFault, pending || !object.hasChanges {
                if text.test(object) { total += 1 }
            } else {
                fromStore.append(key)
            }
        }
        if !fromStore.isEmpty {
            let scratch = entity.objectType.init()
            scratch.entity = entity
            do {
                try store.forEachObject(keys: fromStore) { _, _, buffer in
                    var reader = PayloadReader(buffer)
                    try ObjectDecoder.decode(&reader, into: scratch, entity: entity, source: nil)
                    if text.test(scratch) { total += 1 }
                }
            } catch let error as ObjectLogError {
                throw error
            } catch {
                throw ObjectLogError.store(error, "cannot scan \(entity.name)")
            }
        }
        if pending {
            for object in insertedList
            where object.isInserted && object.managedObjectContext === self
                && object.hasEntity(entity) && text.test(object)
            {
                total += 1
            }
        }
        return total
    }

    /// The saved objects of `entity` that match `predicate`, as a plan to read them, when the
    /// attribute columns decide the whole predicate; nil when they cannot (the predicate must
    /// then be evaluated on the objects).
    ///
    /// For a context with no objects of the entity registered (batch requests use a fresh
    /// one): registered objects would be left out of the plan.
    func columnMatchPlan<T: ManagedObject>(
        of entity: EntityDescription,
        predicate: Predicate<T>
    ) throws -> (any StoreReadPlan)? {
        guard let columns = PredicateCompiler.compileWithReads(predicate, entity: entity)?.columns
        else { return nil }
        return try candidatePlan(
            of: entity,
            condition: columns,
            order: nil,
            keepBest: nil,
            countOnly: false
        )?.plan
    }

    /// The entities whose objects a request selects: `T`'s own, unless it is abstract, and
    /// its subentities' unless the request leaves them out.
    func fetchedEntities<T: ManagedObject>(
        _ request: FetchRequest<T>
    ) throws(ObjectLogError) -> [EntityDescription] {
        let entity = try entity(of: T.self)
        if entity.subentities.isEmpty { return [entity] }
        guard request.includesSubentities else { return entity.isAbstract ? [] : [entity] }
        return entity.concreteEntities
    }

    /// The request each entity of a several-entity fetch runs: the whole of the window's end,
    /// from the start.
    private static func part<T: ManagedObject>(of request: FetchRequest<T>) -> FetchRequest<T> {
        var part = request
        part.fetchOffset = 0
        part.fetchLimit = request.fetchLimit.map { max(0, request.fetchOffset) + max(0, $0) }
        return part
    }

    /// The entity of a class, or an error naming it when the model does not have it.
    func entity(of type: ManagedObject.Type) throws(ObjectLogError) -> EntityDescription {
        guard let entity = model.entity(for: type) else {
            throw ObjectLogError(
                .entityNotInModel,
                "class \(type) is not an entity of the model (its entities: "
                    + model.entities.map(\.name).joined(separator: ", ") + ")"
            )
        }
        return entity
    }

    func window<Element>(
        _ elements: [Element],
        _ request: FetchRequest<some ManagedObject>
    )
        -> [Element]
    {
        let start = min(max(0, request.fetchOffset), elements.count)
        let end =
            request.fetchLimit.map { min(elements.count, start + max(0, $0)) } ?? elements.count
        if start == 0, end == elements.count { return elements }
        return Array(elements[start..<end])
    }

    /// Saved keys plus pending inserts, minus pending deletes, in key order (the order of an
    /// unsorted fetch, whether its objects are saved or not).
    private func allKeys(
        of entity: EntityDescription,
        _ request: FetchRequest<some ManagedObject>
    ) throws(ObjectLogError)
        -> [ObjectKey]
    {
        let keys = try readingStore { try store.liveKeys(entity: entity.tag) }
        return withPendingChanges(keys, request, entity)
    }

    /// Saved keys of `entity` in key order, with the pending inserts and without the pending
    /// deletes when `request` includes pending changes.
    func withPendingChanges(
        _ keys: [ObjectKey],
        _ request: FetchRequest<some ManagedObject>,
        _ entity: EntityDescription
    ) -> [ObjectKey] {
        var keys = keys
        guard request.includesPendingChanges else { return keys }
        if !deletedMap.isEmpty { keys.removeAll { deletedMap[$0] != nil } }
        var inserted: [ObjectKey] = []
        for object in insertedList
        where object.isInserted && object.managedObjectContext === self && object.hasEntity(entity)
        {
            inserted.append(object.key)
        }
        guard !inserted.isEmpty else { return keys }
        // Keys are handed out in blocks per context: other contexts' saved objects may have
        // larger keys than this one's inserts.
        inserted.sort()
        if let last = keys.last, last > inserted[0] {
            keys = Self.merge(keys, inserted)
        } else {
            keys += inserted
        }
        return keys
    }

    /// Two ascending key lists as one.
    private static func merge(_ first: [ObjectKey], _ second: [ObjectKey]) -> [ObjectKey] {
        var merged: [ObjectKey] = []
        merged.reserveCapacity(first.count + second.count)
        var (i, j) = (0, 0)
        while i < first.count, j < second.count {
            if first[i] <= second[j] {
                merged.append(first[i])
                i += 1
            } else {
                merged.append(second[j])
                j += 1
            }
        }
        merged += first[i...]
        merged += second[j...]
        return merged
    }

    /// The objects that satisfy the predicate, unsorted, and their number; with `countOnly`
    /// only the number.
    private func matchingObjects<T: ManagedObject>(
        of entity: EntityDescription,
        _ request: FetchRequest<T>,
        register: Bool,
        countOnly: Bool = false,
        keepBest: Int? = nil
    ) throws(ObjectLogError) -> (objects: [T], count: Int) {
        let plan = try FetchPlan(
            entity: entity,
            request: request,
            register: register,
            countOnly: countOnly,
            keepBest: keepBest,
            less: ordering(request),
            columnOrder: columnOrder(request, entity: entity),
            storeQuery: coordinator.isExclusive ? nil : StoreQuery(request, model: model)
        )
        let (objects, count) = try matchingObjects(plan)
        // Safe: the scan only passes objects of `entity`, whose class is `T`.
        return (unsafeBitCast(objects, to: [T].self), count)
    }

    /// The scan behind ``matchingObjects(of:_:register:countOnly:keepBest:)``, as `plan`
    /// says: the objects of its entity read from the store (through attribute columns where
    /// they narrow the scan), the registered ones as they are in the context, and, with pending
    /// changes, the inserted ones.
    private func matchingObjects(
        _ plan: FetchPlan
    ) throws(ObjectLogError) -> (objects: [ManagedObject], count: Int) {
        let entity = plan.entity
        let text = plan.text
        let pending = plan.includesPendingChanges
        var matches = FetchMatches(plan: plan) { [registry] in registry[$0.key] === $0 }
        // Objects not yet registered are decoded into a scratch object; a match keeps the
        // scratch object (so it is decoded once) and a fresh one replaces it.
        func makeScratch() -> ManagedObject? {
            if let reused = matches.spare.popLast() {
                if entity.hasExternalData {
                    forgetExternalReferences(ofKey: reused.key, entity: entity)
                }
                return reused
            }
            let object = entity.objectType.init()
            object.entity = entity
            object.managedObjectContext = self
            return object
        }
        if plan.countsByTextAlone, let text,
            let counted = try countInParallel(entity: entity, text: text, pending: pending)
        {
            return ([], counted)
        }
        guard var scratch = makeScratch() else { return ([], 0) }
        let needsValues = plan.needsValues
        var failure: ObjectLogError?
        // Attribute columns narrow the scan to the records that can match, when they can
        // decide the predicate or the first sort (before the log's end is read below).
        var readPlan: (any StoreReadPlan)?
        // A text match, which columns cannot decide, is tested on every record the scan reads:
        // with one, the columns only narrow the scan to the records the predicate's condition
        // lets through (so without such a predicate they are not used). Counting those, or
        // keeping the best of them, would leave the text match out.
        let narrowsOnly = text != nil
        if plan.columns != nil || (!plan.hasPredicate && !narrowsOnly) {
            do {
                let candidates = try candidatePlan(
                    of: entity,
                    condition: plan.columns,
                    order: narrowsOnly ? nil : plan.columnOrder,
                    keepBest: narrowsOnly ? nil : plan.keepBest,
                    countOnly: narrowsOnly ? false : plan.countOnly
                )
                readPlan = candidates?.plan
                matches.count += candidates?.counted ?? 0
            } catch {
                throw ObjectLogError.store(error, "cannot scan \(entity.name)")
            }
            if readPlan != nil { trace(.columnScan) }
        }
        // A store that other processes write selects the records that may match itself; the
        // objects this context changed are read too, and tested as the context has them.
        if readPlan == nil, let query = plan.storeQuery {
            var changed: [ObjectKey] = []
            registry.forEachObject { key, object in
                if object.hasEntity(entity), object.hasChanges || object.isDeleted {
                    changed.append(key)
                }
            }
            do {
                readPlan = try store.candidates(for: query, adding: changed)
            } catch {
                throw ObjectLogError.store(error, "cannot fetch \(entity.name)")
            }
            if readPlan != nil { trace(.storeQuery) }
        }
        func scan(_ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void) throws {
            if let readPlan {
                try store.forEachObject(in: readPlan, body)
            } else {
                try store.forEachLiveObject(entity: entity.tag, body)
            }
        }
        // Every record the scan sees is older than the log's end now, and every later write
        // lies beyond it.
        let (scanBound, generation) = try readingStore { try store.endAndGeneration }
        // What a scratch object gains as it is registered (it has no access bits before).
        let registeredState = observationBits.union(.tracksUpdates)
        do {
            try scan { key, _, buffer in
                let registered = registry[key]
                if let registered {
                    if pending, registered.isDeleted { return }
                    if !registered.isFault, pending || !registered.hasChanges {
                        if try plan.evaluate(registered) { matches.accept(registered) }
                        return
                    }
                }
                // A text match reads its attribute's bytes in the record: most records of a
                // search fail it, and are never decoded.
                if let text, let found = text.test(payload: buffer, entity: entity) {
                    guard found else { return }
                    if plan.countsByTextAlone {
                        if let registered { matches.accept(registered) } else { matches.count += 1 }
                        return
                    }
                }
                if needsValues {
                    scratch.key = key
                    if let predicateReads = plan.predicateReads {
                        var reader = PayloadReader(buffer)
                        try ObjectDecoder.decode(
                            &reader,
                            into: scratch,
                            entity: entity,
                            only: predicateReads,
                            source: nil
                        )
                        guard try plan.evaluate(scratch) else { return }
                        if registered == nil, matches.countIfOutranked(scratch) { return }
                    }
                    var reader = PayloadReader(buffer)
                    try ObjectDecoder.decode(
                        &reader,
                        into: scratch,
                        entity: entity,
                        source: RecordSource(store: store, key: key, context: self)
                    )
                    guard try plan.predicateReads != nil || plan.evaluate(scratch) else {
                        if registered == nil, entity.hasExternalData {
                            forgetExternalReferences(ofKey: key, entity: entity)
                        }
                        return
                    }
                }
                if let registered {
                    matches.accept(registered)
                    return
                }
                if plan.countOnly {
                    matches.count += 1
                    return
                }
                let object = scratch
                object.key = key
                if plan.keepBest != nil {
                    // Registered after the scan, if it is still among the best.
                    matches.accept(object)
                    guard let next = makeScratch() else { return }
                    scratch = next
                    return
                }
                guard let next = makeScratch() else { return }
                scratch = next
                if plan.register {
                    registry.insert(object, for: key)
                    object.accessState.formUnion(registeredState)
                    object.loadedRecordOffset = 0
                    object.recordOffsetBound = scanBound
                    object.loadedGeneration = UInt32(truncatingIfNeeded: generation)
                    object.awakeAfterLoad()
                }
                // Unregistered, an object keeps its context until its caller is done with it
                // (``fetchIdentifiers(_:)`` sorts it first, perhaps through a relationship).
                matches.accept(object)
            }
        } catch let error as ObjectLogError {
            failure = error
        } catch {
            failure = ObjectLogError.store(error, "cannot scan \(entity.name)")
        }
        if let failure { throw failure }
        if plan.keepBest != nil {
            for object in matches.objects where registry[object.key] == nil {
                registry.insert(object, for: object.key)
                object.accessState.formUnion(registeredState)
                object.loadedRecordOffset = 0
                object.recordOffsetBound = scanBound
                object.loadedGeneration = UInt32(truncatingIfNeeded: generation)
                object.awakeAfterLoad()
            }
            for object in matches.spare where entity.hasExternalData {
                forgetExternalReferences(ofKey: object.key, entity: entity)
            }
        }
        if pending {
            for object in insertedList
            where object.isInserted && object.managedObjectContext === self
                && object.hasEntity(entity)
            {
                if try plan.evaluate(object) { matches.accept(object) }
            }
        }
        return (matches.objects, matches.count)
    }

    /// The first sort descriptor's attribute and direction, if attribute columns can order by
    /// it exactly as ``ordering(_:)`` does: a direct comparison of a number or date, or a
    /// `.lexical` or default (`String`'s own) comparison of a string: for the ASCII strings the
    /// columns order, both are byte order.
    private func columnOrder<T: ManagedObject>(
        _ request: FetchRequest<T>,
        entity: EntityDescription
    ) -> (index: Int, ascending: Bool)? {
        guard let descriptor = request.sortDescriptors.first, let keyPath = descriptor.keyPath,
            let accessor = entity.attributeAccessor(for: keyPath),
            let field = accessor.scalarField
        else { return nil }
        let ascending = descriptor.order == .forward
        switch field.kind {
        case .int, .int64, .double, .date:
            guard accessor.makeComparator(ascending: ascending) != nil else { return nil }
        case .string:
            guard Self.ordersASCIIByBytes(descriptor) else { return nil }
        case .bool:
            return nil
        }
        return (accessor.index, ascending)
    }

    /// The records a scan must read, found with the entity's attribute columns, or nil to read
    /// them all.
    ///
    /// The candidates are the saved objects that satisfy `condition` (all without one) and,
    /// when only the best `keepBest` in `order` are wanted, only those no worse than the
    /// `keepBest`-th of them in the column's order (a column orders by the same rule as the
    /// fetch, and strictly, so each object it leaves out has `keepBest` better ones). Objects
    /// registered in this context are always candidates: their values may differ from the saved
    /// ones. The scan still evaluates the predicate and the order on every record it reads.
    ///
    /// With `countOnly` (and no order), the saved objects that are not registered and satisfy
    /// `condition` are only counted (`counted`): the columns decide the condition exactly as the
    /// compiled predicate does on their values, which equal the saved ones; the plan reads the
    /// registered objects alone.
    private func candidatePlan(
        of entity: EntityDescription,
        condition: ColumnCondition?,
        order: (index: Int, ascending: Bool)?,
        keepBest: Int?,
        countOnly: Bool
    ) throws -> (plan: any StoreReadPlan, counted: Int)? {
        // Only a store this process alone writes has columns (see `withColumns`): on any other
        // the count below would be a query to the store for nothing.
        guard condition != nil || order != nil, coordinator.isExclusive else { return nil }
        var registered: [ObjectKey] = []
        registry.forEachObject { key, object in
            if object.hasEntity(entity) { registered.append(key) }
        }
        // With many of them registered, the columns would save little.
        let saved = try store.liveCount(entity: entity.tag)
        guard registered.count <= saved / 4 else { return nil }
        let indices = (condition?.indices ?? []) + (order.map { [$0.index] } ?? [])
        // Columns already built decide the condition, and the order, faster than a declared
        // index, whose candidates are read and tested one by one; the index serves until then
        // (when its range is narrow enough, see `ContextTuning.declaredIndexShare`), so that
        // the first fetch after an open reads only the objects in its range instead of every
        // object to build the columns.
        if let condition, !coordinator.hasColumns(of: entity, indices: indices),
            let keys = coordinator.declaredIndexCandidates(
                of: entity,
                condition: condition,
                maximumCount: saved / max(tuning.declaredIndexShare, 1)
            )
        {
            trace(.declaredIndexScan)
            let skipped = Set(registered)
            var candidates = skipped.isEmpty ? keys : keys.filter { !skipped.contains($0) }
            candidates += registered
            return (try store.readPlan(keys: candidates), 0)
        }
        let plan = try coordinator.withColumns(of: entity, indices: indices) {
            columns -> (plan: any StoreReadPlan, counted: Int)? in
            guard var bits = condition.map({ columns.matches($0) }) ?? columns.presentBits() else {
                return nil
            }
            for key in registered {
                if let row = columns.row(of: key) { bits[row >> 6] &= ~(1 << UInt64(row & 63)) }
            }
            if countOnly, order == nil {
                let counted = bits.reduce(0) { $0 + $1.nonzeroBitCount }
                return (try store.readPlan(keys: registered), counted)
            }
            var candidates: [ObjectKey] = []
            func forEachSlot(_ body: (Int) -> Void) {
                for word in bits.indices {
                    var remaining = bits[word]
                    while remaining != 0 {
                        body(word << 6 | remaining.trailingZeroBitCount)
                        remaining &= remaining &- 1
                    }
                }
            }
            if let order, let wanted = keepBest, let column = columns.columns[order.index] {
                // The `wanted` smallest order keys, in a max-heap.
                var best = MaxHeap(capacity: wanted)
                forEachSlot { slot in
                    if let value = columns.orderKey(column, slot: slot) {
                        best.offer(order.ascending ? value : ~value)
                    } else {
                        candidates.append(columns.key(ofSlot: slot))
                    }
                }
                let threshold = best.isFull ? best.maximum : .max
                forEachSlot { slot in
                    guard let value = columns.orderKey(column, slot: slot) else { return }
                    if (order.ascending ? value : ~value) <= threshold {
                        candidates.append(columns.key(ofSlot: slot))
                    }
                }
            } else if let parts = keysInParallel(bits, columns) {
                return (try store.readPlan(keyParts: parts + [registered]), 0)
            } else {
                forEachSlot { candidates.append(columns.key(ofSlot: $0)) }
            }
            candidates += registered
            return (try store.readPlan(keys: candidates), 0)
        }
        return plan ?? nil
    }

    /// The keys of the rows set in `bits`, in parts of about equal size made on two threads or
    /// more, in row order; nil when there are fewer than `tuning.parallelPlanThreshold` (or
    /// one processor), and one thread lists them.
    private func keysInParallel(_ bits: [UInt64], _ columns: AttributeColumns) -> [[ObjectKey]]? {
        let matched = bits.reduce(0) { $0 + $1.nonzeroBitCount }
        guard matched >= max(tuning.parallelPlanThreshold, 2),
            ProcessInfo.processInfo.activeProcessorCount >= 2
        else { return nil }
        trace(.parallelPlan)
        let parts = tuning.parts(for: matched)
        let words = bits.count
        let keys = PartSlots<[ObjectKey]>(count: parts, initial: [])
        // Safe to share: the bits and the columns are only read (the columns under the
        // coordinator's lock, which the caller holds).
        let shared = UncheckedSendable((bits, columns))
        DispatchQueue.concurrentPerform(iterations: parts) { part in
            let (bits, columns) = shared.value
            let range = (words * part / parts)..<(words * (part + 1) / parts)
            var found: [ObjectKey] = []
            found.reserveCapacity(bits[range].reduce(0) { $0 + $1.nonzeroBitCount })
            for word in range {
                var remaining = bits[word]
                while remaining != 0 {
                    found.append(columns.key(ofSlot: word << 6 | remaining.trailingZeroBitCount))
                    remaining &= remaining &- 1
                }
            }
            keys[part] = found
        }
        return Array(keys.values)
    }

    /// Sorts by the request's descriptors, then by key; with a small window only the first
    /// `offset + limit` are fully ordered.
    private func sort<T: ManagedObject>(_ typed: inout [T], _ request: FetchRequest<T>) {
        // Sorted as `ManagedObject`s (see `matchingObjects`); safe: `T` is a class, so the
        // arrays have the same representation, and every element is a `T`.
        var objects = unsafeBitCast(typed, to: [ManagedObject].self)
        typed = []
        defer { typed = unsafeBitCast(objects, to: [T].self) }
        if request.sortDescriptors.isEmpty {
            Self.sortByKey(&objects)
            return
        }
        let less = ordering(request)
        if let limit = request.fetchLimit {
            let wanted = max(0, request.fetchOffset) + max(0, limit)
            if wanted < objects.count / 16 {
                var best: [ManagedObject] = []
                best.reserveCapacity(wanted + 1)
                for object in objects {
                    if best.count == wanted, let last = best.last, !less(object, last) { continue }
                    var low = 0
                    var high = best.count
                    while low < high {
                        let middle = (low + high) / 2
                        if less(object, best[middle]) { high = middle } else { low = middle + 1 }
                    }
                    best.insert(object, at: low)
                    if best.count > wanted { best.removeLast() }
                }
                objects = best
                return
            }
        }
        objects.sort(by: less)
    }

    /// Sorts `objects` by key: the order of a request without sort descriptors.
    ///
    /// Keys are compared as plain integers, away from the objects: a store on a server hands
    /// rows over in the order it finds them, and a sort through the general comparison would
    /// retain and release two objects at every step.
    private static func sortByKey(_ objects: inout [ManagedObject]) {
        var sorted = true
        var previous: ObjectKey = 0
        for object in objects {
            if object.key < previous {
                sorted = false
                break
            }
            previous = object.key
        }
        if sorted { return }
        var order = objects.indices.map { (key: objects[$0].key, index: $0) }
        order.sort { $0.key < $1.key }
        objects = order.map { objects[$0.index] }
    }

    /// The request's order: its sort descriptors, then the key.
    func ordering<T: ManagedObject>(
        _ request: FetchRequest<T>
    ) -> (ManagedObject, ManagedObject) -> Bool {
        let comparators = request.sortDescriptors.map { descriptor in
            let compare = comparator(descriptor).compare
            // Safe: orderings only compare objects of `T`'s entity.
            return { (lhs: ManagedObject, rhs: ManagedObject) in
                compare(unsafeDowncast(lhs, to: T.self), unsafeDowncast(rhs, to: T.self))
            }
        }
        return { lhs, rhs in
            for compare in comparators {
                switch compare(lhs, rhs) {
                case .orderedAscending: return true
                case .orderedDescending: return false
                case .orderedSame: continue
                }
            }
            return lhs.key < rhs.key
        }
    }

    /// A comparison for a sort descriptor.
    ///
    /// A descriptor on an attribute itself compares the stored values directly; one on another
    /// plain `Comparable` key path compares through the key path; anything else, and strings
    /// (whose comparison may be localized), uses `SortDescriptor.compare`, which costs several
    /// hundred nanoseconds a call.
    func comparator<T: ManagedObject>(
        _ descriptor: SortDescriptor<T>
    ) -> (compare: (T, T) -> ComparisonResult, isDirect: Bool) {
        if let keyPath = descriptor.keyPath, let entity = model.entity(for: T.self),
            let accessor = entity.attributeAccessor(for: keyPath)
        {
            // Only a key path that is (or forwards to) one attribute maps to its storage.
            if let direct = accessor.makeComparator(ascending: descriptor.order == .forward) {
                return ({ direct($0, $1) }, true)
            }
            if let strings = accessor as? NativeAttributeAccessor<String>,
                Self.ordersASCIIByBytes(descriptor)
            {
                return (lexicalComparator(descriptor, strings), true)
            }
        }
        return (keyPathComparator(descriptor), false)
    }

    /// Whether `descriptor` orders ASCII strings by their bytes: with
    /// `String.StandardComparator.lexical`, or with no string comparator at all, when it sorts
    /// in `String`'s `Comparable` order (on Linux, Foundation has no `.localizedStandard`, so
    /// `SortDescriptor(\.name)` has none), which for ASCII is byte order too.
    private static func ordersASCIIByBytes<T>(_ descriptor: SortDescriptor<T>) -> Bool {
        guard var comparator = descriptor.stringComparator else { return true }
        comparator.order = .forward
        return comparator == .lexical
    }

    /// A `.lexical` (or `String`'s `Comparable`) string comparison that reads the attribute's
    /// storage and compares ASCII strings byte by byte (for ASCII, both orders are byte order, as
    /// in SQLite's default collation); any other pair goes through the descriptor, exactly as
    /// Foundation orders it.
    private func lexicalComparator<T: ManagedObject>(
        _ descriptor: SortDescriptor<T>,
        _ accessor: NativeAttributeAccessor<String>
    ) -> (T, T) -> ComparisonResult {
        let ascending = descriptor.order == .forward
        return { lhs, rhs in
            if lhs.isFault { lhs.fireFault() }
            if rhs.isFault { rhs.fireFault() }
            guard
                let order = asciiOrder(accessor.storedValue(of: lhs), accessor.storedValue(of: rhs))
            else { return descriptor.compare(lhs, rhs) }
            switch order {
            case .orderedSame: return .orderedSame
            case .orderedAscending: return ascending ? .orderedAscending : .orderedDescending
            case .orderedDescending: return ascending ? .orderedDescending : .orderedAscending
            }
        }
    }

    /// A comparison through the descriptor's key path for plain `Comparable` values.
    private func keyPathComparator<T: ManagedObject>(
        _ descriptor: SortDescriptor<T>
    ) -> (T, T) -> ComparisonResult {
        let fallback: (T, T) -> ComparisonResult = { descriptor.compare($0, $1) }
        guard let keyPath = descriptor.keyPath,
            let valueType = type(of: keyPath).valueType as? any Comparable.Type,
            valueType != String.self, valueType != Substring.self
        else { return fallback }
        let ascending = descriptor.order == .forward
        func make<Value: Comparable>(_: Value.Type) -> ((T, T) -> ComparisonResult)? {
            guard let typed = keyPath as? KeyPath<T, Value> else { return nil }
            return { lhs, rhs in
                let left = lhs[keyPath: typed]
                let right = rhs[keyPath: typed]
                if left < right { return ascending ? .orderedAscending : .orderedDescending }
                if right < left { return ascending ? .orderedDescending : .orderedAscending }
                return .orderedSame
            }
        }
        return make(valueType) ?? fallback
    }
}

/// The byte order of two ASCII strings, or nil if either has a non-ASCII byte.
func asciiOrder(_ left: String, _ right: String) -> ComparisonResult? {
    var left = left
    var right = right
    return left.withUTF8 { a in
        right.withUTF8 { b -> ComparisonResult? in
            var index = 0
            let common = min(a.count, b.count)
            while index < common {
                let x = a[index]
                let y = b[index]
                if x | y >= 0x80 { return nil }
                if x != y {
                    // A combining mark after either byte would compose with it (Swift compares
                    // canonical equivalents: "e\u{301}" is "é", after "~"), so the next bytes
                    // must be ASCII too (or absent) for the answer to stand.
                    let next = index + 1
                    if next < a.count, a[next] >= 0x80 { return nil }
                    if next < b.count, b[next] >= 0x80 { return nil }
                    return x < y ? .orderedAscending : .orderedDescending
                }
                index += 1
            }
            // The rest of the longer one must be ASCII too for the answer to stand.
            let rest = a.count > common ? a[common...] : b[common...]
            if rest.contains(where: { $0 >= 0x80 }) { return nil }
            if a.count == b.count { return .orderedSame }
            return a.count < b.count ? .orderedAscending : .orderedDescending
        }
    }
}
