import Foundation
import ObjectLogStore

/// The usual way to set up ObjectLog: a model, a store file and a main context.
///
/// ```swift
/// let container = try PersistentContainer(
///     path: "/tmp/Lab.objectlog",
///     for: [Configuration.self, Snapshot.self]
/// )
/// let context = container.mainContext
/// ```
///
/// Pass `StoreOptions.inMemory` for a store without files (tests, previews). Background work
/// runs in ``performBackgroundTask(_:)``; its saves are merged into ``mainContext``
/// automatically when ``automaticallyMergesChangesIntoMainContext`` is `true`.
public final class PersistentContainer: Sendable {
    /// The coordinator all the container's contexts share.
    public let coordinator: PersistentStoreCoordinator
    /// Whether saves of other contexts are merged into ``mainContext`` (on the main actor).
    public let automaticallyMergesChangesIntoMainContext: Bool
    @MainActor private var main: ManagedObjectContext?

    /// Opens (or creates) the store at `path` for a model.
    /// - Parameters:
    ///   - path: The store file.
    ///   - model: The model.
    ///   - options: Store options; `StoreOptions.inMemory` for no files.
    ///   - automaticallyMergesChangesIntoMainContext: Whether other contexts' saves reach the
    ///     main context by themselves.
    /// - Throws: ``ObjectLogError`` with code `modelMismatch` (listing the differences) or
    ///   `store`.
    public init(
        path: String,
        model: ManagedObjectModel,
        options: StoreOptions = StoreOptions(),
        automaticallyMergesChangesIntoMainContext: Bool = true
    ) throws(ObjectLogError) {
        self.coordinator = try PersistentStoreCoordinator(
            model: model,
            path: path,
            options: options
        )
        self.automaticallyMergesChangesIntoMainContext = automaticallyMergesChangesIntoMainContext
    }

    /// Opens the store with a coordinator made by `make` (the migration stages' own opens).
    init(coordinator: PersistentStoreCoordinator) {
        self.coordinator = coordinator
        self.automaticallyMergesChangesIntoMainContext = false
    }

    /// Opens (or creates) the store at `path` for the model of the given classes.
    /// - Throws: ``ObjectLogError`` with code `invalidModel`, `modelMismatch` or `store`.
    public convenience init(
        path: String,
        for types: [ManagedObject.Type],
        options: StoreOptions = StoreOptions()
    ) throws(ObjectLogError) {
        try self.init(path: path, model: try ManagedObjectModel(types), options: options)
    }

    /// Creates an in-memory container for the given classes (tests and previews).
    public static func inMemory(
        for types: [ManagedObject.Type]
    ) throws(ObjectLogError)
        -> PersistentContainer
    {
        try PersistentContainer(path: ":memory:", for: types, options: .inMemory)
    }

    /// The model.
    public var model: ManagedObjectModel { coordinator.model }

    /// The context for the main actor (user interface work), created on first use.
    @MainActor
    public var mainContext: ManagedObjectContext {
        if let main { return main }
        let context = ManagedObjectContext(coordinator: coordinator)
        context.name = "main"
        main = context
        if automaticallyMergesChangesIntoMainContext {
            let origin = context.identifier
            coordinator.addSaveObserver { [weak self] changes in
                guard changes.origin != origin else { return }
                Task { @MainActor in
                    self?.main?.mergeChanges(from: changes)
                }
            }
        }
        return context
    }

    /// Makes a new context for use in the current isolation domain only.
    public func newContext() -> ManagedObjectContext {
        ManagedObjectContext(coordinator: coordinator)
    }

    /// Runs `body` with a fresh context off the main actor and returns its result.
    ///
    /// ```swift
    /// try await container.performBackgroundTask { context in
    ///     let snapshot = Snapshot(context: context)
    ///     snapshot.step = 100
    ///     try context.save()
    /// }
    /// ```
    ///
    /// The call throws what the closure throws: nothing for a closure that does not throw,
    /// `ObjectLogError` for one declared `throws(ObjectLogError)`, `any Error` otherwise. (A
    /// generic error type rather than `rethrows`: with Swift 6.3.1, a `Void` closure declared
    /// `throws(SomeError)` passed to a `rethrows` parameter crashes the compiler.)
    @concurrent
    public func performBackgroundTask<T: Sendable, Failure: Error>(
        _ body: @Sendable (ManagedObjectContext) throws(Failure) -> T
    ) async throws(Failure) -> T {
        let context = ManagedObjectContext(coordinator: coordinator)
        context.name = "background"
        return try body(context)
    }

    /// The store's metadata, with unsaved metadata changes applied.
    public var metadata: Metadata { coordinator.metadata }

    /// Sets a metadata value (durable with the next save); `nil` removes the key.
    /// - Throws: ``ObjectLogError/Code/invalidArgument`` for reserved keys.
    public func setMetadata(_ value: MetadataValue?, forKey key: String) throws(ObjectLogError) {
        try coordinator.setMetadata(value, forKey: key)
    }

    /// Reads a store's metadata from its file without opening it for objects.
    public static func metadataForStore(at path: String) throws(ObjectLogError) -> Metadata {
        try PersistentStoreCoordinator.metadataForStore(at: path)
    }

    /// The saves of all contexts, as an asynchronous sequence of object IDs.
    public func saves() -> AsyncStream<ObjectChanges> {
        let (stream, continuation) = AsyncStream<ObjectChanges>.makeStream()
        let token = coordinator.addSaveObserver { changes in continuation.yield(changes) }
        let coordinator = self.coordinator
        continuation.onTermination = { _ in coordinator.removeObserver(token) }
        return stream
    }

    /// Closes the store, writing its index checkpoint.
    ///
    /// Contexts must not be used afterwards.
    public func close() throws(ObjectLogError) {
        do {
            try coordinator.store.close()
        } catch {
            throw ObjectLogError.store(error, "cannot close the store")
        }
    }
}
