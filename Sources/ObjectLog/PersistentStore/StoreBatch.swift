import ObjectLogStore

/// A batch request as a store may run it itself, in one statement of its own: the objects a
/// query selects, deleted or given new attribute values.
///
/// The engine hands one over only when the query's condition is exactly the request's
/// predicate (``StoreCondition/Translation/isExact``). A store that runs a delete of objects
/// with relationships follows their delete rules as ``ManagedObjectContext/delete(_:)`` does
/// (cascade, deny, and nullify of the inverses); one that cannot returns nil, and the engine
/// deletes them through a context.
package struct StoreBatch: Sendable {
    /// What the batch does to the objects it selects.
    package enum Change: Sendable {
        case delete
        /// Sets each attribute, by name, to its value.
        case update([(attribute: String, value: StoredValue)])
    }

    /// The objects: the query's entities that its condition selects (its sort and window are
    /// not used).
    package var query: StoreQuery
    package var change: Change

    package init(query: StoreQuery, change: Change) {
        self.query = query
        self.change = change
    }
}

/// A batch a store ran: its commit and the objects it changed.
package struct StoreBatchCommit: Sendable {
    package var info: CommitInfo
    /// The objects the batch updated or deleted, as its change says.
    package var objects: [(key: ObjectKey, entity: EntityTag)]
    /// The other objects a delete updated: those whose inverse relationships held an object
    /// it deleted (the nullify rule).
    package var updated: [(key: ObjectKey, entity: EntityTag)]

    package init(
        info: CommitInfo,
        objects: [(key: ObjectKey, entity: EntityTag)],
        updated: [(key: ObjectKey, entity: EntityTag)] = []
    ) {
        self.info = info
        self.objects = objects
        self.updated = updated
    }
}
