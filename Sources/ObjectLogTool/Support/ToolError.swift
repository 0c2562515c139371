import ObjectLog
import ObjectLogStore

/// A failure the tool reports as one `error: …` line on standard error, with its exit code.
struct ToolError: Error, Sendable {
    /// The status to exit with.
    var exitCode: ExitCode
    /// The sentence after `error: `, on one line.
    var message: String

    init(_ exitCode: ExitCode, _ message: String) {
        self.exitCode = exitCode
        self.message = message
    }

    /// A usage error (exit 64) that points at the command's help.
    static func usage(_ message: String, command: String) -> ToolError {
        ToolError(.usage, "\(message); see '\(command) --help'")
    }

    /// The tool's account of a store-layer error, with the exit code its kind calls for.
    init(_ error: StoreError) {
        let description = Self.describe(error)
        switch error.code {
        case .notFound:
            self.init(.noInput, description)
        case .notAStore, .unsupportedVersion, .corrupt, .missingBlob, .tooLarge:
            self.init(.dataError, description)
        case .locked:
            // The lock is taken on a file beside the store; name the store itself.
            var path = error.path ?? ""
            if path.hasSuffix(LogFormat.lockSuffix) { path.removeLast(LogFormat.lockSuffix.count) }
            if !path.isEmpty { path += ": " }
            self.init(
                .ioError,
                "\(path)the store is being written by another process (it holds the writer "
                    + "lock); close that process's store and try again"
            )
        case .io, .poisoned, .readOnly, .closed, .invalidArgument:
            self.init(.ioError, description)
        }
    }

    /// `path: offset N: message`, the parts that are known.
    static func describe(_ error: StoreError) -> String {
        var text = ""
        if let path = error.path { text += path + ": " }
        if let offset = error.offset { text += "offset \(offset): " }
        return text + error.message
    }

    /// The error as the tool reports it: a ``ToolError`` as is, a ``StoreError`` by its code,
    /// anything else as an I/O failure.
    static func from(_ error: any Error) -> ToolError {
        switch error {
        case let error as ToolError: error
        case let error as StoreError: ToolError(error)
        case let error as ObjectLogError:
            if let storeError = error.storeError {
                ToolError(storeError)
            } else {
                ToolError(error.code == .corrupt ? .dataError : .ioError, error.message)
            }
        default: ToolError(.ioError, String(describing: error))
        }
    }
}
