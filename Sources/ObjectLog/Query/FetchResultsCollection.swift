import ObjectLogStore

/// The results of a fetch, made a batch at a time as they are walked: SwiftData's
/// `FetchResultsCollection`, from ``ManagedObjectContext/fetch(_:batchSize:)``.
///
/// The fetch finds the objects and keeps only their keys. Reading an element makes the objects
/// of its batch and loads them in one pass over their records; moving to another batch lets
/// the objects of the last one go, unless something else holds them or they have unsaved
/// changes. Walking a large result thus keeps about one batch of objects in memory.
///
/// ```swift
/// for experiment in try context.fetch(FetchRequest<Experiment>(), batchSize: 1000) {
///     total += experiment.feed
/// }
/// ```
///
/// The collection belongs to its context's isolation domain, like the objects it makes. An
/// object it gives out is the context's: the same instance the context's other fetches
/// return while it is held.
public struct FetchResultsCollection<Element: ManagedObject>: RandomAccessCollection {
    /// The objects' keys, in the results' order.
    private let keys: [ObjectKey]
    /// Each object's entity tag, beside its key.
    private let tags: [EntityTag]
    private let cursor: Cursor

    init(
        context: ManagedObjectContext,
        keys: [ObjectKey],
        tags: [EntityTag],
        batchSize: Int
    ) {
        self.keys = keys
        self.tags = tags
        cursor = Cursor(context: context, batchSize: Swift.max(1, batchSize))
    }

    /// The index of the first element.
    public var startIndex: Int { 0 }
    /// The index past the last element.
    public var endIndex: Int { keys.count }

    /// The object at `position`, its batch made and loaded first when it is not the batch
    /// last read.
    public subscript(position: Int) -> Element {
        let (batch, offset) = position.quotientAndRemainder(dividingBy: cursor.batchSize)
        if batch != cursor.batch { cursor.load(batch, keys: keys, tags: tags) }
        // Safe: the cursor made each object of the batch as `Element`'s entity, or one of its
        // subentities, whose classes are `Element` or its subclasses.
        return unsafeDowncast(cursor.objects[offset], to: Element.self)
    }

    /// The batch last read and its objects.
    private final class Cursor {
        let context: ManagedObjectContext
        let batchSize: Int
        var batch = -1
        var objects: [ManagedObject] = []
        var batchKeys: ArraySlice<ObjectKey> = []

        init(context: ManagedObjectContext, batchSize: Int) {
            self.context = context
            self.batchSize = batchSize
        }

        func load(_ batch: Int, keys: [ObjectKey], tags: [EntityTag]) {
            // The last batch's objects go first, so that those only it held can be let go.
            objects = []
            for key in batchKeys { context.evictIfUnused(key) }
            let range = batch * batchSize..<Swift.min((batch + 1) * batchSize, keys.count)
            batchKeys = keys[range]
            objects = context.objects(keys: batchKeys, tags: tags[range])
            self.batch = batch
        }
    }
}

extension ManagedObjectContext {
    /// The objects a request selects, made and loaded a batch at a time as the result is
    /// walked (see ``FetchResultsCollection``).
    ///
    /// The objects are found as ``fetchIdentifiers(_:)`` finds them: the predicate, sort,
    /// window and pending changes count as for a fetch.
    /// - Parameters:
    ///   - request: The request.
    ///   - batchSize: How many objects to make and load together.
    /// - Returns: The results, as a random-access collection.
    /// - Throws: What ``fetchIdentifiers(_:)`` throws.
    public func fetch<T: ManagedObject>(
        _ request: FetchRequest<T>,
        batchSize: Int
    ) throws(ObjectLogError) -> FetchResultsCollection<T> {
        var request = request
        request.fetchBatchSize = 0
        let ids = try fetchIdentifiers(request)
        var keys: [ObjectKey] = []
        var tags: [EntityTag] = []
        keys.reserveCapacity(ids.count)
        tags.reserveCapacity(ids.count)
        var tagsByName: [String: EntityTag] = [:]
        for id in ids {
            keys.append(id.key)
            if let tag = tagsByName[id.entityName] {
                tags.append(tag)
            } else {
                let tag = try entity(named: id).tag
                tagsByName[id.entityName] = tag
                tags.append(tag)
            }
        }
        return FetchResultsCollection(context: self, keys: keys, tags: tags, batchSize: batchSize)
    }

    /// The objects of `keys` (of the entities `tags` names), registered ones as they are and
    /// the others made as faults, with every fault among them loaded in one pass.
    func objects(keys: ArraySlice<ObjectKey>, tags: ArraySlice<EntityTag>) -> [ManagedObject] {
        var objects: [ManagedObject] = []
        objects.reserveCapacity(keys.count)
        var faults: [ObjectKey] = []
        for (key, tag) in zip(keys, tags) {
            if let registered = registry[key] {
                objects.append(registered)
                if registered.isFault { faults.append(key) }
            } else if let entity = model.entity(tag: tag) {
                objects.append(makeFault(key: key, entity: entity))
                faults.append(key)
            }
        }
        loadFaults(keys: faults)
        return objects
    }

    /// Lets the object of `key` go if nothing but the context holds it and it has no unsaved
    /// changes: it leaves the registry, and a later fetch makes it again.
    func evictIfUnused(_ key: ObjectKey) {
        guard var object = registry.take(key) else { return }
        guard !object.hasChanges, isKnownUniquelyReferenced(&object) else {
            registry.insert(object, for: key)
            return
        }
        if object.isFault { registeredFaults = max(0, registeredFaults - 1) }
        if let entity = object.entity, entity.hasExternalData {
            forgetExternalReferences(ofKey: key, entity: entity)
        }
        object.managedObjectContext = nil
    }
}
