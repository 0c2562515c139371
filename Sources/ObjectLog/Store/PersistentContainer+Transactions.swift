import Dispatch
import Foundation
import ObjectLogStore
import Synchronization

extension PersistentContainer {
    /// The transactions committed after `token`, as they are committed: by this process's
    /// contexts, and by the process that writes the store when this container opened it
    /// read-only.
    ///
    /// ```swift
    /// let reader = try PersistentContainer(path: path, model: model, options: readOnly)
    /// for try await transaction in reader.transactions() {
    ///     for change in transaction.changes { print(change.kind, change.objectID) }
    /// }
    /// ```
    ///
    /// Each transaction comes once, in order, with each changed object's values before and
    /// after (see ``ManagedObjectContext/history(after:entities:author:from:)``). A container
    /// opened read-only with `StoreOptions.followsWriter` on a store file that another process
    /// writes follows it (without it, a read-only open keeps the state it opened): a thread watches the
    /// file (inotify, with polling every tenth of a second where the kernel has no watches to
    /// spare), reads each commit into the store's state, and tells the container's
    /// coordinator, whose main context merges the changes as it merges a save of this process.
    ///
    /// - Parameter token: Where to go on from; nil for the transactions committed from now on.
    /// - Returns: The transactions as an asynchronous sequence. It ends by throwing
    ///   ``ObjectLogError/Code/historyExpired`` when a compaction folded transactions it had
    ///   not handed out yet into the live state (fetch afresh, then go on from
    ///   ``ManagedObjectContext/currentHistoryToken``), ``ObjectLogError/Code/unsupported``
    ///   for a store that keeps no history, or the error of a failed read.
    public func transactions(
        after token: HistoryToken? = nil
    ) -> AsyncThrowingStream<HistoryTransaction, any Error> {
        let (stream, continuation) = AsyncThrowingStream<HistoryTransaction, any Error>
            .makeStream()
        let coordinator = self.coordinator
        let start: UInt64
        if let token {
            start = token.transaction
        } else {
            do {
                start = try readingStore { try coordinator.store.transactionCount }
            } catch {
                continuation.finish(throwing: error)
                return stream
            }
        }
        let reader = TransactionReader(
            coordinator: coordinator,
            after: start,
            continuation: continuation
        )
        let observer = coordinator.addSaveObserver { changes in
            reader.notice(changes.transactionNumber)
        }
        continuation.onTermination = { _ in
            coordinator.removeObserver(observer)
            reader.cancel()
        }
        // Transactions committed after the token, before the observer was added.
        reader.notice(nil)
        return stream
    }
}

/// Reads the history after the last transaction handed out, on a queue of its own, whenever
/// a commit is announced: never on the thread of the save that announced it.
final class TransactionReader: Sendable {
    private struct State {
        var last: UInt64
        var reading = false
        var again = false
        var cancelled = false
    }

    private let coordinator: PersistentStoreCoordinator
    private let continuation: AsyncThrowingStream<HistoryTransaction, any Error>.Continuation
    private let state: Mutex<State>
    private let queue = DispatchQueue(label: "ObjectLog transactions")

    init(
        coordinator: PersistentStoreCoordinator,
        after last: UInt64,
        continuation: AsyncThrowingStream<HistoryTransaction, any Error>.Continuation
    ) {
        self.coordinator = coordinator
        self.continuation = continuation
        state = Mutex(State(last: last))
    }

    /// A commit numbered `number` (unknown when nil) happened: reads it unless it was read.
    func notice(_ number: UInt64?) {
        let start = state.withLock { state in
            if state.cancelled { return false }
            if let number, number <= state.last { return false }
            if state.reading {
                state.again = true
                return false
            }
            state.reading = true
            return true
        }
        if start { queue.async { self.read() } }
    }

    func cancel() { state.withLock { $0.cancelled = true } }

    private func read() {
        while true {
            let last = state.withLock { $0.last }
            let model = coordinator.model
            do {
                let transactions = try HistoryReading.transactions(
                    of: coordinator.store,
                    after: HistoryToken(transaction: last),
                    tags: nil,
                    from: nil,
                    entity: HistoryReading.entities(of: model, store: coordinator.store)
                )
                for transaction in transactions { continuation.yield(transaction) }
                if let newest = transactions.last?.token.transaction {
                    state.withLock { $0.last = max($0.last, newest) }
                }
            } catch {
                state.withLock { $0.cancelled = true }
                continuation.finish(throwing: error)
                return
            }
            let goesOn = state.withLock { state in
                if state.again && !state.cancelled {
                    state.again = false
                    return true
                }
                state.reading = false
                return false
            }
            if !goesOn { return }
        }
    }
}
