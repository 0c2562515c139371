/// Why a command stopped: a one-line message, printed as `error: <message>`, and an exit status.
///
/// ```swift
/// throw CommandError.usage("missing argument <path>", command: "objectlog info")
/// // error: missing argument <path>; see 'objectlog info --help'   (exit 64)
/// ```
public struct CommandError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong and, where possible, how to put it right, in one line.
    public var message: String
    /// The status the process exits with.
    public var exitCode: ExitCode

    /// Creates an error.
    public init(_ message: String, exitCode: ExitCode) {
        self.message = message
        self.exitCode = exitCode
    }

    /// A command-line mistake, exit status 64.
    public static func usage(_ message: String) -> CommandError {
        CommandError(message, exitCode: .usage)
    }

    /// A command-line mistake, exit status 64, that points at the help of `command` (the
    /// command as typed, such as `rdlab run`): `<message>; see '<command> --help'`.
    public static func usage(_ message: String, command: String) -> CommandError {
        CommandError("\(message); see '\(command) --help'", exitCode: .usage)
    }

    /// `error: <message>`.
    public var description: String { "error: \(message)" }
}
