import Foundation
import ObjectLogStore
import Synchronization

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
/// Use ``inMemory(for:)`` for objects kept in memory only (tests, previews). Background work
/// runs in ``performBackgroundTask(_:)``; its saves are merged into ``mainContext``
/// automatically when ``automaticallyMergesChangesIntoMainContext`` is `true`.
///
/// ## Two containers of one store
///
/// Containers of one process opened for writing on the same store file (by any spelling of
/// its path) share one ``PersistentStoreCoordinator``: the second open neither opens the file
/// again nor meets the first one's writer lock, their contexts see each other's saves (and
/// main contexts merge them), and the store closes when the last of them is closed with
/// ``close()``. The first container's ``StoreOptions`` apply to all of them. Opening the
/// store with another model while a container of it is open throws
/// ``ObjectLogError/Code/modelMismatch``: close the first one before. Read-only and
/// in-memory containers are never shared.
///
/// ```swift
/// let editor = try PersistentContainer(path: path, for: [Experiment.self, Frame.self])
/// let exporter = try PersistentContainer(path: path, for: [Experiment.self, Frame.self])
/// try editor.close()     // the store stays open for `exporter`
/// try exporter.close()   // the last one: the store closes
/// ```
public final class PersistentContainer: Sendable {
    /// The coordinator all the container's contexts share (with the other containers of the
    /// same store file in this process).
    public let coordinator: PersistentStoreCoordinator
    /// Whether saves of other contexts are merged into ``mainContext`` (on the main actor).
    public let automaticallyMergesChangesIntoMainContext: Bool
    @MainActor private var main: ManagedObjectContext?
    /// This container's share of a coordinator shared by path; nil when not shared.
    private let share: StoreShare?
    /// The save observer that merges into ``mainContext``, removed when the container goes:
    /// a shared coordinator outlives it.
    private let mergeObserver = Mutex<ObserverToken?>(nil)

    /// Opens (or creates) the store at `path` for a model.
    ///
    /// A store written by another version of the model is migrated (see
    /// <doc:MigratingYourModel>), except for a change that would drop stored data the model
    /// does not declare removed (``ManagedObjectModel/declaredRemovals``): an entity that has
    /// objects, or a property. Ask first with ``migrationPreview(at:model:migratesStoreAutomatically:options:)``.
    /// - Parameters:
    ///   - path: The store file.
    ///   - model: The model.
    ///   - options: Store options; `StoreOptions.inMemory` for the log's files in memory.
    ///   - automaticallyMergesChangesIntoMainContext: Whether other contexts' saves reach the
    ///     main context by themselves.
    ///   - migratesStoreAutomatically: Whether a store written by another version of the model
    ///     is migrated; when `false` it is refused, for apps that migrate only through a
    ///     ``MigrationPlan`` (Core Data's `shouldMigrateStoreAutomatically`).
    /// - Throws: ``ObjectLogError`` with code `modelMismatch` (a store written by a newer
    ///   version of the model, or changes refused: one error in ``ObjectLogError/errors`` per
    ///   change when there are several), `uniqueness` (objects that violate a uniqueness
    ///   constraint the model adds) or `store`. Nothing is written when an open is refused.
    public convenience init(
        path: String,
        model: ManagedObjectModel,
        options: StoreOptions = StoreOptions(),
        automaticallyMergesChangesIntoMainContext: Bool = true,
        migratesStoreAutomatically: Bool = true
    ) throws(ObjectLogError) {
        try self.init(
            path: path,
            model: model,
            options: options,
            automaticallyMergesChangesIntoMainContext: automaticallyMergesChangesIntoMainContext,
            authority: migratesStoreAutomatically ? .automatic : .manual
        )
    }

    /// Opens (or creates) the store, migrating it as far as `authority` allows.
    init(
        path: String,
        model: ManagedObjectModel,
        options: StoreOptions,
        automaticallyMergesChangesIntoMainContext: Bool = true,
        authority: MigrationAuthority
    ) throws(ObjectLogError) {
        func open() throws(ObjectLogError) -> PersistentStoreCoordinator {
            try PersistentStoreCoordinator(
                model: model,
                path: path,
                options: options,
                authority: authority
            )
        }
        if options.readOnly || options.salvage || !(options.fileSystem is PosixFileSystem) {
            self.share = nil
            self.coordinator = try open()
        } else {
            let share = try StoreShare.acquire(path: path, model: model, open: open)
            self.share = share
            self.coordinator = share.coordinator
        }
        self.automaticallyMergesChangesIntoMainContext = automaticallyMergesChangesIntoMainContext
    }

