import Foundation

/// One object's change in a committed transaction, as the log holds it: where its value was
/// before the transaction and where it is after.
package struct LogHistoryChange: Sendable {
    /// What the transaction did to the object.
    package enum Kind: UInt8, Sendable {
        case insert
        case update
        case delete
    }

    package var key: ObjectKey
    package var entity: EntityTag
    package var kind: Kind
    /// The object's value before the transaction; nil for an insert.
    package var before: LogHistoryValue?
    /// Its value after it; nil for a delete.
    package var after: LogHistoryValue?
}

/// Where a history's value is: a record of the log, or a copy the history file keeps.
package enum LogHistoryValue: Sendable {
    case record(RecordLocation)
    case stored(HistoryFile.Value)
}

/// A committed transaction of the log, with its objects' changes.
package struct LogHistoryTransaction: Sendable {
    package var number: UInt64
    /// When it committed, in microseconds since 1970.
    package var timestampMicroseconds: Int64
    /// Its changes, in the order of its records (one per object).
    package var changes: [LogHistoryChange]
    /// The model version whose layout the values are in, for a transaction of the history
    /// file; nil for one of the log, whose values are read in the current layout.
    package var modelHash: String?
    /// Who saved it, and the name of the context that did, if the transaction names them.
    package var note: TransactionNote?
}

/// The committed transactions of one file generation, read from the log itself: a put or
/// patch is a value after, and the key's record before it is the value before.
package struct LogHistory {
    /// The transactions numbered above ``earliest`` that the request asked for, in order.
    package var transactions: [LogHistoryTransaction]
    /// The number of the last transaction whose changes are gone: those that compactions
    /// folded into the live state beyond what the history file keeps, or that were purged.
    package var earliest: UInt64
    /// The number of the last committed transaction.
    package var latest: UInt64
    /// The file generation the locations are in (for ``LogStore/withHistoryValue(of:_:in:_:)``).
    package var generation: UInt64
    fileprivate var file: any StoreFile
    fileprivate var layout: RecordLayout
    fileprivate var merge: PatchMerge?
    fileprivate var upgrade: ActiveUpgrade?

    /// `transactions` of the log `source` names, its values read through `source`.
    init(
        _ transactions: [LogHistoryTransaction],
        earliest: UInt64,
        latest: UInt64,
        source: LogStore.HistorySource
    ) {
        self.transactions = transactions
        self.earliest = earliest
        self.latest = latest
        generation = source.header.generation
        file = source.file
        layout = source.header.layout
        merge = source.merge
        upgrade = source.upgrade
    }
}

extension LogStore {
    /// The committed transactions numbered above `number`, up to `limit` of them, each object's
    /// change with its records before and after.
    ///
    /// The log is read from its start, so that the record of every key before the first
    /// transaction asked for is known; the values are read with
    /// ``withHistoryValue(of:_:in:_:)``. Transactions up to the file's base transaction count
    /// were folded into the live state by a compaction: asking for them is not an error here,
    /// and the caller compares `number` with ``LogHistory/earliest``.
    ///
    /// - Throws: `StoreError` `.closed`, `.io`, `.corrupt` for damage within the committed log.
    package func history(after number: UInt64, limit: Int = .max) throws -> LogHistory {
        try readHistory(after: number, limit: limit, from: historySource().source)
    }

    /// The log as it is now, and its last committed transaction, taken under the lock.
    ///
    /// - Throws: `StoreError` `.closed`.
    func historySource() throws -> (source: HistorySource, latest: UInt64) {
        // Not `locked`: its closure would have to return the file, which is not `Sendable`.
        lock.lock()
        let isClosed = state.isClosed
        let source = HistorySource(
            file: file,
            header: state.header,
            end: state.endOffset,
            metadata: state.currentMetadata,
            merge: installedPatchMerge,
            upgrade: activeUpgrade
        )
        let latest = state.lastNumber
        lock.unlock()
        if isClosed { throw StoreError(.closed, "the store is closed", path: path) }
        return (source, latest)
    }

