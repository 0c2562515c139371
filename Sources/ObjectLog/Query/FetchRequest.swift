import Foundation

/// What to fetch: an entity class, a predicate, a sort order and a window.
///
/// ```swift
/// var request = FetchRequest<Configuration>(
///     predicate: #Predicate { $0.feed > 0.05 },
///     sortBy: [SortDescriptor(\.name)]
/// )
/// request.fetchLimit = 10
/// let configurations = try context.fetch(request)
/// ```
///
/// Predicates are Foundation's `#Predicate` over the entity's properties; sort descriptors are
/// Foundation's `SortDescriptor` on key paths. Unsaved changes of the context are included by
/// default, as in Core Data.
public struct FetchRequest<Result: ManagedObject> {
    /// Which objects to return; `nil` for all.
    public var predicate: Predicate<Result>?
    /// The order of the results; ties and unsorted results are in key order (``ObjectID/key``),
    /// saved and unsaved objects alike.
    ///
    /// Keys are handed out in blocks per context, so the key order of objects that several
    /// contexts inserted is not the order of their inserts. Sort by an attribute of your own
    /// (a creation date, a position) for an order that means something.
    public var sortDescriptors: [SortDescriptor<Result>]
    /// The most objects to return; `nil` for no limit.
    public var fetchLimit: Int?
    /// How many leading results to skip.
    public var fetchOffset: Int
    /// Whether unsaved inserts, changes and deletes of the context count.
    ///
    /// When `false`, the saved state alone decides which objects match and in what order:
    /// saved values of the objects and of the objects they relate to, in predicates and sorts
    /// alike. The objects returned are still this context's, with their unsaved values.
    public var includesPendingChanges: Bool
    /// A text search that objects must also match, ignoring case or diacritics as it says
    /// (see ``TextMatch``); `nil` for none.
    ///
    /// ```swift
    /// request.textMatch = .contains(\.name, "spot")
    /// ```
    public var textMatch: TextMatch<Result>?
    /// Whether objects without a predicate or sort come back as faults (the default).
    ///
    /// Set it to `false` when you will read every result: the objects are then decoded in one
    /// sequential pass over the log instead of one read per object on first access.
    public var returnsObjectsAsFaults: Bool
    /// Whether objects of the entity's subentities are included (the default), as in Core
    /// Data; with `false`, only objects whose entity is `Result`'s own.
    ///
    /// With several entities, the results are merged in the request's order (unsorted ones in
    /// key order).
    public var includesSubentities: Bool
    /// How many objects load together as the results are walked; 0 (the default) for no
    /// batches.
    ///
    /// With a batch size, a fetch finds its objects without keeping their values and returns
    /// them as faults; reading one loads the whole batch it belongs to (that many objects of
    /// the results, in their order) in one pass over their records. A loop over a large result
    /// then loads it a batch at a time, where faults of one entity otherwise load all at once
    /// after a few hundred single loads. Loaded objects stay loaded until you turn them back
    /// into faults with ``ManagedObjectContext/refresh(_:mergeChanges:)``.
    ///
    /// Every object of the results is made at once, as a fault, so a batch size bounds the
    /// values loaded, not the objects. To walk a large result in little memory, use
    /// ``ManagedObjectContext/fetch(_:batchSize:)``, which makes the objects a batch at a time
    /// and lets the last batch go.
    public var fetchBatchSize = 0

    /// Creates a request.
    /// - Parameters:
    ///   - predicate: Which objects to return; `nil` for all.
    ///   - sortBy: The order of the results.
    ///   - fetchLimit: The most objects to return.
    ///   - fetchOffset: How many leading results to skip.
    ///   - textMatch: A text search the objects must also match.
    public init(
        predicate: Predicate<Result>? = nil,
        sortBy: [SortDescriptor<Result>] = [],
        fetchLimit: Int? = nil,
        fetchOffset: Int = 0,
        textMatch: TextMatch<Result>? = nil
    ) {
        self.textMatch = textMatch
        self.predicate = predicate
        self.sortDescriptors = sortBy
        self.fetchLimit = fetchLimit
        self.fetchOffset = fetchOffset
        self.includesPendingChanges = true
        self.returnsObjectsAsFaults = true
        self.includesSubentities = true
    }
}

extension FetchRequest {
    /// The same request with the context's pending changes included: what runs in a context
    /// that has none, for a request that leaves them out.
    var includingPendingChanges: FetchRequest {
        var request = self
        request.includesPendingChanges = true
        return request
    }
}
