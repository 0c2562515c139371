/// A context that lives on its own actor, for long-lived background work.
///
/// ```swift
/// let background = container.newBackgroundContext()
/// let id = try await background.perform { context in
///     let frame = Frame(context: context)
///     try context.save()
///     return frame.objectID
/// }
/// ```
///
/// Every ``perform(_:)`` runs on the actor, one at a time, with the same context, so objects
/// fetched in one call are still registered in the next. Return `Sendable` results such as
/// ``ObjectID`` values, never the objects themselves.
public actor BackgroundContext {
    private let context: ManagedObjectContext

    /// Creates a background context on a coordinator.
    public init(coordinator: PersistentStoreCoordinator) {
        let context = ManagedObjectContext(coordinator: coordinator)
        context.name = "background"
        self.context = context
    }

    /// Runs `body` on the actor with the context and returns its result.
    public func perform<T: Sendable>(
        _ body: @Sendable (ManagedObjectContext) throws -> T
    ) async rethrows -> T {
        try body(context)
    }
}

extension PersistentContainer {
    /// Makes a context on its own actor for background work.
    public func newBackgroundContext() -> BackgroundContext {
        BackgroundContext(coordinator: coordinator)
    }
}
