import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Standard output or error, written with `write(2)`, remembering the first failure instead of
/// trapping (as `FileHandle.write` does) or dying of SIGPIPE.
///
/// A command whose output cannot be written (a full disk, a closed pipe) still finishes its work
/// and saves; ``RDLab/main(arguments:)`` then reports the failure as one line and exit 74.
final class StandardStream: Sendable {
    private let descriptor: Int32
    /// The `errno` of the first failed write, or 0.
    private let failure = Atomic<Int32>(0)

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Writes `text`, unless an earlier write failed.
    func write(_ text: String) {
        guard failure.load(ordering: .relaxed) == 0 else { return }
        var bytes = Array(text.utf8)
        bytes.withUnsafeMutableBytes { buffer in
            var done = 0
            while done < buffer.count {
                let result = systemWrite(
                    descriptor,
                    buffer.baseAddress! + done,
                    buffer.count - done
                )
                if result < 0 {
                    // See: man 2 write. EINTR is retried; anything else ends the output.
                    if errno == EINTR { continue }
                    failure.store(errno, ordering: .relaxed)
                    return
                }
                done += result
            }
        }
    }

    /// Why writing failed (`strerror`), or nil if every write succeeded.
    var failureDescription: String? {
        let code = failure.load(ordering: .relaxed)
        return code == 0 ? nil : String(cString: strerror(code))
    }

    /// The process's standard output.
    static let output = StandardStream(descriptor: STDOUT_FILENO)
    /// The process's standard error.
    static let error = StandardStream(descriptor: STDERR_FILENO)
}

/// `write(2)`, named apart from ``StandardStream/write(_:)``.
private func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, bytes, count)
}
