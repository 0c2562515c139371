import Foundation

extension LogStore {
    /// Hands out `count` fresh keys, never used before in this store.
    ///
    /// Keys become permanent with the next commit; keys handed out but never committed may be
    /// handed out again after the store is reopened.
    public func allocateKeys(_ count: Int) -> ClosedRange<ObjectKey> {
        precondition(count > 0, "allocateKeys needs a positive count")
        // Safe: a store's next key is at most `LogFormat.maximumCounter` (2^62) when read, so
        // only a count of about 2^62 keys could overflow it.
        precondition(UInt64(count) <= LogFormat.maximumCounter, "allocateKeys count too large")
        return locked {
            let first = nextKey
            nextKey += UInt64(count)
            return first...(first + UInt64(count) - 1)
        }
    }

    func checkWritable() throws {
        // A read-only handle never writes, so it is never poisoned: the order of the checks
        // does not matter past the first.
        try checkOpen()
        if isReadOnly { throw StoreError(.readOnly, "the store is open read-only", path: path) }
    }

    /// Refuses a closed handle, and one whose earlier fsync failed (what it holds in memory may
    /// not be what the file holds).
    func checkOpen() throws {
        if isClosed { throw StoreError(.closed, "the store is closed", path: path) }
        if isPoisoned {
            throw StoreError(
                .poisoned,
                "an earlier fsync failed; reopen the store before writing again",
                path: path
            )
        }
    }

    /// Appends `transaction` and, with durable options, makes it durable before returning.
    ///
    /// The records and a commit record are written at the end of the log in one `write` (for
    /// more than 64 KiB of object records, one for those records, or for each run of them
    /// between the transaction's holes, then one for the rest), then flushed with one
    /// `fdatasync`. If a write fails, the log is cut back to where it was; if the flush fails,
    /// the handle is poisoned (rule 3).
    ///
    /// - Returns: The transaction's number, offset, time and counts.
    /// - Throws: ``StoreError`` — `.readOnly`, `.poisoned`, `.closed`, `.tooLarge`,
    ///   `.invalidArgument` (a key never allocated), `.io`.
    @discardableResult
    public func commit(_ transaction: Transaction) throws -> CommitInfo {
        try commit(transaction, whileSyncing: {})
    }

    /// Commits `transaction`, running `work` once its records are written: while the flush of
    /// a large one waits for the disk, else after it.
    ///
    /// For what the caller derives from the transaction alone (the engine's attribute columns).
    /// When the commit throws after `work` ran (its flush failed), the caller must drop what
    /// `work` derived.
    package func commit(
        _ transaction: Transaction,
        whileSyncing work: () -> Void
    ) throws -> CommitInfo {
        let info = try commitTransaction(transaction, whileSyncing: work)
        compactIfWorthwhile()
        return info
    }

    /// Commits of at least this many changes update the key directory while their flush runs.
    ///
    /// The flush then runs on another thread: at 100,000 changes the directory and column
    /// updates took about as long as the flush, one after the other. Smaller commits flush on
    /// the calling thread (handing a flush to another thread costs tens of microseconds, a fifth
    /// of a small durable save).
    static var overlappedSyncChanges: Int { 4_096 }

    /// Compacts when ``StoreOptions/autoCompactionThreshold`` says so; a failure leaves the
    /// store as it was, and the commit before stands.
    private func compactIfWorthwhile() {
        guard let threshold = options.autoCompactionThreshold else { return }
        let worthwhile = locked { () -> Bool in
            let live =
                UInt64(header.length) + liveRecordBytes + UInt64(header.layout.commitRecordLength)
            guard endOffset >= options.autoCompactionMinimumBytes, endOffset > live, !lacksUpgrade
            else { return false }
            return Double(endOffset - live) >= threshold * Double(endOffset)
        }
        guard worthwhile else { return }
        locked { counters.autoCompactions += 1 }
        _ = try? compact()
    }

    /// How many keys ahead the key-directory updates of a commit prefetch their entries.
    static var prefetchDistance: Int { 16 }

