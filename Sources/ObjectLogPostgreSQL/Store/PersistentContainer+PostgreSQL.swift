import Foundation
import ObjectLog
import ObjectLogStore

extension PersistentContainer {
    /// Opens the store that `url` names: a PostgreSQL database for a `postgresql://` (or
    /// `postgres://`) URI, or a store file for a path.
    ///
    /// The same models, contexts, fetches and relationships work on either. A database without
    /// an ObjectLog store gets its tables; one that holds a store written by an earlier model
    /// version that the new one only adds to is migrated with `ALTER TABLE`, in one
    /// transaction. libpq's own parameters pass through (`sslmode`,
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
    ///   - readOnly: Whether the container refuses saves (a hot standby accepts no writes).
    /// - Throws: ``ObjectLogError/Code/store`` when the server cannot be reached (naming the
    ///   host, the database and libpq's reason) or refuses the store's tables;
    ///   ``ObjectLogError/Code/modelMismatch`` for a database written by a newer model version;
    ///   ``ObjectLogError/Code/unsupported`` for one written by a version the new one does more
    ///   than add to (a rename, a removal): nothing is written then.
    public convenience init(
        url: String,
        for types: [ManagedObject.Type],
        readOnly: Bool = false
    ) throws(ObjectLogError) {
        try self.init(url: url, model: ManagedObjectModel(types), readOnly: readOnly)
    }

    /// Opens the store that `url` names for `model` (see ``init(url:for:readOnly:)``).
    public convenience init(
        url: String,
        model: ManagedObjectModel,
        readOnly: Bool = false
    ) throws(ObjectLogError) {
        guard Self.isPostgreSQL(url) else {
            var options = StoreOptions()
            options.readOnly = readOnly
            let path = url.hasPrefix("file://") ? String(url.dropFirst("file://".count)) : url
            try self.init(path: path, model: model, options: options)
            return
        }
        let store: PostgresStore
        do {
            store = try PostgresStore(url: url, schema: model.schema, readOnly: readOnly)
        } catch {
            throw ObjectLogError(.store, error.message, underlyingError: error)
        }
        try self.init(store: store, model: model)
    }

    /// Whether `url` names a PostgreSQL database rather than a store file.
    static func isPostgreSQL(_ url: String) -> Bool {
        let lowered = url.lowercased()
        return lowered.hasPrefix("postgresql://") || lowered.hasPrefix("postgres://")
    }
}
