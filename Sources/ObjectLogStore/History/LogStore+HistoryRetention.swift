import Foundation

extension LogStore {
    /// Before a compaction folds the log's transactions into the live state, writes the
    /// history file with the changes the store's retention keeps: those it kept already and
    /// those of the log, copied out; returns the blobs their values refer to, which the
    /// compaction must not remove.
    ///
    /// Called with the lock held. The history file is replaced before the log is: a crash in
    /// between leaves a history file that also holds transactions still in the log, which
    /// readers take from the log (see ``readHistory(after:limit:from:includingFile:)``).
    func keepHistoryForCompaction() throws -> Set<BlobID> {
        let metadata = state.currentMetadata
        let header = state.header
        let retention = LogHistoryRetention(metadata)
        let base = header.baseTransactionCount
        let latest = state.lastNumber
        let existing = try HistoryFile.read(
            storePath: path,
            storeUUID: header.storeUUID,
            fileSystem: fileSystem
        )
        // What the file has is history only when it reaches the log's first transaction.
        let kept = existing.flatMap { $0.earliest <= base && $0.through >= base ? $0 : nil }
        guard retention != .none else {
            if existing != nil {
                try HistoryFile(storeUUID: header.storeUUID, earliest: latest, entries: [])
                    .write(storePath: path, fileSystem: fileSystem)
            }
            return []
        }
        let log = try readHistory(
            after: base,
            limit: .max,
            from: HistorySource(
                file: file,
                header: header,
                end: state.endOffset,
                metadata: metadata,
                merge: installedPatchMerge,
                upgrade: activeUpgrade
            ),
            includingFile: false
        )
        let times =
            (kept?.entries ?? []).filter { $0.number <= base }.map {
                (number: $0.number, microseconds: $0.timestampMicroseconds)
            }
            + log.transactions.map { ($0.number, $0.timestampMicroseconds) }
        let drops = max(
            retention.dropsThrough(latest: latest, now: Date(), transactions: times),
            Self.historyFloor(metadata)
        )
        // The engine's record of the model version the log's values are read in.
        var modelHash = ""
        if case .string(let hash)? = metadata["ObjectLog.modelHash"] { modelHash = hash }
        var entries = (kept?.entries ?? []).filter { $0.number > drops && $0.number <= base }
        // The values are read from the log in one read, not one read each: the compaction reads
        // the whole log anyway, and a history of a bulk insert has a value per object.
        let keeps = log.transactions.contains { $0.number > drops }
        let preloaded = keeps ? try file.read(at: 0, count: Int(state.endOffset)) : nil
        for transaction in log.transactions where transaction.number > drops {
            var changes: [HistoryFile.Change] = []
            changes.reserveCapacity(transaction.changes.count)
            for change in transaction.changes {
                func copy(_ value: LogHistoryValue?) throws -> HistoryFile.Value? {
                    guard let value else { return nil }
                    var copied = HistoryFile.Value(bytes: [], blobs: [])
                    try withHistoryValue(
                        of: change.key,
                        value,
                        in: log,
                        preloaded: preloaded
                    ) { bytes, blobs in
                        copied = HistoryFile.Value(bytes: Array(bytes), blobs: blobs)
                    }
                    return copied
                }
                changes.append(
                    HistoryFile.Change(
                        key: change.key,
                        entity: change.entity,
                        kind: change.kind,
                        before: try copy(change.before),
                        after: try copy(change.after)
                    )
                )
            }
            entries.append(
                HistoryFile.Entry(
                    number: transaction.number,
                    timestampMicroseconds: transaction.timestampMicroseconds,
                    modelHash: modelHash,
                    note: transaction.note,
                    changes: changes
                )
            )
        }
        let history = HistoryFile(
            storeUUID: header.storeUUID,
            earliest: entries.first.map { $0.number - 1 } ?? latest,
            entries: entries
        )
        try history.write(storePath: path, fileSystem: fileSystem)
        return history.referencedBlobs
    }

    /// Drops the history file's transactions up to `number`, which the store's metadata now
    /// names as purged (``historyFloorKey``); a file left with none is removed.
    ///
    /// - Throws: `StoreError` `.readOnly`, `.io`.
    public func purgeHistoryFile(through number: UInt64) throws {
        lock.lock()
        defer { lock.unlock() }
        try checkWritable()
        guard
            var history = try HistoryFile.read(
                storePath: path,
                storeUUID: state.header.storeUUID,
                fileSystem: fileSystem
            ), history.earliest < number
        else { return }
        history.entries.removeAll { $0.number <= number }
        history.earliest = max(history.earliest, number)
        try history.write(storePath: path, fileSystem: fileSystem)
    }
}