    private func commitTransaction(
        _ transaction: Transaction,
        whileSyncing work: () -> Void
    ) throws -> CommitInfo {
        lock.lock()
        defer { lock.unlock() }
        try checkWritable()

        let start = endOffset
        let metadataBytes = transaction.metadata.map { MetadataCoding.encode($0) }
        if let metadataBytes, metadataBytes.count > LogFormat.maximumMetadataLength {
            throw StoreError(
                .tooLarge,
                "the metadata dictionary encodes to \(metadataBytes.count) bytes; the limit is 16 MiB",
                path: path
            )
        }
        let layout = header.layout
        if transaction.hasPatch, !header.allowsPatches {
            throw StoreError(
                .invalidArgument,
                "the store's format (\(header.majorVersion).\(header.minorVersion)) holds no patch "
                    + "records; compaction upgrades it",
                path: path
            )
        }
        // The transaction frames its puts as compact records as they are added; in that layout,
        // and when no put follows a delete (records keep the transaction's order), they are
        // written as they are, ahead of the deletes, metadata and commit record framed here.
        let writesFramedPuts = layout == .compact && !transaction.hasPutAfterDelete
        let framedLength = writesFramedPuts ? transaction.recordByteCount : 0
        // The file offset of `writer`'s first byte.
        let base = start + UInt64(framedLength)
        var size =
            layout.commitRecordLength + 2 * LogFormat.sectorSize
            + (metadataBytes.map { layout.maximumFrameLength + $0.count } ?? 0)
        // The entries are read in place.
        let entries = transaction.entries
        if !writesFramedPuts || transaction.hasDelete {
            entries.withUnsafeBufferPointer { entries in
                for index in entries.indices where entries[index].isDelete || !writesFramedPuts {
                    size += layout.maximumFrameLength
                    if !entries[index].isDelete {
                        size += layout.putPayloadLength(
                            blobCount: entries[index].hasBlobs
                                ? transaction.blobs(ofEntry: index).count : 0,
                            valueLength: Int(entries[index].valueCount)
                        )
                    }
                }
            }
        }
        var writer = ByteWriter(capacity: size)
        // The keydir changes in order, except puts written as framed by the transaction, which
        // all come first and are read back from its entries.
        var written: [(key: ObjectKey, location: RecordLocation?)] = []
        if !writesFramedPuts || transaction.hasDelete {
            written.reserveCapacity(transaction.entries.count)
        }
        if transaction.hasPatch { try checkPatches(of: transaction) }
        // Which keys this transaction has put or deleted so far; built only once a delete needs
        // to know whether its key is live.
        var touched: TouchedKeys?
        let distance = Self.prefetchDistance
        var inserted: UInt32 = 0
        var updated: UInt32 = 0
        var deleted: UInt32 = 0
        var recordCount: UInt32 = 0
        var highestKey: ObjectKey = 0

        let records = transaction.records
        for index in entries.indices {
            // Read in place, field by field.
            let key = entries[index].key
            guard key != 0, key < nextKey else {
                throw StoreError(
                    .invalidArgument,
                    "key \(key) was never allocated by this store",
                    path: path
                )
            }
            highestKey = max(highestKey, key)
            if entries[index].isDelete {
                if touched == nil {
                    // A delete that was skipped found its key not live, so `false` is right
                    // for it too.
                    var keys = TouchedKeys(below: nextKey, changes: entries.count, live: live.count)
                    for entry in entries[..<index] { keys[entry.key] = !entry.isDelete }
                    touched = keys
                }
                // A delete's key is looked up in the directory: the slot of one a few deletes
                // ahead is asked for now (a tenth of a million objects' slots are cache misses).
                if index &+ distance < entries.count, entries[index &+ distance].isDelete {
                    live.prefetch(entries[index &+ distance].key)
                }
                let isLive = touched![key] ?? (live[key] != nil)
                guard isLive else { continue }
                layout.appendDelete(key: key, entity: entries[index].entity, into: &writer)
                touched![key] = false
                written.append((key, nil))
                deleted += 1
            } else {
                let blobCount =
                    entries[index].hasBlobs ? transaction.blobs(ofEntry: index).count : 0
                let length = layout.putPayloadLength(
                    blobCount: blobCount,
                    valueLength: Int(entries[index].valueCount)
                )
                guard length <= LogFormat.maximumPayloadLength, blobCount <= Int(UInt16.max)
                else {
                    throw StoreError(
                        .tooLarge,
                        "object \(key) encodes to \(length) bytes; the limit is \(LogFormat.maximumPayloadLength) (use external storage)",
                        path: path
                    )
                }
                if !writesFramedPuts, entries[index].isPatch {
                    // Compact (the only layout with patches): written as the transaction framed it.
                    let change = entries[index]
                    let offset = base + UInt64(writer.count)
                    records.withUnsafeBytes { records in
                        writer.append(
                            contentsOf: UnsafeRawBufferPointer(
                                rebasing: records[
                                    change.recordStart..<change.recordStart
                                        + Int(change.recordLength)
                                ]
                            )
                        )
                    }
                    written.append(
                        (
                            key,
                            RecordLocation(
                                entity: change.entity,
                                offset: offset,
                                length: change.recordLength,
                                isPatch: true
                            )
                        )
                    )
                } else if !writesFramedPuts {
                    let change = entries[index]
                    let offset = base + UInt64(writer.count)
                    records.withUnsafeBytes { records in
                        layout.appendPut(
                            key: key,
                            entity: change.entity,
                            isInsert: change.isInsert,
                            blobs: transaction.blobs(ofEntry: index),
                            value: UnsafeRawBufferPointer(rebasing: records[change.valueRange]),
                            into: &writer
                        )
                    }
                    written.append(
                        (
                            key,
                            RecordLocation(
                                entity: change.entity,
                                offset: offset,
                                length: UInt32(base + UInt64(writer.count) - offset)
                            )
                        )
                    )
                }
                if touched != nil { touched![key] = true }
                if entries[index].isInsert { inserted += 1 } else { updated += 1 }
            }
            recordCount += 1
        }
        var newMetadataOffset = metadataOffset
        if let metadataBytes {
            newMetadataOffset = base + UInt64(writer.count)
            metadataBytes.withUnsafeBytes { layout.appendMetadata($0, into: &writer) }
            recordCount += 1
        }
        let beforePadding = writer.count
        layout.appendPaddingBeforeCommit(base: base, into: &writer)
        if writer.count != beforePadding { recordCount += 1 }
        let commit = CommitPayload(
            timestampMicroseconds: CommitPayload.now(),
            firstRecordOffset: start,
            recordCount: recordCount,
            inserted: inserted,
            updated: updated,
            deleted: deleted,
            metadataOffset: newMetadataOffset,
            nextKey: nextKey
        )
        let commitChecksum = layout.appendCommit(
            number: lastNumber + 1,
            flags: 0,
            commit,
            into: &writer
        )

        let transactionLength = framedLength + writer.count
        let bytes = writer.takeBytes()
        do {
            if framedLength > 64 << 10 {
                // A run at a time, around the transaction's holes.
                var position = start
                try transaction.forEachRecordRun { run in
                    try file.write(run, at: position)
                    position += UInt64(run.count)
                }
                try file.write(bytes, at: base)
            } else if framedLength > 0 {
                // A small transaction (the common durable save) goes out in one write call.
                var whole = transaction.recordBytes
                whole += bytes
                try file.write(whole, at: start)
            } else {
                try file.write(bytes, at: base)
            }
        } catch {
            // Leave no partial transaction for the next one to follow.
            do { try file.truncate(to: start) } catch { isPoisoned = true }
            throw error
        }
        counters.bytesWritten += UInt64(transactionLength)
        // A large commit's flush runs on another thread while this one updates the key
        // directory. Readers wait for the store's lock, which this thread holds until the flush
        // is done, so none sees the new locations before they are durable; if the flush fails,
        // the old locations, kept meanwhile, are put back.
        var flush: PendingFlush?
        if options.durable {
            counters.logSyncs += 1
            if entries.count >= Self.overlappedSyncChanges {
                flush = PendingFlush(file)
            } else {
                do {
                    try file.sync()
                } catch {
                    isPoisoned = true
                    throw error
                }
            }
        }

        // The transaction is written: update the keydir (on locals, see `apply`).
        var live = self.live
        var counts = self.entityCounts
        var recordBytes = self.liveRecordBytes
        let (countsBefore, recordBytesBefore) = (counts, recordBytes)
        // The old location of each key changed, while the flush may still fail: of the framed
        // puts in their order (16 bytes each, their keys are the entries'), then of the rest.
        var undoFramed: [PackedLocation] = []
        var undo: [(key: ObjectKey, location: RecordLocation?)] = []
        if flush != nil {
            // Faulted in at once (see ``FreshMemory``): 16 bytes for each put.
            undoFramed = [PackedLocation](
                unsafeUninitializedCapacity: writesFramedPuts ? entries.count : 0
            ) { buffer, count in
                FreshMemory.prepareForWriting(buffer)
                count = 0
            }
            undo.reserveCapacity(written.count)
        }
        self.live = KeyDirectory()
        // Grown once, not doubled (and rehashed) again and again while a bulk save's keys go in.
        // Only inserts add keys: reserving for every put made a save that updates a tenth of a
        // large store copy its whole keydir into a bigger one. (A put that adds a key without
        // being an insert still fits: `updateValue` grows the directory when it must.)
        live.reserveCapacity(live.count + Int(inserted))
        if writesFramedPuts {
            entries.withUnsafeBufferPointer { entries in
                var update = FramedPutUpdate(
                    entries: entries,
                    holes: transaction.holes,
                    start: start,
                    keepsUndo: flush != nil,
                    undo: undoFramed,
                    counts: counts,
                    recordBytes: recordBytes
                )
                // The update's list is then the only reference to its storage.
                undoFramed = []
                // A dense directory with room for every key is updated without the checks of
                // `updateValue` for each (a fifth of a large commit's directory update).
                let updatedDense = live.updatingDense(through: highestKey) { dense in
                    update.apply(to: &dense)
                }
                if !updatedDense { update.apply(to: &live) }
                (undoFramed, counts, recordBytes) = (update.undo, update.counts, update.recordBytes)
            }
        }
        for (index, (key, location)) in written.enumerated() {
            if index &+ distance < written.count { live.prefetch(written[index &+ distance].key) }
            let old: RecordLocation?
            if let location {
                old = live.updateValue(location, forKey: key)
                counts.add(location.entity, 1)
                recordBytes += UInt64(location.length)
            } else {
                old = live.removeValue(forKey: key)
            }
            if flush != nil { undo.append((key, old)) }
            if let old {
                counts.add(old.entity, -1)
                recordBytes -= UInt64(old.length)
            }
        }
        work()
        if let failure = flush?.wait() {
            for (key, old) in undo.reversed() {
                if let old {
                    live.updateValue(old, forKey: key)
                } else {
                    live.removeValue(forKey: key)
                }
            }
            // In reverse, so that a key put twice gets back its location from before both.
            var previous = undoFramed.count
            for entry in entries.reversed() where !entry.isDelete && previous > 0 {
                previous -= 1
                if let old = undoFramed[previous].location {
                    live.updateValue(old, forKey: entry.key)
                } else {
                    live.removeValue(forKey: entry.key)
                }
            }
            self.live = live
            (self.entityCounts, self.liveRecordBytes) = (countsBefore, recordBytesBefore)
            isPoisoned = true
            throw failure
        }
        counters.commits += 1
        self.live = live
        self.entityCounts = counts
        self.liveRecordBytes = recordBytes
        if let metadata = transaction.metadata {
            currentMetadata = metadata
            metadataOffset = newMetadataOffset
        }
        lastNumber += 1
        lastCommitChecksum = commitChecksum
        endOffset = start + UInt64(transactionLength)
        return CommitInfo(
            number: lastNumber,
            offset: start,
            date: commit.date,
            inserted: Int(inserted),
            updated: Int(updated),
            deleted: Int(deleted)
        )
    }
}

