import Foundation

// SwiftData's names for the concepts that ObjectLog has in the same form, so that code
// written against SwiftData reads (and often compiles) unchanged. Only identical concepts get
// a second name; the article "Porting from Core Data and SwiftData" lists the others and the
// differences.

/// SwiftData's name for ``PersistentContainer``: a model, its store and a main context.
///
/// ```swift
/// let container = try ModelContainer(path: path, for: [Recipe.self])
/// let context = ModelContext(container: container)
/// ```
///
/// Unlike SwiftData's, the container is created from a store path (or
/// ``PersistentContainer/inMemory(for:)``), not from model configurations.
public typealias ModelContainer = PersistentContainer

/// SwiftData's name for ``ManagedObjectContext``: inserts, deletes, fetches and saves.
///
/// It does not save by itself (SwiftData's `autosaveEnabled`): call
/// ``ManagedObjectContext/save()``.
public typealias ModelContext = ManagedObjectContext

/// SwiftData's name for ``FetchRequest``: a predicate, a sort order and a window.
///
/// ```swift
/// var descriptor = FetchDescriptor<Recipe>(predicate: #Predicate { $0.servings > 2 })
/// descriptor.sortBy = [SortDescriptor(\.title)]
/// descriptor.fetchLimit = 10
/// let recipes = try context.fetch(descriptor)
/// ```
public typealias FetchDescriptor<Result: ManagedObject> = FetchRequest<Result>

extension FetchRequest {
    /// SwiftData's name for ``sortDescriptors``.
    public var sortBy: [SortDescriptor<Result>] {
        get { sortDescriptors }
        set { sortDescriptors = newValue }
    }

    /// SwiftData's name for ``includesPendingChanges``.
    public var includePendingChanges: Bool {
        get { includesPendingChanges }
        set { includesPendingChanges = newValue }
    }
}

extension ManagedObjectContext {
    /// SwiftData's name for ``count(_:)``: the number of objects a request selects, without
    /// registering them.
    ///
    /// ```swift
    /// let total = try context.fetchCount(FetchDescriptor<Recipe>())
    /// ```
    /// - Parameter descriptor: What to count.
    /// - Returns: The number of objects the request selects, within its window.
    /// - Throws: What ``count(_:)`` throws.
    public func fetchCount<T: ManagedObject>(
        _ descriptor: FetchRequest<T>
    ) throws(ObjectLogError) -> Int {
        try count(descriptor)
    }
}
