import Foundation

/// One transaction on its way into the log: framed as records after the live state's end (or
/// after the commits written before it whose flush has not completed), written, flushed, then
/// applied to the live state, with the old locations kept to undo it while its flush may still
/// fail.
///
/// ``LogStore`` drives the four steps under its lock:
/// ```swift
/// let commit = try CommitWriter(framing: transaction, after: state, path: path)
/// try commit.write(to: file, state: &state)
/// let flush = try commit.flush(file, state: &state)
/// let info = try commit.apply(to: &state, flushing: flush)
/// ```
/// A small durable commit is flushed with the others written meanwhile instead (see
/// ``PendingCommits``), and applied once that flush has completed. Framing reads the state and
/// writes nothing; nothing of the transaction reaches the state before its records are in the
/// file.
struct CommitWriter {
    /// Commits of at least this many changes update the key directory while their flush runs.
    ///
    /// The flush then runs on another thread, as the directory update of a large commit, a
    /// cache miss per changed key, is work of the same order as the flush. Smaller commits
    /// flush on the calling thread: handing a flush to another thread adds a wake-up and a wait
    /// to a save whose own work is little more than its `fdatasync`.
    static var overlappedSyncChanges: Int { 4_096 }

    /// How many keys ahead the key-directory updates of a commit prefetch their entries.
    static var prefetchDistance: Int { 16 }

    let transaction: Transaction
    /// The transaction's number.
    let number: UInt64
    /// The file offset the transaction starts at: the live state's end, or the end of the
    /// last commit written before it.
    let start: UInt64
    /// Whether the puts go out as the transaction framed them, ahead of `bytes`.
    let writesFramedPuts: Bool
    /// The bytes of the puts the transaction framed, when they are written as they are.
    let framedLength: Int
    /// What this writer framed: the other records, the metadata, padding and the commit record.
    let bytes: [UInt8]
    /// The key directory's changes in order, except the puts the transaction framed, which all
    /// come first and are read back from its entries; nil for a delete.
    let written: [(key: ObjectKey, location: RecordLocation?)]
    let inserted: UInt32
    let updated: UInt32
    let deleted: UInt32
    /// The highest key the transaction touches.
    let highestKey: ObjectKey
    /// Where the metadata record is after this commit.
    let metadataOffset: UInt64
    let commit: CommitPayload
    let commitChecksum: UInt32

    /// The transaction's bytes in the file.
    var length: Int { framedLength + bytes.count }

    /// Frames `transaction` to follow the last commit of `state`, or, when there are
    /// `pending` commits, the last of them.
    ///
    /// A delete or a patch looks its key up in the pending commits' locations first, which the
    /// caller has built (``PendingCommits/buildLocations()``) when the transaction has one.
    ///
    /// - Throws: `StoreError` — `.tooLarge` (an object or the metadata over its limit),
    ///   `.invalidArgument` (a key never allocated, a patch in a store without patches, or one
    ///   whose base is not its key's record).
    init(
        framing transaction: Transaction,
        after state: LiveState,
        pending: PendingCommits = PendingCommits(),
        path: String
    ) throws {
        self.transaction = transaction
        start = pending.end ?? state.endOffset
        number = (pending.lastNumber ?? state.lastNumber) + 1
        let metadataBytes = transaction.metadata.map { MetadataCoding.encode($0) }
        if let metadataBytes, metadataBytes.count > LogFormat.maximumMetadataLength {
            throw StoreError(
                .tooLarge,
                "the metadata dictionary encodes to \(metadataBytes.count) bytes; the limit is 16 MiB",
                path: path
            )
        }
        let header = state.header
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
        self.writesFramedPuts = writesFramedPuts
        framedLength = writesFramedPuts ? transaction.recordByteCount : 0
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
        var written: [(key: ObjectKey, location: RecordLocation?)] = []
        if !writesFramedPuts || transaction.hasDelete {
            written.reserveCapacity(transaction.entries.count)
        }
        // Where the pending commits put or delete keys, ahead of the live state's directory.
        let locations = pending.locations
        precondition(
            pending.isEmpty || locations != nil || !(transaction.hasDelete || transaction.hasPatch),
            "the pending commits' locations are needed to frame deletes and patches"
        )
        if transaction.hasPatch {
            try Self.checkPatches(of: transaction, in: state, pending: locations, path: path)
        }
        // Which keys this transaction has put or deleted so far; built only once a delete needs
        // to know whether its key is live.
        var touched: TouchedKeys?
        let distance = Self.prefetchDistance
        let live = state.live
        let nextKey = state.nextKey
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
                // ahead is asked for now, as a large directory's slots are cache misses.
                if index &+ distance < entries.count, entries[index &+ distance].isDelete {
                    live.prefetch(entries[index &+ distance].key)
                }
                let isLive =
                    touched![key] ?? (locations?[key].map { $0 != nil } ?? (live[key] != nil))
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
        var metadataOffset = pending.metadataOffset ?? state.metadataOffset
        if let metadataBytes {
            metadataOffset = base + UInt64(writer.count)
            metadataBytes.withUnsafeBytes { layout.appendMetadata($0, into: &writer) }
            recordCount += 1
        }
        let beforePadding = writer.count
        layout.appendPaddingBeforeCommit(
            base: base,
            into: &writer,
            note: Self.note(of: transaction, pending: pending, state: state)
        )
        if writer.count != beforePadding { recordCount += 1 }
        let commit = CommitPayload(
            timestampMicroseconds: CommitPayload.now(),
            firstRecordOffset: start,
            recordCount: recordCount,
            inserted: inserted,
            updated: updated,
            deleted: deleted,
            metadataOffset: metadataOffset,
            nextKey: nextKey
        )
        commitChecksum = layout.appendCommit(
            number: number,
            flags: 0,
            commit,
            into: &writer
        )
        self.commit = commit
        self.metadataOffset = metadataOffset
        self.written = written
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.highestKey = highestKey
        bytes = writer.takeBytes()
    }

