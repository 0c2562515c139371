/// The tool's exit statuses, from `sysexits.h`.
///
/// Scripts can rely on them: 0 success, 1 a requested item is absent (a metadata key), 64 a
/// usage error, 65 damaged data, a file that is not a store, or a store that cannot be read
/// without a model it does not record, 66 a missing input file, 73 an output that cannot be
/// created, 74 an I/O error or a store locked by another writer.
public struct ExitCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The status the process exits with.
    public var rawValue: Int32

    /// Creates an exit code from a process status.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// Everything went as asked.
    public static let success = ExitCode(rawValue: 0)
    /// A requested item does not exist (like `git config --get` for an absent key).
    public static let failure = ExitCode(rawValue: 1)
    /// The command line is wrong (`EX_USAGE`).
    public static let usage = ExitCode(rawValue: 64)
    /// The input is damaged, is not a store, or cannot be read without a model it does not
    /// record (`EX_DATAERR`).
    public static let dataError = ExitCode(rawValue: 65)
    /// The input file does not exist (`EX_NOINPUT`).
    public static let noInput = ExitCode(rawValue: 66)
    /// An output file cannot be created (`EX_CANTCREAT`).
    public static let cannotCreate = ExitCode(rawValue: 73)
    /// An input/output error, or the store is locked by another writer (`EX_IOERR`).
    public static let ioError = ExitCode(rawValue: 74)

    /// The numeric status.
    public var description: String { String(rawValue) }
}
