import CommandLineKit
import ObjectLog
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

    /// The error as the tool reports it: a ``CommandError`` as is, a ``StoreError`` by its code,
    /// anything else as an I/O failure.
    static func from(_ error: any Error) -> CommandError {
        switch error {
        case let error as CommandError: error
        case let error as StoreError: CommandError(error)
        case let error as ObjectLogError:
            if let storeError = error.storeError {
                CommandError(storeError)
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
