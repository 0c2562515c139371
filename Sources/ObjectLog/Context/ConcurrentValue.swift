import Dispatch
import ObjectLogStore

/// A value made on another thread while the caller goes on: for work the caller needs only
/// later, done where a processor would otherwise wait (a batch request's list of the objects it
/// changed is made while the commit writes and syncs its records).
///
/// `@unchecked Sendable`: `made` is written once, by the worker, before `done` is signalled, and
/// read only after waiting for it. The worker holds the value's box until it is done, so the
/// box outlives it.
final class ConcurrentValue<Value>: @unchecked Sendable {
    private var made: Value?
    private let done = DispatchSemaphore(value: 0)
    private var waited = false

    /// Starts making the value with `make` on another thread (`make` must touch nothing the
    /// caller changes meanwhile).
    init(_ make: @escaping () -> Value) {
        let make = UncheckedSendable(make)
        DispatchQueue.global(qos: .userInitiated).async {
            self.made = make.value()
            self.done.signal()
        }
    }

    /// The value, waited for if not yet made.
    ///
    /// Called from one thread only.
    var value: Value {
        if !waited {
            done.wait()
            waited = true
        }
        return made!
    }
}
