/// A process exit status, with the BSD `sysexits.h` values the tools use.
///
/// See: man 3 sysexits.
public struct ExitCode: RawRepresentable, Hashable, Sendable {
    /// The numeric status.
    public var rawValue: Int32

    /// Creates an exit status.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// 0: the command did what was asked.
    public static let success = ExitCode(rawValue: 0)
    /// 1: the answer is "no such value", as for `rdlab settings get` of an unset setting (the
    /// status `objectlog meta get` gives a missing key).
    public static let failure = ExitCode(rawValue: 1)
    /// 64 (`EX_USAGE`): the command line was wrong.
    public static let usage = ExitCode(rawValue: 64)
    /// 65 (`EX_DATAERR`): input data was damaged or unsuitable.
    public static let dataError = ExitCode(rawValue: 65)
    /// 66 (`EX_NOINPUT`): an input file does not exist or cannot be read.
    public static let noInput = ExitCode(rawValue: 66)
    /// 73 (`EX_CANTCREAT`): an output file cannot be created.
    public static let cannotCreate = ExitCode(rawValue: 73)
    /// 74 (`EX_IOERR`): reading or writing failed.
    public static let ioError = ExitCode(rawValue: 74)
    /// 130 (128 + `SIGINT`): the user interrupted the command with Ctrl-C.
    public static let interrupted = ExitCode(rawValue: 130)
}
