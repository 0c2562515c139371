/// The IDs of objects a save or merge inserted, updated and deleted.
///
/// The IDs are lists (in save order, each ID once) rather than sets, because building a set of
/// a million IDs after a bulk save costs more than the save's own bookkeeping; make a `Set`
/// when you need membership tests.
///
/// Posted to did-save and objects-did-change observers, and accepted by
/// ``ManagedObjectContext/mergeChanges(from:)`` in another context.
public struct ObjectChanges: Sendable, Hashable {
    /// Objects that were inserted.
    public var inserted: [ObjectID]
    /// Objects that were updated.
    public var updated: [ObjectID]
    /// Objects that were deleted.
    public var deleted: [ObjectID]
    /// The store's transaction number of the save, when the changes come from a save.
    public var transactionNumber: UInt64?
    /// The context that saved, so it can skip merging its own changes.
    var origin: UInt64 = 0

    /// Creates a change set.
    public init(
        inserted: [ObjectID] = [],
        updated: [ObjectID] = [],
        deleted: [ObjectID] = [],
        transactionNumber: UInt64? = nil
    ) {
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.transactionNumber = transactionNumber
    }

    /// Whether nothing changed.
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }
}

/// How a save resolves objects that another context changed in the store since they were loaded.
public enum MergePolicy: Sendable, Hashable {
    /// Fail the save with a ``ObjectLogError/Code/conflict`` error naming the objects (default).
    case error
    /// Write this context's version of conflicting objects over the store's.
    case overwrite
    /// Drop this context's changes to conflicting objects, keep the store's, and save the rest.
    case rollback
}