extension LogStore {
    /// Refuses a transaction with a patch whose base is not its key's record.
    ///
    /// The base must be the key's record as of the last commit, a put, of a key no earlier
    /// change of the transaction touched (FORMAT.md, section 4). The caller holds `lock`.
    fileprivate func checkPatches(of transaction: Transaction) throws {
        var touched = TouchedKeys(below: nextKey, changes: transaction.count, live: live.count)
        let distance = Self.prefetchDistance
        let live = self.live
        try transaction.records.withUnsafeBytes { records in
            try transaction.entries.withUnsafeBufferPointer { entries in
                for index in entries.indices {
                    let key = entries[index].key
                    defer { touched[key] = !entries[index].isDelete }
                    guard entries[index].isPatch else { continue }
                    // The slot of a key a few patches ahead is asked for now (a tenth of a
                    // million objects' slots are cache misses).
                    if index &+ distance < entries.count {
                        live.prefetch(entries[index &+ distance].key)
                    }
                    let base = Transaction.patchBase(of: entries[index], in: records)
                    guard touched[key] == nil, let current = live[key], !current.isPatch,
                        current.offset == base.offset, current.length == base.length,
                        current.entity == base.entity
                    else {
                        throw StoreError(
                            .invalidArgument,
                            "a patch of key \(key) names a base that is not the key's record",
                            path: path
                        )
                    }
                }
            }
        }
    }
}