    /// A container of a store of any kind, opened by the caller (a store on a database server,
    /// say), for `model`; the container owns the store from then on.
    package convenience init(
        store: any PersistentStore,
        model: ManagedObjectModel,
        automaticallyMergesChangesIntoMainContext: Bool = true,
        migratesStoreAutomatically: Bool = true
    ) throws(ObjectLogError) {
        try self.init(
            coordinator: PersistentStoreCoordinator(
                model: model,
                store: store,
                migratesStoreAutomatically: migratesStoreAutomatically
            ),
            automaticallyMergesChangesIntoMainContext: automaticallyMergesChangesIntoMainContext
        )
    }

    /// Opens the store with a coordinator made by `make` (the migration stages' own opens).
    init(
        coordinator: PersistentStoreCoordinator,
        automaticallyMergesChangesIntoMainContext: Bool = false
    ) {
        self.coordinator = coordinator
        self.automaticallyMergesChangesIntoMainContext = automaticallyMergesChangesIntoMainContext
        self.share = nil
    }

    deinit {
        if let token = mergeObserver.withLock({ $0 }) { coordinator.removeObserver(token) }
    }

    /// Opens (or creates) the store at `path` for the model of the given classes.
    ///
    /// Every class whose objects the store keeps belongs in `types`: a store written by
    /// another version of the model is migrated to these classes, and an entity or property
    /// they no longer have is dropped only when `removing` names it. Without that, the open
    /// is refused with one line per removal and the number of objects it would touch, and
    /// nothing is written.
    ///
    /// ```swift
    /// // Version 2 of the app retires `Scrap` and `Note.obsolete`, and says so.
    /// let container = try PersistentContainer(
    ///     path: path,
    ///     for: [Note.self, Folder.self],
    ///     removing: ["Scrap", "Note.obsolete"]
    /// )
    /// ```
    /// - Parameters:
    ///   - path: The store file.
    ///   - types: The entity classes.
    ///   - removing: Entities (`"Scrap"`) and properties (`"Note.obsolete"`) of earlier model
    ///     versions whose stored data the open may drop (``ManagedObjectModel/declaredRemovals``).
    ///   - options: Store options.
    ///   - migratesStoreAutomatically: Whether a store written by another version of the model
    ///     is migrated; when `false` it is refused (migrate it through a ``MigrationPlan``).
    /// - Throws: ``ObjectLogError`` with code `invalidModel`, `modelMismatch` (a store written
    ///   by a newer version of the model, or changes refused), `uniqueness` (objects that
    ///   violate a uniqueness constraint the model adds) or `store`.
    public convenience init(
        path: String,
        for types: [ManagedObject.Type],
        removing: [String] = [],
        options: StoreOptions = StoreOptions(),
        migratesStoreAutomatically: Bool = true
    ) throws(ObjectLogError) {
        try self.init(
            path: path,
            model: try ManagedObjectModel(types, removing: removing),
            options: options,
            migratesStoreAutomatically: migratesStoreAutomatically
        )
    }

    /// What opening the store at `path` with the model of the given classes would do.
    ///
    /// The preview lists each change a migration would make and the stored objects it
    /// touches, or why the open would be refused. Nothing is written (the store is opened
    /// read-only, if it exists).
    /// - Throws: ``ObjectLogError`` with code `invalidModel` or `store` (a store that cannot be
    ///   read).
    public static func migrationPreview(
        at path: String,
        for types: [ManagedObject.Type],
        removing: [String] = [],
        migratesStoreAutomatically: Bool = true,
        options: StoreOptions = StoreOptions()
    ) throws(ObjectLogError) -> MigrationPreview {
        try migrationPreview(
            at: path,
            model: try ManagedObjectModel(types, removing: removing),
            migratesStoreAutomatically: migratesStoreAutomatically,
            options: options
        )
    }

