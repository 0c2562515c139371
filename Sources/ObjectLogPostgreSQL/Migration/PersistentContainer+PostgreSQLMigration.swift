import Foundation
import ObjectLog
import ObjectLogStore

extension PersistentContainer {
    /// Opens the store that `url` names with the last version of `plan`, first running the
    /// plan's stages from the version the store is at: a database's as a store file's.
    ///
    /// For a store file this is ``ObjectLog/PersistentContainer/init(path:plan:options:migratesStoreAutomatically:progress:)``.
    /// A database whose version needs no stage, or one lightweight stage, migrates as
    /// ``init(url:model:readOnly:migratesStoreAutomatically:)`` migrates it, in one SQL
    /// transaction. Otherwise the stages run as they do on a file, on a copy of the database
    /// in a store file under `temporaryDirectory`, every kind of stage (lightweight, custom
    /// and rewriting); the migrated objects, model versions and metadata then replace the
    /// database's in one SQL transaction, which is refused when another process has saved
    /// since the copy was taken. A stage that fails, a check that refuses it, or such a save
    /// leaves the database as it was.
    ///
    /// ```swift
    /// let container = try PersistentContainer(
    ///     url: "postgresql://lab@db.example.com/lab",
    ///     plan: MigrationPlan(versions: [v1, v2], stages: [servings])
    /// )
    /// ```
    /// - Parameters:
    ///   - url: A `postgresql://` URI, or a store file's path.
    ///   - plan: The model's versions and the stages between them.
    ///   - readOnly: Whether the container refuses saves; a read-only open refuses a store
    ///     that needs stages.
    ///   - migratesStoreAutomatically: Whether a store at no version of the plan is migrated
    ///     as a plain open would migrate it.
    ///   - temporaryDirectory: Where the stages' copy of a database is written (its objects
    ///     and external data); it is removed when they end.
    ///   - progress: Called before each stage and once at the end, when there are stages to
    ///     run.
    /// - Throws: What ``ObjectLog/PersistentContainer/init(path:plan:options:migratesStoreAutomatically:progress:)``
    ///   throws, and ``ObjectLogError/Code/store`` when the server cannot be reached, refuses
    ///   a statement, or the database changed while the stages ran.
    public convenience init(
        url: String,
        plan: MigrationPlan,
        readOnly: Bool = false,
        migratesStoreAutomatically: Bool = true,
        temporaryDirectory: URL = FileManager.default.temporaryDirectory,
        progress: ((MigrationProgress) -> Void)? = nil
    ) throws(ObjectLogError) {
        guard Self.isPostgreSQL(url) else {
            var options = StoreOptions()
            options.readOnly = readOnly
            try self.init(
                path: Self.path(of: url),
                plan: plan,
                options: options,
                migratesStoreAutomatically: migratesStoreAutomatically,
                progress: progress
            )
            return
        }
        guard let last = plan.versions.last else {
            throw ObjectLogError(.invalidArgument, "the migration plan has no model versions")
        }
        try plan.check()
        let model = try ManagedObjectModel(last.entities)
        let store: PostgresStore
        do {
            store = try PostgresStore(url: url, schema: model.schema, readOnly: readOnly)
        } catch {
            throw ObjectLogError(.store, error.message, underlyingError: error)
        }
        let stages: [MigrationStage]?
        do throws(ObjectLogError) {
            stages = try plan.pendingStages(of: store, name: store.displayName)
            if let stages, stages.contains(where: \.isCustom) || stages.count > 1 {
                guard !readOnly else {
                    throw ObjectLogError(
                        .invalidArgument,
                        "the store '\(store.displayName)' needs migration stages, which a "
                            + "read-only open cannot run"
                    )
                }
                do {
                    try store.runStages(of: plan, in: temporaryDirectory, progress: progress)
                } catch {
                    throw ObjectLogError.migrating(error, store.displayName)
                }
            }
        } catch {
            try? store.close()
            throw error
        }
        try self.init(
            store: store,
            model: model,
            planned: stages != nil,
            migratesStoreAutomatically: migratesStoreAutomatically
        )
    }

    /// What opening the store that `url` names with the model of the given classes would do:
    /// for a database, what ``init(url:for:removing:readOnly:migratesStoreAutomatically:)``
    /// would migrate or refuse, found on a read-only connection that writes nothing; for a
    /// store file, ``ObjectLog/PersistentContainer/migrationPreview(at:for:removing:migratesStoreAutomatically:options:)``.
    ///
    /// ```swift
    /// let preview = try PersistentContainer.migrationPreview(url: url, for: [Recipe.self])
    /// for change in preview.changes { print(change) }
    /// ```
    /// - Throws: ``ObjectLogError`` with code `invalidModel`, or `store` for a server that
    ///   cannot be reached or a store that cannot be read.
    public static func migrationPreview(
        url: String,
        for types: [ManagedObject.Type],
        removing: [String] = [],
        migratesStoreAutomatically: Bool = true
    ) throws(ObjectLogError) -> MigrationPreview {
        let model = try ManagedObjectModel(types, removing: removing)
        guard isPostgreSQL(url) else {
            return try migrationPreview(
                at: path(of: url),
                model: model,
                migratesStoreAutomatically: migratesStoreAutomatically
            )
        }
        do {
            guard try PostgresStore.contents(ofDatabase: url) == .store else {
                return MigrationPreview(
                    outcome: .createsStore,
                    storeVersion: nil,
                    modelVersion: model.versionHash
                )
            }
            let store = try PostgresStore(url: url, schema: model.schema, readOnly: true)
            defer { try? store.close() }
            return try PersistentStoreCoordinator.migrationPreview(
                of: store,
                named: store.displayName,
                model: model,
                migratesStoreAutomatically: migratesStoreAutomatically
            )
        } catch let error as ObjectLogError {
            throw error
        } catch {
            throw ObjectLogError(.store, "\(error)", underlyingError: error)
        }
    }
}

extension ObjectLogError {
    /// What running a plan's stages on a database threw, as the engine reports it: an
    /// ``ObjectLogError`` as it is, another error as ``Code/store``.
    static func migrating(_ error: any Error, _ name: String) -> ObjectLogError {
        if let error = error as? ObjectLogError { return error }
        if let error = error as? PostgresError {
            return ObjectLogError(.store, error.message, underlyingError: error)
        }
        return ObjectLogError(
            .store,
            "cannot migrate '\(name)': \(error); nothing was written",
            underlyingError: error
        )
    }
}
