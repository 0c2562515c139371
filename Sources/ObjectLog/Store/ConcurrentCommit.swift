import Foundation
import ObjectLogStore

/// A commit running on another thread, waited for once: what lets the coordinator work on
/// the same save meanwhile without the store calling back into it.
final class ConcurrentCommit: @unchecked Sendable {
    // `@unchecked Sendable`: `result` is written by the committing thread before it leaves the
    // group, and read only after `wait` has seen it leave.
    private let group = DispatchGroup()
    private var result: Result<CommitInfo, any Error>?

    /// Starts committing `transaction` to `store` (without its automatic compaction).
    init(store: LogStore, transaction: Transaction) {
        group.enter()
        DispatchQueue.global().async {
            self.result = Result { try store.commitWithoutCompacting(transaction) }
            self.group.leave()
        }
    }

    /// Waits for the commit; what it returned, or its error.
    func wait() throws -> CommitInfo {
        group.wait()
        // Safe: the committing thread set it before leaving the group.
        return try result!.get()
    }
}
