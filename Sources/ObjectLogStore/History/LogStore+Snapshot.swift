import Foundation

/// Every live object of a store as of a past transaction: where each one's value was then.
package struct LogSnapshot {
    /// The transaction the snapshot is as of.
    package var number: UInt64
    /// Each live object then: its entity and its value.
    package var objects: [ObjectKey: (entity: EntityTag, value: LogHistoryValue)]
    /// What the values are read through (``LogStore/withHistoryValue(of:_:in:_:)``).
    package var history: LogHistory

    /// Why a snapshot cannot be taken, with the message to show.
    package enum Refusal: Error {
        /// The transaction is not committed yet.
        case notCommitted(String)
        /// Its history is gone (compacted away or purged).
        case historyGone(String)
        /// It is before a migration of the model, whose older values cannot be read as now.
        case beforeMigration(String)
    }
}

extension LogStore {
    /// Every live object as of transaction `number`: the log read up to it, or, for a
    /// transaction a compaction folded, the compaction's state with the kept history's
    /// changes after `number` taken back.
    ///
    /// - Throws: ``LogSnapshot/Refusal`` when the state cannot be read; `StoreError`
    ///   `.closed`, `.io`, `.corrupt`.
    package func snapshot(asOf number: UInt64) throws -> LogSnapshot {
        let (source, latest) = try historySource()
        guard number <= latest else {
            throw LogSnapshot.Refusal.notCommitted(
                "transaction \(number) is not committed yet (the last is \(latest))"
            )
        }
        let base = source.header.baseTransactionCount
        // The log as of `number`, or as of its base when `number` is before it.
        let scan = HistoryScan(after: .max, limit: 0)
        scan.appliesThrough = max(number, base)
        try scanLog(source, into: scan)
        var objects: [ObjectKey: (entity: EntityTag, value: LogHistoryValue)] = [:]
        objects.reserveCapacity(scan.current.count)
        for (key, location) in scan.current { objects[key] = (location.entity, .record(location)) }
        let kept = try keptHistory(of: source)
        let history = LogHistory(
            [],
            earliest: max(kept?.earliest ?? base, Self.historyFloor(source.metadata)),
            latest: latest,
            source: source
        )
        if number < base {
            // The kept history's changes after `number`, taken back, newest first.
            let earliest = history.earliest
            guard number >= earliest, let kept else {
                throw LogSnapshot.Refusal.historyGone(
                    "the history of transaction \(number) is gone: the store keeps it from "
                        + "transaction \(earliest + 1)"
                )
            }
            var modelHash = ""
            if case .string(let hash)? = source.metadata["ObjectLog.modelHash"] { modelHash = hash }
            for entry in kept.entries.reversed()
            where entry.number > number && entry.number <= base {
                // Kept values are in the layout of the model version they were kept under;
                // a snapshot mixes them with the log's, so they must be in the same one.
                guard entry.modelHash.isEmpty || entry.modelHash == modelHash else {
                    throw LogSnapshot.Refusal.beforeMigration(
                        "transaction \(number) is before a migration of the model: the state "
                            + "then cannot be read in the model the store has now"
                    )
                }
                for change in entry.changes.reversed() {
                    if let before = change.before {
                        objects[change.key] = (change.entity, .stored(before))
                    } else {
                        objects[change.key] = nil
                    }
                }
            }
        } else if number < history.earliest {
            throw LogSnapshot.Refusal.historyGone(
                "the history of transaction \(number) is gone: the store keeps it from "
                    + "transaction \(history.earliest + 1)"
            )
        }
        return LogSnapshot(number: number, objects: objects, history: history)
    }
}
