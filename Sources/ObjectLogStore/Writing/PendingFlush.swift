import Foundation

/// An fdatasync running on another thread, waited for once.
final class PendingFlush: @unchecked Sendable {
    // `@unchecked Sendable`: `failure` is written by the flushing thread before it leaves the
    // group, and read only after `wait` has seen it leave.
    private let group = DispatchGroup()
    private var failure: (any Error)?

    init(_ file: any StoreFile) {
        group.enter()
        // The file is touched by no other thread until `wait` returns: its owner holds the
        // store's lock meanwhile.
        nonisolated(unsafe) let file = file
        DispatchQueue.global().async {
            do {
                try file.sync()
            } catch {
                self.failure = error
            }
            self.group.leave()
        }
    }

    /// Waits for the flush; its error, if it failed.
    func wait() -> (any Error)? {
        group.wait()
        return failure
    }
}
