/// The IDs of objects a save or merge inserted, updated and deleted.
///
/// The IDs are lists (in save order, each ID once) rather than sets, because a set hashes every
/// ID, its entity's name included, which after a bulk save costs more than the save's own
/// bookkeeping; make a `Set` when you need membership tests.
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
    /// Whether the store could not say which objects changed, so that every object may have.
    ///
    /// A database store keeps what each commit changed for a while (see "Choosing a store"):
    /// a process that was cut off from the server for longer misses those lists, and its
    /// containers announce one change set with this set instead of the commits they missed,
    /// as Core Data's persistent history reports an expired token.
    /// ``ManagedObjectContext/mergeChanges(from:)`` then checks every saved object the
    /// context holds against the store, and live queries fetch anew.
    public var isIncomplete = false
    /// The context that saved, so it can skip merging its own changes.
    var origin: UInt64 = 0

    /// Creates a change set.
    public init(
        inserted: [ObjectID] = [],
        updated: [ObjectID] = [],
        deleted: [ObjectID] = [],
        transactionNumber: UInt64? = nil,
        isIncomplete: Bool = false
    ) {
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.transactionNumber = transactionNumber
        self.isIncomplete = isIncomplete
    }

    /// Whether nothing changed: no IDs, and the changes are not ``isIncomplete``.
    public var isEmpty: Bool {
        inserted.isEmpty && updated.isEmpty && deleted.isEmpty && !isIncomplete
    }
}

/// How a save resolves conflicts: objects that another context changed in the store since they
/// were loaded (optimistic locking), and inserted objects whose unique values an existing object
/// already holds (uniqueness constraints).
///
/// The default, ``error``, fails the save. For an import that should update what is already
/// there ("upsert"), set ``overwrite``; to keep what is stored and insert only what is new, set
/// ``rollback``:
///
/// ```swift
/// context.mergePolicy = .overwrite
/// let imported = Experiment(context: context)
/// imported.name = "Spots"        // an experiment named "Spots" is already saved
/// imported.feed = 0.03
/// try context.save()             // the saved "Spots" now has feed 0.03 and keeps its ID
/// ```
///
/// In Core Data terms, `.error` is `NSErrorMergePolicy`; for uniqueness conflicts `.overwrite`
/// acts as `NSMergeByPropertyObjectTrumpMergePolicy` (the inserted object's data wins) and
/// `.rollback` as `NSMergeByPropertyStoreTrumpMergePolicy` (the stored data wins).
///
/// ## Uniqueness conflicts
///
/// An inserted object *collides* with an existing object when, on one uniqueness constraint of
/// its entity, its values equal those of a saved object that the save neither deletes nor gives
/// other values, an updated object's new values, or an object inserted earlier in the same save.
/// The existing object is the *survivor*: it keeps its ``ObjectID``.
///
/// - ``error``: the save fails with ``ObjectLogError/Code/uniqueness``, naming the entity, the
///   attributes, the values and both objects.
/// - ``overwrite``: the survivor takes the inserted object's values: every attribute, each to-one
///   relationship the inserted object set (an empty one keeps the survivor's), and the
///   destinations of its to-many relationships, added to the survivor's own. Objects related to
///   the inserted object are related to the survivor instead.
/// - ``rollback``: the inserted object is dropped and the survivor is unchanged. Relationships of
///   other objects to the dropped object are cleared, as if it had been deleted with the
///   ``DeleteRule/nullify`` rule.
///
/// Either way the inserted instance leaves the context: its
/// ``ManagedObject/managedObjectContext`` becomes `nil`, its relationships are emptied (its
/// attributes keep the values it had), and its ``ManagedObject/objectID`` becomes the
/// survivor's, so `try context.object(with: instance.objectID)` gives the survivor. The did-save
/// notification lists the survivor among the updated objects (among the inserted ones when the
/// survivor is itself an insert of the save) and never the dropped object.
///
/// Inserts of one save that collide with each other resolve in insertion order: the first one
/// survives; with `.overwrite` later ones merge into it in turn, so the last one's values win;
/// with `.rollback` the first one's values stay.
///
/// Two cases fail with ``ObjectLogError/Code/uniqueness`` under every policy:
/// - An *updated* object whose new values collide with another existing object. Resolving it
///   would mean deleting one of two objects that both have an identity and relationships, a
///   change no merge policy should make silently.
/// - An inserted object that collides with two different objects on two constraints: there is
///   no single object to merge it into.
///
/// The resolution runs at the start of ``ManagedObjectContext/save()``, after the will-save
/// handlers, and is a change of the context like any other: if the save then fails (a
/// validation error, say), the survivor keeps the merged values as unsaved changes and
/// ``ManagedObjectContext/rollback()`` discards them. If another context commits a colliding
/// insert while this save runs, the commit's own uniqueness check catches it, and the save
/// resolves the new collision and commits again.
public enum MergePolicy: Sendable, Hashable {
    /// Fail the save: a stale update or delete with a ``ObjectLogError/Code/conflict`` error naming
    /// the objects, a colliding insert with a ``ObjectLogError/Code/uniqueness`` error (default).
    case error
    /// This context wins: write its version of conflicting objects over the store's, and merge a
    /// colliding insert into the existing object (an upsert).
    case overwrite
    /// The store wins: drop this context's changes to conflicting objects and colliding inserts,
    /// keep the store's, and save the rest.
    case rollback
}
