import Foundation

extension ManagedObjectContext {
    /// Every object of `entity` (its subentities left out) from one read of a store that
    /// other processes write, such as a database server, registered and loaded; nil when the
    /// fetch does not qualify or the store cannot serve the read, and nothing was done.
    ///
    /// A fetch qualifies without a predicate, text match, sort or limit. On a log store this
    /// process alone writes, such a fetch makes faults and loads them later in one pass; a
    /// server would answer each fault with a round trip, so its rows come in one statement
    /// instead, and they are the fetch's keys too (so the objects and their values are of one
    /// moment). Many objects are made, as faults, on two threads and then loaded from those
    /// rows on two threads when the entity has a ``ScalarLayout``, as a log store's bulk
    /// fault load does.
    func fetchWholeEntityFromStore<T: ManagedObject>(
        _ request: FetchRequest<T>,
        entity: EntityDescription
    ) throws(ObjectLogError) -> [T]? {
        guard !coordinator.isExclusive, request.predicate == nil, request.textMatch == nil,
            request.sortDescriptors.isEmpty, request.fetchLimit == nil,
            var query = StoreQuery(request, model: model)
        else { return nil }
        query.entityTags = [entity.tag]
        query.fetchOffset = 0
        let (bound, generation) = try readingStore { try store.endAndGeneration }
        let read: (any StoreReadPlan)?
        do {
            read = try store.candidates(for: query, adding: [])
        } catch {
            throw ObjectLogError.store(error, "cannot fetch \(entity.name)")
        }
        guard let read else { return nil }
        trace(.storeQuery)
        let keys = window(keys(of: read, request, entity: entity), request)
        let found = faults(forKeys: keys, entity)
        do {
            if entity.scalarLayout != nil, read.count >= max(tuning.parallelDecodingThreshold, 2),
                ProcessInfo.processInfo.activeProcessorCount >= 2
            {
                try loadFaultsInParallel(
                    of: entity,
                    from: store.split(read, parts: tuning.parts(for: read.count)),
                    bound: bound,
                    generation: generation
                )
            } else {
                try store.forEachObject(in: read) { key, _, buffer in
                    try loadFault(
                        key: key,
                        buffer: buffer,
                        entity: entity,
                        bound: bound,
                        generation: generation
                    )
                }
            }
        } catch let error as ObjectLogError {
            throw error
        } catch {
            throw ObjectLogError.store(error, "cannot fetch \(entity.name)")
        }
        // Safe: every object registered under a key of `entity`, or made for one, is an
        // instance of its class, a `T` (see `fetch(_:entity:)`).
        return unsafeBitCast(found, to: [T].self)
    }

    /// The keys of the records `read` holds, in key order, with the context's pending inserts
    /// and without its pending deletes when the request includes pending changes.
    private func keys(
        of read: any StoreReadPlan,
        _ request: FetchRequest<some ManagedObject>,
        entity: EntityDescription
    ) -> [ObjectKey] {
        var keys = read.keys
        // A server returns rows in the order it finds them, which is mostly the key order with
        // runs of rewritten rows; the standard library's sort merges such runs in one pass.
        if !keys.isSorted() { keys.sort() }
        return withPendingChanges(keys, request, entity)
    }
}

extension Array where Element: Comparable {
    /// Whether the elements are in ascending order.
    fileprivate func isSorted() -> Bool {
        var index = 1
        while index < count {
            if self[index] < self[index - 1] { return false }
            index += 1
        }
        return true
    }
}
