import Foundation

/// A value that is read and changed only under a lock.
///
/// The lock is a POSIX mutex (`NSLock`) rather than `Synchronization.Mutex`: on Linux the
/// latter waits on a futex inside the prebuilt standard library, where ThreadSanitizer cannot
/// see it, so a sanitized run reported every two saves of different threads as a race on the
/// coordinator's state. With a mutex it intercepts, the sanitizer checks the state for real.
final class LockedValue<Value: ~Copyable>: @unchecked Sendable {
    // `@unchecked Sendable`: `value` is only reached through `withLock`, under `lock`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: consuming Value) {
        self.value = value
    }

    /// Runs `body` with the value, holding the lock.
    func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