    /// The bytes the padding before the commit record starts with: the transaction's note,
    /// and, when commits written before it are not durable yet, how far the log is (FORMAT.md,
    /// section 5: what tells their torn group from damage to acknowledged transactions).
    private static func note(
        of transaction: Transaction,
        pending: PendingCommits,
        state: LiveState
    ) -> [UInt8] {
        let note = TransactionNote(transaction)
        guard !pending.isEmpty else { return note?.encoded ?? [] }
        return TransactionNote.encode(note, durableThrough: state.lastNumber)
    }

    /// Refuses a transaction with a patch whose base is not its key's record.
    ///
    /// The base must be the key's record as of the last commit, a put, of a key no earlier
    /// change of the transaction touched (FORMAT.md, section 4); the last commit may be a
    /// pending one, whose `locations` come first.
    private static func checkPatches(
        of transaction: Transaction,
        in state: LiveState,
        pending locations: [ObjectKey: RecordLocation?]?,
        path: String
    ) throws {
        let live = state.live
        var touched = TouchedKeys(
            below: state.nextKey,
            changes: transaction.count,
            live: live.count
        )
        let distance = Self.prefetchDistance
        try transaction.records.withUnsafeBytes { records in
            try transaction.entries.withUnsafeBufferPointer { entries in
                for index in entries.indices {
                    let key = entries[index].key
                    defer { touched[key] = !entries[index].isDelete }
                    guard entries[index].isPatch else { continue }
                    // The slot of a key a few patches ahead is asked for now.
                    if index &+ distance < entries.count {
                        live.prefetch(entries[index &+ distance].key)
                    }
                    let base = Transaction.patchBase(of: entries[index], in: records)
                    let current = locations?[key] ?? live[key]
                    guard touched[key] == nil, let current, !current.isPatch,
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

    /// Writes the transaction at its offset.
    ///
    /// The framed records and the rest go out in one write call when they are small (the
    /// common durable save); a large transaction is written a run at a time, around its holes.
    /// If a write fails, the log is cut back to where it was, so that no partial transaction is
    /// left for the next one to follow; if even that fails, `state` is poisoned.
    func write(to file: any StoreFile, state: inout LiveState) throws {
        let base = start + UInt64(framedLength)
        do {
            if framedLength > 64 << 10 {
                var position = start
                try transaction.forEachRecordRun { run in
                    try file.write(run, at: position)
                    position += UInt64(run.count)
                }
                try file.write(bytes, at: base)
            } else if framedLength > 0 {
                var whole = transaction.recordBytes
                whole += bytes
                try file.write(whole, at: start)
            } else {
                try file.write(bytes, at: base)
            }
        } catch {
            do { try file.truncate(to: start) } catch { state.isPoisoned = true }
            throw error
        }
    }

    /// Flushes the written transaction to the disk: on this thread, or, for a large one, on
    /// another while ``apply(to:flushing:whileSyncing:)`` updates the key directory.
    ///
    /// - Returns: The flush still running, which `apply` waits for; nil when it is done.
    /// - Throws: The flush's error, after poisoning `state` (the kernel may have dropped the
    ///   dirty pages, so the file may not hold what was written).
    func flush(_ file: any StoreFile, state: inout LiveState) throws -> PendingFlush? {
        if transaction.entries.count >= Self.overlappedSyncChanges {
            return PendingFlush(file)
        }
        do {
            try file.sync()
        } catch {
            state.isPoisoned = true
            throw error
        }
        return nil
    }
}
