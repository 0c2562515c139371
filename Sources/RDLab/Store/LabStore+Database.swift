import CommandLineKit
import Foundation
import ObjectLog
import ObjectLogPostgreSQL

/// The lab's store in a PostgreSQL database (`--store postgresql://…`): the same model,
/// settings in its metadata and thumbnails and snapshots as its external data, on a server
/// that several machines share.
///
/// A database has no lock to wait for (each save is a transaction of its own that the server
/// orders), nothing to salvage and nothing to compact. A read needs a store there; a write
/// that may create one (`run`, `settings set`, `demo`) creates the store's tables in an empty
/// database.
extension LabStore {
    /// The container of the store in the database `url`, for `access`.
    ///
    /// - Throws: ``CommandError``: 66 when a read or write finds no store, 74 when the server
    ///   cannot be reached, 65 for a store of another program; the message names the host and
    ///   database, never a password.
    static func openDatabase(
        _ url: String,
        access: Access
    ) throws(CommandError)
        -> PersistentContainer
    {
        let target = StoreLocation.displayName(url)
        let contents: PostgresStore.DatabaseContents
        do {
            contents = try PostgresStore.contents(ofDatabase: url)
        } catch {
            throw databaseError(error, store: target)
        }
        switch contents {
        case .store:
            break
        case .empty where access == .create:
            break
        case .empty:
            throw CommandError(
                "no store in the database at \(target); save a run into it first ('rdlab run … "
                    + "--save NAME --store URI'), or choose another with --store or "
                    + environmentVariable,
                exitCode: .noInput
            )
        case .unrecordedStore:
            throw CommandError(
                "the database at \(target) holds the tables of an ObjectLog store that records no "
                    + "model (one being created, or an interrupted 'objectlog export'); try again, "
                    + "or choose another database with --store",
                exitCode: .dataError
            )
        }
        do {
            let model = try ManagedObjectModel(entities)
            let store = try PostgresStore(
                url: url,
                schema: model.schema,
                readOnly: access == .read,
                externalStorageMinimumByteCount: externalStorageMinimumByteCount
            )
            return try PersistentContainer(store: store, model: model)
        } catch let error as PostgresError {
            throw databaseError(error, store: target)
        } catch let error as ObjectLogError {
            throw commandError(error, path: target, creating: access == .create)
        } catch {
            throw CommandError("store \(target): \(error)", exitCode: .ioError)
        }
    }

    /// The settings of the store in the database `url`, read from its metadata; empty when
    /// there is no readable store there.
    static func databaseSettingsIfReadable(at url: String) -> LabSettings {
        guard let store = try? PostgresStore.openExisting(url: url) else { return LabSettings() }
        defer { try? store.close() }
        return (try? store.readMetadata()).map(LabSettings.init(metadata:)) ?? LabSettings()
    }

    /// Checks, before a run steps, that its result can be saved in the database `url`: the
    /// server answers, and a store there does not already hold `saveName`.
    static func checkDatabaseBeforeRun(_ url: String, saveName: String?) throws(CommandError) {
        let contents: PostgresStore.DatabaseContents
        do {
            contents = try PostgresStore.contents(ofDatabase: url)
        } catch {
            throw databaseError(error, store: StoreLocation.displayName(url))
        }
        guard contents != .empty else { return }
        let store = try LabStore(path: url, access: .read)
        if let saveName, try store.configuration(named: saveName) != nil {
            throw nameTaken(saveName)
        }
        try store.close()
    }

    /// Removes the lab's store from the database `url` (every table of it), as the demo
    /// replaces an earlier demo's store.
    static func removeDatabaseStore(_ url: String) throws(CommandError) {
        let target = StoreLocation.displayName(url)
        do {
            let store = try PostgresStore.openExisting(url: url, readOnly: false)
            defer { try? store.close() }
            try store.removeTables()
        } catch let error as PostgresError {
            throw databaseError(error, store: target)
        } catch {
            throw CommandError("store \(target): \(error)", exitCode: .ioError)
        }
    }

    /// A PostgreSQL failure as one line and an exit status: 64 for a URI libpq cannot read, 74
    /// for a server that cannot be reached or refuses a statement, 65 for a value it cannot
    /// hold.
    static func databaseError(_ error: PostgresError, store target: String) -> CommandError {
        let message = oneLine(error.description)
        switch error.code {
        case .invalidConnectionString:
            return CommandError("the store '\(target)': \(message)", exitCode: .usage)
        case .connectionFailed, .connectionLost:
            return CommandError(message, exitCode: .ioError)
        case .statementFailed:
            return CommandError("the store '\(target)': \(message)", exitCode: .ioError)
        case .invalidParameter:
            return CommandError("the store '\(target)': \(message)", exitCode: .dataError)
        }
    }

    /// The account of an engine error that a database's store caused; nil for any other.
    static func databaseCommandError(_ error: ObjectLogError, store target: String) -> CommandError?
    {
        if let postgresError = error.underlyingError as? PostgresError {
            return databaseError(postgresError, store: target)
        }
        guard error.code == .unsupported else { return nil }
        return CommandError(
            "the store '\(target)' was written with another model (another version of rdlab's, "
                + "or another program's), and a store in a database does not migrate "
                + "(\(oneLine(error.message))); if it is a lab's, copy it into a file with "
                + "'objectlog import', open that with this rdlab, and export it into an empty database",
            exitCode: .dataError
        )
    }
}