/// Which keys a transaction has put or deleted so far, and whether each was left live, as its
/// commit goes through its entries: a delete of a key that is not live is skipped.
private struct TouchedKeys {
    /// Two bits a key below `bitLimit`: whether it was touched, and whether it was left live.
    private var touched: [UInt64] = []
    private var left: [UInt64] = []
    private let bitLimit: ObjectKey
    /// The keys from `bitLimit` on.
    private var others: [ObjectKey: Bool] = [:]

    /// For keys below `bound`, in a transaction of `changes` entries and a directory of `live`
    /// keys.
    init(below bound: ObjectKey, changes: Int, live: Int) {
        // Bits while they take no more memory than the directory and the entries do (keys are
        // handed out in ascending runs, so most stores' keys are dense): a batch delete of a
        // tenth of a million objects spent 15 ms hashing them into a dictionary.
        if bound <= UInt64(64 * (changes + live) + 4_096) {
            bitLimit = bound
            let words = Int((bound + 63) / 64)
            touched = [UInt64](repeating: 0, count: words)
            left = [UInt64](repeating: 0, count: words)
        } else {
            bitLimit = 0
        }
    }

    /// Whether `key` was left live, if it was touched.
    subscript(key: ObjectKey) -> Bool? {
        get {
            guard key < bitLimit else { return others[key] }
            let (word, bit) = (Int(key / 64), UInt64(1) << (key % 64))
            guard touched[word] & bit != 0 else { return nil }
            return left[word] & bit != 0
        }
        set {
            guard key < bitLimit else {
                others[key] = newValue
                return
            }
            let (word, bit) = (Int(key / 64), UInt64(1) << (key % 64))
            guard let newValue else {
                touched[word] &= ~bit
                return
            }
            touched[word] |= bit
            if newValue { left[word] |= bit } else { left[word] &= ~bit }
        }
    }
}