    /// What a history is read from: the log file as of one moment, and the store's state then.
    struct HistorySource {
        var file: any StoreFile
        var header: StoreHeader
        var end: UInt64
        var metadata: Metadata
        var merge: PatchMerge?
        var upgrade: ActiveUpgrade?
    }

    /// ``history(after:limit:)`` of `source`, with the store's lock held or not: it reads only
    /// what `source` names, and the history file.
    func readHistory(
        after number: UInt64,
        limit: Int,
        from source: HistorySource,
        includingFile: Bool = true
    ) throws -> LogHistory {
        let header = source.header
        let base = header.baseTransactionCount
        var transactions: [LogHistoryTransaction] = []
        var earliest = base
        // Transactions up to the base are in the history file, if it still has them all.
        if includingFile, let kept = try keptHistory(of: source) {
            earliest = kept.earliest
            for entry in kept.entries where entry.number > number && entry.number <= base {
                guard transactions.count < limit else { break }
                transactions.append(
                    LogHistoryTransaction(
                        number: entry.number,
                        timestampMicroseconds: entry.timestampMicroseconds,
                        changes: entry.changes.map { change in
                            LogHistoryChange(
                                key: change.key,
                                entity: change.entity,
                                kind: change.kind,
                                before: change.before.map(LogHistoryValue.stored),
                                after: change.after.map(LogHistoryValue.stored)
                            )
                        },
                        modelHash: entry.modelHash,
                        note: entry.note
                    )
                )
            }
        }
        let scan = HistoryScan(after: number, limit: limit - transactions.count)
        try scanLog(source, into: scan)
        return LogHistory(
            transactions + scan.transactions,
            earliest: max(earliest, Self.historyFloor(source.metadata)),
            latest: scan.latest ?? base,
            source: source
        )
    }

    /// The history file, when it holds every transaction up to the log's first one (its
    /// transactions are then the history before the log's).
    func keptHistory(of source: HistorySource) throws -> HistoryFile? {
        let base = source.header.baseTransactionCount
        let kept = try HistoryFile.read(
            storePath: path,
            storeUUID: source.header.storeUUID,
            fileSystem: fileSystem
        )
        return kept.flatMap { $0.earliest <= base && $0.through >= base ? $0 : nil }
    }

    /// Reads the committed transactions of `source`'s log into `scan`, from the file's start.
    ///
    /// - Throws: `StoreError` `.corrupt` for damage within the committed log, `.io`.
    func scanLog(_ source: HistorySource, into scan: HistoryScan) throws {
        var scanner = LogScanner(
            file: source.file,
            path: path,
            fileSize: source.end,
            header: source.header
        )
        let outcome = try scanner.scan(
            from: UInt64(source.header.length),
            lastNumber: source.header.baseTransactionCount,
            onRecord: { [scan] record, payload in scan.visit(record, payload: payload) },
            committed: { [scan] key in scan.current[key] },
            onTransaction: { [scan] transaction in scan.apply(transaction) }
        )
        if let damage = outcome.damage, damage.kind == LogDamage.Kind.corrupt {
            throw StoreError(
                .corrupt,
                "the log is damaged: \(damage.reason)",
                path: path,
                offset: damage.offset
            )
        }
    }

