// What work spread over threads by `concurrentPerform` shares: the store's parallel paths and
// the engine's use the same two.

/// A value handed to worker threads that only read it while its owner waits for them.
package struct UncheckedSendable<Value>: @unchecked Sendable {
    package let value: Value
    package init(_ value: Value) { self.value = value }
}

/// One value per part of work spread over threads by `concurrentPerform`.
///
/// `@unchecked Sendable`: each part writes only its own slot of a buffer allocated up front (no
/// array storage is shared between threads), and the slots are read after `concurrentPerform`
/// has returned, which orders those writes before the reads.
package final class PartSlots<Value>: @unchecked Sendable {
    private let slots: UnsafeMutableBufferPointer<Value>

    package init(count: Int, initial: Value) {
        slots = .allocate(capacity: count)
        slots.initialize(repeating: initial)
    }

    deinit {
        _ = slots.deinitialize()
        slots.deallocate()
    }

    package subscript(part: Int) -> Value {
        get { slots[part] }
        set { slots[part] = newValue }
    }

    /// The slots, in part order.
    package var values: UnsafeMutableBufferPointer<Value> { slots }
}

extension PartSlots {
    /// The error of the first part (in part order) that failed.
    package func firstError<Failure>() -> Failure? where Value == Failure? {
        slots.lazy.compactMap { $0 }.first
    }
}
