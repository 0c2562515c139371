#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's standard output and standard error, and the exit status that accounts for
/// writes to them that failed.
///
/// A command whose output cannot be written (a full disk, a closed pipe) still finishes its work
/// (a store is still saved); ``exitStatus(after:)`` then reports the failure as one line on
/// standard error and turns a success into exit 74.
///
/// ```swift
/// StandardStreams.ignoreBrokenPipeSignal()
/// let streams = StandardStreams(buffering: .chunks)
/// let status = run(arguments, output: streams.output, errorOutput: streams.error)
/// exit(streams.exitStatus(after: status).rawValue)
/// ```
public struct StandardStreams: Sendable {
    /// Standard output: a command's results.
    public let output: TextOutput
    /// Standard error: errors, warnings and notes.
    public let error: TextOutput

    /// Streams on file descriptors 1 and 2, buffered as `buffering` says.
    public init(buffering: TextOutput.Buffering) {
        output = .descriptor(STDOUT_FILENO, buffering: buffering)
        error = .descriptor(STDERR_FILENO, buffering: buffering)
    }

    /// Streams that stand in for standard output and error (in tests, memory or another file).
    public init(output: TextOutput, error: TextOutput) {
        self.output = output
        self.error = error
    }

    /// Ignores SIGPIPE for the whole process, so that writing to a closed pipe fails with EPIPE
    /// (which ``TextOutput`` reports) instead of ending the process mid-way through its work.
    public static func ignoreBrokenPipeSignal() {
        signal(SIGPIPE, SIG_IGN)
    }

    /// Flushes both streams and returns the status to exit with: `status`, or 74 (`EX_IOERR`)
    /// in place of success when a write failed.
    ///
    /// When standard output failed, one line says so on standard error (if that can be written):
    /// `error: cannot write standard output: <reason>`.
    ///
    /// - Parameter status: The command's own exit status.
    /// - Returns: The status the process exits with.
    public func exitStatus(after status: ExitCode) -> ExitCode {
        output.flush()
        if let reason = output.failureDescription {
            error.writeLine("error: cannot write standard output: " + reason)
        }
        error.flush()
        if output.hasFailed || error.hasFailed, status == .success {
            return .ioError
        }
        return status
    }
}