    /// Calls `body` with the value (in the current layout, a patch merged with its base) and
    /// blobs of the record of `key` at `location`, one of `history`'s.
    ///
    /// `preloaded`, when given, holds the log's bytes from its start: a put is then read from
    /// it rather than from the file, which spares a reader of many values a system call each.
    ///
    /// - Throws: `StoreError` `.corrupt` if the record is damaged, `.io`, or what `body`
    ///   throws.
    package func withHistoryValue(
        of key: ObjectKey,
        _ value: LogHistoryValue,
        in history: LogHistory,
        preloaded: [UInt8]? = nil,
        _ body: (_ value: UnsafeRawBufferPointer, _ blobs: [BlobID]) throws -> Void
    ) throws {
        let location: RecordLocation
        switch value {
        case .stored(let stored):
            try stored.bytes.withUnsafeBytes { try body($0, stored.blobs) }
            return
        case .record(let record):
            location = record
        }
        if location.isPatch {
            try withPatchedObject(
                key,
                at: location,
                file: history.file,
                merge: history.merge,
                upgrade: history.upgrade,
                body
            )
            return
        }
        func deliver(_ bytes: UnsafeRawBufferPointer) throws {
            let (_, payload, contents) = try checkedPut(
                bytes,
                key: key,
                offset: location.offset,
                layout: history.layout
            )
            let value = UnsafeRawBufferPointer(rebasing: payload[contents.valueStart...])
            let blobs = contents.blobCount == 0 ? [] : contents.blobs(in: payload)
            guard let upgrade = history.upgrade, location.offset < upgrade.boundary else {
                try body(value, blobs)
                return
            }
            try upgrade.deliver(value, entity: location.entity, offset: location.offset) {
                try body($0, blobs)
            }
        }
        let end = location.offset + UInt64(location.length)
        if let preloaded, end <= UInt64(preloaded.count) {
            try preloaded.withUnsafeBytes { bytes in
                try deliver(
                    UnsafeRawBufferPointer(rebasing: bytes[Int(location.offset)..<Int(end)])
                )
            }
            return
        }
        let record = try history.file.read(at: location.offset, count: Int(location.length))
        try record.withUnsafeBytes { try deliver($0) }
    }
}

/// The state of a scan for ``LogStore/history(after:limit:)``.
final class HistoryScan {
    let after: UInt64
    let limit: Int
    /// The last transaction applied to ``current``: later ones are not (a snapshot's).
    var appliesThrough: UInt64 = .max
    /// Every key's record as of the transaction being read: the compaction's copy and each
    /// later put, patch and delete applied in turn.
    var current: [ObjectKey: RecordLocation] = [:]
    var transactions: [LogHistoryTransaction] = []
    var latest: UInt64?
    /// The note of the transaction being read, found in its padding record.
    private var note: TransactionNote?

    init(after: UInt64, limit: Int) {
        self.after = after
        self.limit = limit
    }

    func visit(_ record: ScannedRecord, payload: UnsafeRawBufferPointer) {
        if record.type == .padding, let found = TransactionNote(padding: payload) { note = found }
    }

    func apply(_ transaction: ScannedTransaction) {
        let note = self.note
        self.note = nil
        guard transaction.isCompaction || transaction.number <= appliesThrough else { return }
        let wanted =
            !transaction.isCompaction && transaction.number > after
            && transactions.count < limit
        var changes: [LogHistoryChange] = []
        var position: [ObjectKey: Int] = [:]
        for record in transaction.records {
            let kind: LogHistoryChange.Kind
            let after: RecordLocation?
            switch record.type {
            case .put:
                kind = record.flags & 1 != 0 ? .insert : .update
                after = record.location
            case .patch:
                kind = .update
                after = record.location
            case .delete:
                kind = .delete
                after = nil
            default:
                continue
            }
            let before = current[record.key]
            current[record.key] = after
            guard wanted else { continue }
            // Writers change an object once a transaction; should a key come again, its
            // change ends where its last record leaves it.
            if let index = position[record.key] {
                changes[index].after = after.map(LogHistoryValue.record)
                if after == nil { changes[index].kind = .delete }
                continue
            }
            position[record.key] = changes.count
            changes.append(
                LogHistoryChange(
                    key: record.key,
                    entity: record.entity,
                    // A put of a key that was live replaces it: an update, whatever its flag.
                    kind: kind == .insert && before != nil ? .update : kind,
                    before: before.map(LogHistoryValue.record),
                    after: after.map(LogHistoryValue.record)
                )
            )
        }
        guard !transaction.isCompaction else { return }
        latest = transaction.number
        if wanted {
            transactions.append(
                LogHistoryTransaction(
                    number: transaction.number,
                    timestampMicroseconds: transaction.commit.timestampMicroseconds,
                    changes: changes,
                    modelHash: nil,
                    note: note
                )
            )
        }
    }
}
