/// A process exit status, with the BSD `sysexits.h` values the tools share.
///
/// Scripts can rely on them: 0 success, 1 a requested item is absent, 64 a usage error, 65
/// damaged or unsuitable data, 66 a missing input file, 73 an output that cannot be created, 74
/// an I/O error, 130 an interruption by Ctrl-C.
///
/// ```swift
/// throw CommandError("cannot create 'out.png'", exitCode: .cannotCreate)
/// ```
///
/// See: man 3 sysexits.
public struct ExitCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The status the process exits with.
    public var rawValue: Int32

    /// Creates an exit code from a process status.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// 0: the command did what was asked.
    public static let success = ExitCode(rawValue: 0)
    /// 1: the answer is "no such value", as `git config --get` gives for an absent key.
    public static let failure = ExitCode(rawValue: 1)
    /// 64 (`EX_USAGE`): the command line is wrong.
    public static let usage = ExitCode(rawValue: 64)
    /// 65 (`EX_DATAERR`): the input is damaged, or is not what the command reads.
    public static let dataError = ExitCode(rawValue: 65)
    /// 66 (`EX_NOINPUT`): an input file does not exist or cannot be read.
    public static let noInput = ExitCode(rawValue: 66)
    /// 73 (`EX_CANTCREAT`): an output file cannot be created.
    public static let cannotCreate = ExitCode(rawValue: 73)
    /// 74 (`EX_IOERR`): reading or writing failed, or a file is locked by another writer.
    public static let ioError = ExitCode(rawValue: 74)
    /// 130 (128 + `SIGINT`): the user interrupted the command with Ctrl-C.
    public static let interrupted = ExitCode(rawValue: 130)

    /// The numeric status.
    public var description: String { String(rawValue) }
}
