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
    ///
    /// The error type is the closure's: a closure that does not throw needs no `try`, one that
    /// throws `ObjectLogError` only (declared `throws(ObjectLogError)`) makes `perform` throw
    /// `ObjectLogError`, and an untyped one makes it throw `any Error`. Every shape works,
    /// returning a value or `Void`:
    ///
    /// ```swift
    /// await background.perform { context in context.name = "import" }
    /// let count = try await background.perform { context in
    ///     try context.count(FetchRequest<Frame>())
    /// }
    /// try await background.perform { (context) throws(ObjectLogError) in
    ///     try context.save()
    /// }
    /// ```
    ///
    /// (A generic error type rather than `rethrows`: with Swift 6.3.1, a `Void` closure
    /// declared `throws(SomeError)` passed to a `rethrows` parameter crashes the compiler.)
    public func perform<T: Sendable, Failure: Error>(
        _ body: @Sendable (ManagedObjectContext) throws(Failure) -> T
    ) async throws(Failure) -> T {
        try body(context)
    }
}

extension PersistentContainer {
    /// Makes a context on its own actor for background work.
    public func newBackgroundContext() -> BackgroundContext {
        BackgroundContext(coordinator: coordinator)
    }
}
