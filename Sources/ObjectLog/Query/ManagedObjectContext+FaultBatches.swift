import ObjectLogStore

/// The objects of one fetch with a ``FetchRequest/fetchBatchSize`` that are still faults, by
/// their place in its results: reading one loads the rest of its batch.
final class FaultBatches {
    /// The results' keys, in their order.
    let keys: [ObjectKey]
    let size: Int
    /// The place in ``keys`` of each object of the results that is still a fault.
    var positions: [ObjectKey: Int]

    init(keys: [ObjectKey], size: Int, positions: [ObjectKey: Int]) {
        self.keys = keys
        self.size = size
        self.positions = positions
    }
}

extension ManagedObjectContext {
    /// The most fetches whose batches a context remembers; faults of older ones load one by
    /// one, as any fault does.
    static let rememberedFaultBatches = 8

    /// ``fetch(_:)`` of a request with a batch size: the objects as faults, their batches
    /// remembered.
    func fetchInBatches<T: ManagedObject>(
        _ request: FetchRequest<T>
    ) throws(ObjectLogError) -> [T] {
        var unbatched = request
        unbatched.fetchBatchSize = 0
        let ids = try fetchIdentifiers(unbatched)
        var objects: [T] = []
        objects.reserveCapacity(ids.count)
        var positions: [ObjectKey: Int] = [:]
        for (position, id) in ids.enumerated() {
            let object = try object(with: id, as: T.self)
            if object.isFault { positions[id.key] = position }
            objects.append(object)
        }
        guard !positions.isEmpty else { return objects }
        faultBatches.append(
            FaultBatches(keys: ids.map(\.key), size: request.fetchBatchSize, positions: positions)
        )
        if faultBatches.count > Self.rememberedFaultBatches { faultBatches.removeFirst() }
        return objects
    }

    /// Loads the other faults of the batch of a batched fetch that `key` belongs to; returns
    /// whether it belongs to one (the object itself is being loaded by its caller).
    func loadBatch(containing key: ObjectKey) -> Bool {
        guard let index = faultBatches.lastIndex(where: { $0.positions[key] != nil }),
            let position = faultBatches[index].positions[key]
        else { return false }
        let batches = faultBatches[index]
        let start = position / batches.size * batches.size
        var keys: [ObjectKey] = []
        for other in batches.keys[start..<min(start + batches.size, batches.keys.count)] {
            guard batches.positions.removeValue(forKey: other) != nil, other != key,
                registry[other]?.isFault == true
            else { continue }
            keys.append(other)
        }
        if batches.positions.isEmpty { faultBatches.remove(at: index) }
        loadFaults(keys: keys)
        return true
    }

    /// Loads the registered faults among `keys` in one pass over their records.
    ///
    /// For a batch of a batched fetch or of a ``FetchResultsCollection``; a failure is recorded
    /// in ``faultError``.
    func loadFaults(keys: [ObjectKey]) {
        trace(.batchFaultLoad)
        guard !keys.isEmpty else { return }
        do {
            let (bound, generation) = try store.endAndGeneration
            try store.forEachObject(keys: keys) { key, tag, buffer in
                guard let entity = model.entity(tag: tag) else { return }
                try loadFault(
                    key: key,
                    buffer: buffer,
                    entity: entity,
                    bound: bound,
                    generation: generation
                )
            }
        } catch {
            recordFaultError(ObjectLogError.store(error, "cannot load a batch of objects"))
        }
    }
}
