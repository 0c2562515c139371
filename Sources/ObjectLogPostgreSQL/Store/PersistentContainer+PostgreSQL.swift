import Foundation
import ObjectLog
import ObjectLogStore

extension PersistentContainer {
    /// Opens the store that `url` names: a PostgreSQL database for a `postgresql://` (or
    /// `postgres://`) URI, or a store file for a path.
    ///
    /// The same models, contexts, fetches and relationships work on either. A database without
    /// an ObjectLog store gets its tables; one that holds a store written by an earlier model
    /// version is migrated as a store file would be (renames, removals, converted values, new
    /// entities and properties), with `ALTER TABLE` and the rows whose values change written
    /// anew, all in one SQL transaction: a failure leaves the database at its old version.
    /// libpq's own parameters pass through (`sslmode`,
    /// `sslrootcert`, a password file or `PGPASSWORD`): prefer those to a password in the URI,
    /// which no error or tool shows anyway.
    ///
    /// ```swift
    /// import ObjectLogPostgreSQL
    ///
    /// let container = try PersistentContainer(
    ///     url: "postgresql://lab@db.example.com/lab?sslmode=verify-full",
    ///     for: [Configuration.self, Snapshot.self]
    /// )
    /// ```
    /// - Parameters:
    ///   - url: A `postgresql://USER@HOST/DATABASE` URI (the socket form
    ///     `postgresql://USER@/DATABASE?host=/socket/directory` too), or a store file's path.
    ///   - types: The classes of the model's entities.
    ///   - removing: Entities and properties of earlier model versions that this one drops
    ///     with their stored data (``ObjectLog/ManagedObjectModel/declaredRemovals``).
    ///   - readOnly: Whether the container refuses saves (a hot standby accepts no writes).
    ///   - migratesStoreAutomatically: Whether a database written by another version of the
    ///     model is migrated; when `false` it is refused.
    /// - Throws: ``ObjectLogError/Code/store`` when the server cannot be reached (naming the
    ///   host, the database and libpq's reason) or refuses the store's tables;
    ///   ``ObjectLogError/Code/modelMismatch`` for a database written by a newer model version,
    ///   or changes a migration refuses (as for a store file);
    ///   ``ObjectLogError/Code/uniqueness`` when objects violate a uniqueness constraint the
    ///   model adds; ``ObjectLogError/Code/unsupported`` for a read-only open of a database at
    ///   an earlier version (its tables hold that version's rows). Nothing is written then.
    public convenience init(
        url: String,
        for types: [ManagedObject.Type],
        removing: [String] = [],
        readOnly: Bool = false,
        migratesStoreAutomatically: Bool = true
    ) throws(ObjectLogError) {
        try self.init(
            url: url,
            model: ManagedObjectModel(types, removing: removing),
            readOnly: readOnly,
            migratesStoreAutomatically: migratesStoreAutomatically
        )
    }

    /// Opens the store that `url` names for `model` (see
    /// ``init(url:for:removing:readOnly:migratesStoreAutomatically:)``).
    public convenience init(
        url: String,
        model: ManagedObjectModel,
        readOnly: Bool = false,
        migratesStoreAutomatically: Bool = true
    ) throws(ObjectLogError) {
        guard Self.isPostgreSQL(url) else {
            var options = StoreOptions()
            options.readOnly = readOnly
            try self.init(
                path: Self.path(of: url),
                model: model,
                options: options,
                migratesStoreAutomatically: migratesStoreAutomatically
            )
            return
        }
        let store: PostgresStore
        do {
            store = try PostgresStore(url: url, schema: model.schema, readOnly: readOnly)
        } catch {
            throw ObjectLogError(.store, error.message, underlyingError: error)
        }
        try self.init(
            store: store,
            model: model,
            migratesStoreAutomatically: migratesStoreAutomatically
        )
    }

    /// The path a location that is not a database names (`file://` taken off).
    static func path(of location: String) -> String {
        location.hasPrefix("file://") ? String(location.dropFirst("file://".count)) : location
    }

    /// Whether `url` names a PostgreSQL database rather than a store file.
    static func isPostgreSQL(_ url: String) -> Bool {
        let lowered = url.lowercased()
        return lowered.hasPrefix("postgresql://") || lowered.hasPrefix("postgres://")
    }
}