    /// What opening the store at `path` with `model` would do (see
    /// ``migrationPreview(at:for:removing:migratesStoreAutomatically:options:)``).
    /// - Throws: ``ObjectLogError`` with code `store` for a store that cannot be read.
    public static func migrationPreview(
        at path: String,
        model: ManagedObjectModel,
        migratesStoreAutomatically: Bool = true,
        options: StoreOptions = StoreOptions()
    ) throws(ObjectLogError) -> MigrationPreview {
        try PersistentStoreCoordinator.migrationPreview(
            at: path,
            model: model,
            authority: migratesStoreAutomatically ? .automatic : .manual,
            options: options
        )
    }

    /// What opening the store at `path` with a model described by `schema` would do, for
    /// tools that have a model's description but not its classes (`objectlog schema
    /// --check-model`).
    ///
    /// Without the classes, new uniqueness constraints are listed but not checked against
    /// the stored objects: an open with the classes checks them.
    /// - Parameters:
    ///   - path: The store file.
    ///   - schema: The model's description (``ManagedObjectModel/schema``, or a version a
    ///     store records); its entity tags need not be the store's.
    ///   - removing: The removals the model declares (``ManagedObjectModel/declaredRemovals``).
    ///   - migratesStoreAutomatically: As for an open.
    ///   - options: Store options.
    /// - Returns: What the open would do.
    /// - Throws: ``ObjectLogError`` with code `invalidModel` for a removal of something the
    ///   schema has, `store` for a store that cannot be read.
    public static func migrationPreview(
        at path: String,
        schema: ModelSchema,
        removing: [String] = [],
        migratesStoreAutomatically: Bool = true,
        options: StoreOptions = StoreOptions()
    ) throws(ObjectLogError) -> MigrationPreview {
        try ManagedObjectModel.check(removals: Set(removing), in: schema)
        return try PersistentStoreCoordinator.migrationPreview(
            at: path,
            schema: schema,
            removals: Set(removing),
            authority: migratesStoreAutomatically ? .automatic : .manual,
            options: options
        )
    }

    /// A container of objects kept in memory only, as Core Data's in-memory store type and
    /// SwiftData's `isStoredInMemoryOnly` keep them: for previews, tests and scratch data.
    ///
    /// Nothing is written anywhere, and the objects go when the container is closed or
    /// released. Such a store has no log: ``compact(progress:)`` and
    /// ``backup(to:progress:)`` throw ``ObjectLogError/Code/unsupported``. (To try the log
    /// store's own features without files, open a path with `StoreOptions.inMemory`.)
    ///
    /// ```swift
    /// let preview = try PersistentContainer.inMemory(for: [Configuration.self])
    /// ```
    /// - Parameter types: The classes of the model's entities.
    /// - Returns: The container, with an empty store.
    /// - Throws: ``ObjectLogError/Code/invalidModel`` for a model that cannot be stored.
    public static func inMemory(
        for types: [ManagedObject.Type]
    ) throws(ObjectLogError)
        -> PersistentContainer
    {
        try inMemory(model: ManagedObjectModel(types))
    }

    /// A container of `model`'s objects kept in memory only (see ``inMemory(for:)``).
    public static func inMemory(
        model: ManagedObjectModel
    ) throws(ObjectLogError)
        -> PersistentContainer
    {
        try PersistentContainer(store: MemoryStore(), model: model)
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
            let token = coordinator.addSaveObserver { [weak self] changes in
                guard changes.origin != origin else { return }
                Task { @MainActor in
                    self?.main?.mergeChanges(from: changes)
                }
            }
            mergeObserver.withLock { $0 = token }
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

    /// Closes the store, writing its index checkpoint, unless other containers of this
    /// process share it (see "Two containers of one store" above): then it closes with the
    /// last of them.
    ///
    /// Contexts of a closed store must not be used afterwards. Closing twice does nothing the
    /// second time.
    public func close() throws(ObjectLogError) {
        if let token = mergeObserver.withLock({ $0.take() }) { coordinator.removeObserver(token) }
        if let share {
            if let error = share.release(closing: true) {
                throw ObjectLogError.store(error, "cannot close the store")
            }
            return
        }
        coordinator.checkpointDeclaredIndexes()
        do {
            try coordinator.store.close()
        } catch {
            throw ObjectLogError.store(error, "cannot close the store")
        }
    }
}
