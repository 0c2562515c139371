import Foundation

/// A value that is read and changed only under a lock.
///
/// The lock is a POSIX mutex (`NSLock`) rather than `Synchronization.Mutex`, for two reasons.
/// On Linux the latter waits on a futex inside the prebuilt standard library, where
/// ThreadSanitizer cannot see it: a sanitized run reported every two saves of different
/// threads as a race on the coordinator's state. And reflecting an object that holds a `Mutex`
/// (`dump`, or a test's failure report) stops the process: the runtime cannot copy the
/// noncopyable field out for the mirror. This lock's value is hidden from reflection instead.
package final class LockedValue<Value: ~Copyable>: @unchecked Sendable {
    // `@unchecked Sendable`: `value` is only reached through `withLock`, under `lock`.
    private let lock = NSLock()
    private var value: Value

    package init(_ value: consuming Value) {
        self.value = value
    }

    /// Runs `body` with the value, holding the lock.
    package func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

extension LockedValue: CustomReflectable where Value: ~Copyable {
    /// No children: reflection (`dump`, test failure reports) would read the value without the
    /// lock, and the standard library cannot copy a noncopyable value out for it.
    package var customMirror: Mirror { Mirror(self, children: []) }
}
