import Foundation
import ObjectLogStore

/// A commit running on another thread, waited for once: what lets the coordinator work on
/// the same save meanwhile without the store calling back into it.
final class ConcurrentCommit: @unchecked Sendable {
    // `@unchecked Sendable`: `result` is written by the committing thread before it leaves the
    // group, and read only after `wait` has seen it leave.
    private let group = DispatchGroup()
    private var result: Result<StoreCommit, any Error>?

    /// Starts committing `transaction` to `store` (without its automatic compaction).
    ///
    /// On a thread of its own rather than a dispatch queue's: the commit itself waits for a
    /// flush it hands to a dispatch queue, and a queue's worker that waits for another work
    /// item could wait for a worker that the pool does not start.
    init(store: any PersistentStore, transaction: Transaction, locks: [StoreLockCheck]) {
        group.enter()
        let thread = Thread {
            self.result = Result { try store.commitSave(transaction, checking: locks) }
            self.group.leave()
        }
        thread.start()
    }

    /// Waits for the commit; what it returned, or its error.
    func wait() throws -> StoreCommit {
        group.wait()
        // Safe: the committing thread set it before leaving the group.
        return try result!.get()
    }
}
