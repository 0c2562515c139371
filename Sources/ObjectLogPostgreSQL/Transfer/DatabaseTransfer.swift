import Foundation
import ObjectLog
import ObjectLogStore

/// Copies a store file into a PostgreSQL database (an export) and a database's store into a
/// new store file (an import), with ``StoreTransfer``: what `objectlog export` and `objectlog
/// import` do.
///
/// Each copy is one transaction of the destination, so a failure leaves nothing half written:
/// - An export creates the store's tables (a transaction of their own: the PostgreSQL store
///   creates them when it opens), then commits every object, blob and metadata value in one
///   more. Until that commit the tables record no model, so no program takes them for a
///   store, and they are marked as an export's: if the commit fails, they are dropped again,
///   and if the export is killed before it, the next export into the database drops them.
///   Two exports into one database are kept apart by an advisory lock.
/// - An import writes a new store beside the destination (`DEST-import`, with its blobs and
///   index), commits the copy, and renames it into place, the log last: `DEST` appears whole
///   or not at all. A failed import removes what it wrote.
package enum DatabaseTransfer {
    /// The suffix of the store an import writes before renaming it into place.
    package static let importSuffix = "-import"

    /// Copies `source` (a store file opened read-only) into the empty database `url`.
    ///
    /// - Parameters:
    ///   - source: The store to copy; only read.
    ///   - url: A database that holds no ObjectLog store.
    ///   - progress: Called now and then with the share done, from 0 to 1.
    /// - Returns: What was copied.
    /// - Throws: ``PostgresError`` when the server cannot be reached or refuses a statement;
    ///   ``StoreTransferError`` for a database that holds a store already, or another export
    ///   into it; what ``StoreTransfer/copy(from:to:progress:)`` throws.
    package static func export(
        _ source: any PersistentStore,
        to url: String,
        progress: ((Double) -> Void)? = nil
    ) throws -> StoreTransfer.Report {
        let target = StoreLocation.displayName(url)
        // Held for the whole export: another export into this database waits for nothing and
        // is refused.
        let guardConnection = try PostgresConnection(url: url)
        defer { guardConnection.close() }
        let locked = try guardConnection.execute(
            "SELECT pg_try_advisory_lock(\(PostgresStore.exportLock))"
        ).rows.first?.first
        guard locked == "t" else {
            throw StoreTransferError(
                .busy,
                "another export into the database at \(target) is running"
            )
        }
        try refuseStore(in: guardConnection, target: target)
        let inspector = try StoreInspector(store: source)
        let destination = try PostgresStore(url: url, schema: inspector.schema)
        defer { try? destination.close() }
        // Tables another process created in the meantime are not this export's to drop.
        guard try destination.transactionCount == 0,
            try destination.readMetadata().isEmpty
        else {
            throw StoreTransferError(
                .destinationHoldsStore,
                "the database at \(target) holds an ObjectLog store already; export into an "
                    + "empty database"
            )
        }
        let report: StoreTransfer.Report
        do {
            try destination.markExport(on: guardConnection)
            report = try StoreTransfer.copy(from: source, to: destination, progress: progress)
        } catch {
            try? destination.removeTables()
            throw error
        }
        // The store is whole from its commit on; a mark left by a failure here is harmless
        // (only a store that records no model is taken for an interrupted export).
        try? PostgresStore.clearExportMark(on: guardConnection)
        return report
    }

    /// Refuses a database that holds a store, or the tables of one; drops the tables an
    /// interrupted export left.
    private static func refuseStore(
        in connection: PostgresConnection,
        target: String
    ) throws {
        _ = try PostgresStore.dropInterruptedExport(connection)
        switch try PostgresStore.contents(connection) {
        case .empty:
            return
        case .store:
            throw StoreTransferError(
                .destinationHoldsStore,
                "the database at \(target) holds an ObjectLog store already; export into an "
                    + "empty database"
            )
        case .unrecordedStore:
            throw StoreTransferError(
                .destinationHoldsStore,
                "the database at \(target) holds the tables of an ObjectLog store that records "
                    + "no model (one being created, or whose creation stopped); export into an "
                    + "empty database"
            )
        }
    }

    /// Copies the store that the database `url` holds into a new store file at `path`, as of
    /// one snapshot of the database.
    ///
    /// - Parameters:
    ///   - url: A database that holds an ObjectLog store; only read.
    ///   - path: The new store; nothing may exist there yet, nor at its `-blobs` and `-index`.
    ///   - progress: Called now and then with the share done, from 0 to 1.
    /// - Returns: What was copied.
    /// - Throws: ``StoreTransferError`` for an existing destination or a database without a
    ///   store; ``PostgresError`` when the server cannot be reached; `StoreError` when the
    ///   file cannot be written; what ``StoreTransfer/copy(from:to:progress:)`` throws.
    package static func importStore(
        from url: String,
        to path: String,
        progress: ((Double) -> Void)? = nil
    ) throws -> StoreTransfer.Report {
        let fileSystem = StoreOptions().fileSystem
        let temporary = path + importSuffix
        let suffixes = ["", LogFormat.blobsSuffix, LogFormat.indexSuffix]
        for suffix in suffixes where fileSystem.kind(of: path + suffix) != .missing {
            throw StoreTransferError(
                .destinationExists,
                "\(path + suffix): already exists; choose a new destination"
            )
        }
        for suffix in suffixes + [LogFormat.lockSuffix]
        where fileSystem.kind(of: temporary + suffix) != .missing {
            throw StoreTransferError(
                .destinationExists,
                "\(temporary + suffix): already exists (left by an interrupted import?); remove "
                    + "it, or choose a new destination"
            )
        }
        var options = StoreOptions()
        let source = try PostgresStore.openExisting(
            url: url,
            externalStorageMinimumByteCount: options.externalStorageMinimumByteCount
        )
        defer { try? source.close() }
        options.createIfMissing = true
        var destination: LogStore?
        do {
            let store = try LogStore.open(path: temporary, options: options)
            destination = store
            let report = try source.readingSnapshot {
                try StoreTransfer.copy(from: source, to: store, progress: progress)
            }
            destination = nil
            try store.close()
            // The log last: when `path` appears, its blobs and index are there.
            for suffix in [LogFormat.blobsSuffix, LogFormat.indexSuffix, ""]
            where fileSystem.kind(of: temporary + suffix) != .missing {
                try fileSystem.rename(temporary + suffix, to: path + suffix)
            }
            try fileSystem.remove(temporary + LogFormat.lockSuffix)
            try fileSystem.syncDirectory(directoryOf(path))
            return report
        } catch {
            try? destination?.close()
            removeStoreFiles(at: temporary, fileSystem: fileSystem)
            // A rename that failed half way leaves the moved parts at `path`: they go too.
            if fileSystem.kind(of: path) == .missing {
                removeStoreFiles(at: path, fileSystem: fileSystem)
            }
            throw error
        }
    }

    /// Removes a store file and what lies beside it, as far as it can.
    private static func removeStoreFiles(at path: String, fileSystem: any FileSystem) {
        let blobs = path + LogFormat.blobsSuffix
        for name in (try? fileSystem.contents(ofDirectory: blobs)) ?? [] {
            try? fileSystem.remove(blobs + "/" + name)
        }
        try? fileSystem.removeDirectory(blobs)
        for suffix in [
            "", LogFormat.indexSuffix, LogFormat.lockSuffix, LogFormat.creationSuffix,
            LogFormat.indexSuffix + LogFormat.creationSuffix,
        ] {
            try? fileSystem.remove(path + suffix)
        }
    }
}