/// Where a key's location is set: a key directory, or a run of updates of a dense one.
private protocol LocationSetter {
    mutating func updateValue(_ location: RecordLocation, forKey key: ObjectKey) -> RecordLocation?
    func prefetch(_ key: ObjectKey)
}

extension KeyDirectory: LocationSetter {}

extension KeyDirectory.DenseUpdate: LocationSetter {}

/// The key-directory update of a commit's framed puts: their new locations, and the counts,
/// live bytes and old locations that follow from them.
private struct FramedPutUpdate {
    let entries: UnsafeBufferPointer<Transaction.Entry>
    /// The transaction's holes, which are not written: a record's offset in the file is its
    /// start in the transaction's records less the bytes of the holes before it.
    let holes: [Transaction.Hole]
    /// The transaction's offset in the file.
    let start: UInt64
    let keepsUndo: Bool
    var undo: [PackedLocation]
    var counts: EntityCounter
    var recordBytes: UInt64

    /// Sets each put's location in `target`, after asking for the entry of the key
    /// ``LogStore/prefetchDistance`` puts ahead.
    @inline(__always)
    mutating func apply(to target: inout some LocationSetter) {
        let distance = LogStore.prefetchDistance
        // The holes before the entry, and their bytes (entries are in record order).
        var hole = 0
        var skipped = 0
        for index in entries.indices where !entries[index].isDelete {
            if index &+ distance < entries.count {
                target.prefetch(entries[index &+ distance].key)
            }
            let recordStart = entries[index].recordStart
            while hole < holes.count, holes[hole].start <= recordStart {
                skipped += holes[hole].count
                hole += 1
            }
            let location = RecordLocation(
                entity: entries[index].entity,
                offset: start + UInt64(recordStart - skipped),
                length: entries[index].recordLength,
                isPatch: entries[index].isPatch
            )
            let old = target.updateValue(location, forKey: entries[index].key)
            if keepsUndo { undo.append(PackedLocation(old)) }
            // An update within its entity leaves the counts as they are.
            if old?.entity != location.entity {
                if let old { counts.add(old.entity, -1) }
                counts.add(location.entity, 1)
            }
            recordBytes = recordBytes - UInt64(old?.length ?? 0) + UInt64(location.length)
        }
    }
}

/// An fdatasync running on another thread, waited for once.
private final class PendingFlush: @unchecked Sendable {
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
