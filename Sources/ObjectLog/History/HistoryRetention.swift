import Foundation
import ObjectLogStore

/// How long a store keeps the history of its transactions once a compaction folds them into
/// the live state.
///
/// Until a compaction, the log holds every transaction, and
/// ``ManagedObjectContext/history(after:entities:author:from:)`` reads them all. A compaction (by hand
/// or automatic) rewrites the log with the live objects only; the history of the transactions
/// it folds is then copied into a file beside the store (`NAME.olog-history`) as far as the
/// retention says, and the rest is gone. The retention is kept in the store, so every process
/// and `objectlog compact` honour it.
///
/// The default is ``untilCompaction``, as Core Data keeps no history unless asked: the history
/// costs nothing until you choose to keep it.
public enum HistoryRetention: Sendable, Hashable {
    /// No history beyond what the log still holds: a compaction folds it all away.
    case untilCompaction
    /// Every transaction's history, until ``PersistentContainer/purgeHistory(before:)``.
    case all
    /// The history of the last `count` transactions.
    case lastTransactions(Int)
    /// The history of the transactions committed within the last `duration` seconds.
    case duration(TimeInterval)

    init(_ retention: LogHistoryRetention) {
        switch retention {
        case .none: self = .untilCompaction
        case .all: self = .all
        case .transactions(let count): self = .lastTransactions(Int(clamping: count))
        case .seconds(let seconds): self = .duration(seconds)
        }
    }

    var logRetention: LogHistoryRetention {
        switch self {
        case .untilCompaction: .none
        case .all: .all
        case .lastTransactions(let count): .transactions(UInt64(max(0, count)))
        case .duration(let seconds): .seconds(max(0, seconds))
        }
    }
}

extension PersistentStoreCoordinator {
    /// How much history the store keeps across compactions (``HistoryRetention``), with a
    /// change not saved yet.
    public var historyRetention: HistoryRetention {
        HistoryRetention(LogHistoryRetention(metadata))
    }

    /// Sets how much history the store keeps across compactions, from the next save on, as
    /// ``setMetadata(_:forKey:)`` stages metadata; ``PersistentContainer/setHistoryRetention(_:)``
    /// commits it at once.
    ///
    /// - Throws: ``ObjectLogError/Code/unsupported`` for a store that keeps no history (the
    ///   in-memory store, a database server); ``ObjectLogError/Code/invalidArgument`` for a
    ///   negative count or duration.
    public func setHistoryRetention(_ retention: HistoryRetention) throws(ObjectLogError) {
        guard store.capabilities.contains(.history) else {
            throw ObjectLogError(
                .unsupported,
                "the store \(store.displayName) keeps no history of its transactions"
            )
        }
        switch retention {
        case .lastTransactions(let count) where count < 0:
            throw ObjectLogError(.invalidArgument, "a history retention cannot be negative")
        case .duration(let seconds) where !(seconds >= 0):
            throw ObjectLogError(.invalidArgument, "a history retention cannot be negative")
        default:
            break
        }
        try stageMetadata(
            retention.logRetention.metadataValue,
            forKey: LogStore.historyRetentionKey
        )
    }
}

extension PersistentContainer {
    /// How much history the store keeps across compactions (``HistoryRetention``).
    public var historyRetention: HistoryRetention { coordinator.historyRetention }

    /// Sets how much history the store keeps across compactions, and commits it at once.
    ///
    /// - Throws: ``ObjectLogError/Code/unsupported`` for a store that keeps no history (the
    ///   in-memory store, a database server); ``ObjectLogError/Code/invalidArgument`` for a
    ///   negative count or duration; what a save throws (a read-only store).
    public func setHistoryRetention(_ retention: HistoryRetention) throws(ObjectLogError) {
        try coordinator.setHistoryRetention(retention)
        try newContext().save()
    }

    /// Drops the history of the transactions up to `token`'s, as Core Data's
    /// `deleteHistory(before:)` does: what ``ManagedObjectContext/history(after:entities:author:from:)``
    /// reads after `token` is kept, and a read after an older token throws
    /// ``ObjectLogError/Code/historyExpired``.
    ///
    /// The history file beside the store shrinks at once; the log's own records go at the
    /// next compaction.
    ///
    /// - Throws: ``ObjectLogError/Code/unsupported`` for a store that keeps no history; what a
    ///   save throws.
    public func purgeHistory(before token: HistoryToken) throws(ObjectLogError) {
        try requireHistory()
        let floor = LogStore.historyFloor(metadata)
        guard token.transaction > floor else { return }
        try coordinator.stageMetadata(
            .integer(Int64(clamping: token.transaction)),
            forKey: LogStore.historyFloorKey
        )
        try newContext().save()
        guard let log = coordinator.store as? LogStore else { return }
        do {
            try log.purgeHistoryFile(through: token.transaction)
        } catch {
            throw ObjectLogError.store(error, "cannot purge the history")
        }
    }

    private func requireHistory() throws(ObjectLogError) {
        guard coordinator.store.capabilities.contains(.history) else {
            throw ObjectLogError(
                .unsupported,
                "the store \(coordinator.store.displayName) keeps no history of its transactions"
            )
        }
    }
}
