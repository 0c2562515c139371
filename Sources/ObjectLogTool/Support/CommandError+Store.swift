import CommandLineKit
import ObjectLog
import ObjectLogPostgreSQL
import ObjectLogStore

/// How the tool reports the store's and the engine's errors: one `error: …` line on standard
/// error, with the exit code the error's kind calls for.
extension CommandError {
    /// The tool's account of a store-layer error, with the exit code its kind calls for.
    init(_ error: StoreError) {
        let description = Self.describe(error)
        switch error.code {
        case .notFound:
            self.init(description, exitCode: .noInput)
        case .notAStore, .unsupportedVersion, .corrupt, .missingBlob, .tooLarge:
            self.init(description, exitCode: .dataError)
        case .locked:
            // The lock is taken on a file beside the store; name the store itself.
            var path = error.path ?? ""
            if path.hasSuffix(LogFormat.lockSuffix) { path.removeLast(LogFormat.lockSuffix.count) }
            if !path.isEmpty { path += ": " }
            self.init(
                "\(path)the store is being written by another process (it holds the writer "
                    + "lock); close that process's store and try again",
                exitCode: .ioError
            )
        case .io, .poisoned, .readOnly, .closed, .invalidArgument:
            self.init(description, exitCode: .ioError)
        }
    }

    /// `path: offset N: message`, the parts that are known.
    static func describe(_ error: StoreError) -> String {
        var text = ""
        if let path = error.path { text += path + ": " }
        if let offset = error.offset { text += "offset \(offset): " }
        return text + error.message
    }

    /// The tool's account of a PostgreSQL failure, with the exit code its kind calls for.
    ///
    /// A connection string libpq cannot read is a usage error (64); a server that cannot be
    /// reached, a lost connection or a refused statement an I/O error (74); a value a column
    /// cannot hold bad data (65). The message names the host and database, never a password.
    init(_ error: PostgresError) {
        switch error.code {
        case .invalidConnectionString:
            self.init(error.message, exitCode: .usage)
        case .connectionFailed, .connectionLost, .statementFailed:
            self.init(error.description, exitCode: .ioError)
        case .invalidParameter:
            self.init(error.message, exitCode: .dataError)
        }
    }

    /// The tool's account of a refused copy, with the exit code its kind calls for.
    ///
    /// An existing destination, or a database that holds a store, cannot be created (73); a
    /// database without a store is missing input (66); another export into the database is a
    /// lock (74); a record that cannot be copied is bad data (65).
    init(_ error: StoreTransferError) {
        let exitCode: ExitCode =
            switch error.code {
            case .destinationExists, .destinationHoldsStore: .cannotCreate
            case .noStore: .noInput
            case .busy: .ioError
            case .unreadableRecord: .dataError
            }
        self.init(error.message, exitCode: exitCode)
    }

    /// The error as the tool reports it: a ``CommandError`` as is, a `StoreError` by its code,
    /// anything else as an I/O failure.
    static func from(_ error: any Error) -> CommandError {
        switch error {
        case let error as CommandError: error
        case let error as StoreError: CommandError(error)
        case let error as PostgresError: CommandError(error)
        case let error as StoreTransferError: CommandError(error)
        case let error as ObjectLogError:
            if let storeError = error.storeError {
                CommandError(storeError)
            } else if let postgresError = error.underlyingError as? PostgresError {
                CommandError(error.message, exitCode: CommandError(postgresError).exitCode)
            } else if let transferError = error.underlyingError as? StoreTransferError {
                CommandError(transferError)
            } else {
                CommandError(
                    error.message,
                    exitCode: error.code == .corrupt ? .dataError : .ioError
                )
            }
        default: CommandError(String(describing: error), exitCode: .ioError)
        }
    }
}
