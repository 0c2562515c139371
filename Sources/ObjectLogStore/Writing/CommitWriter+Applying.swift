extension CommitWriter {
    /// Applies the written transaction to `state`: the key directory, the counts, the metadata
    /// and the end.
    ///
    /// With a flush still running, the old location of every changed key is kept until it is
    /// done; if it fails, they are put back, `state` is poisoned and the flush's error thrown.
    /// Readers wait for the store's lock, which the caller holds throughout, so none sees the
    /// new locations before they are durable.
    ///
    /// - Returns: The transaction's number, offset, time and counts.
    func apply(
        to state: inout LiveState,
        flushing flush: PendingFlush?
    ) throws -> CommitInfo {
        let entries = transaction.entries
        let distance = Self.prefetchDistance
        // On locals, so that the directory's storage is uniquely referenced and changed in
        // place.
        var live = state.live
        var counts = state.entityCounts
        var recordBytes = state.liveRecordBytes
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
        state.live = KeyDirectory()
        // Grown once, not doubled (and rehashed) again and again while a bulk save's keys go in.
        // Only inserts add keys: reserving for every put would have a save that updates many
        // objects of a large store copy its whole keydir into a bigger one, for keys it holds
        // already. (A put that adds a key without being an insert still fits: `updateValue`
        // grows the directory when it must.)
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
                // `updateValue` for each (the directory's uniqueness and room, made once for
                // the commit instead of once a key).
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
            state.live = live
            (state.entityCounts, state.liveRecordBytes) = (countsBefore, recordBytesBefore)
            state.isPoisoned = true
            throw failure
        }
        state.live = live
        state.entityCounts = counts
        state.liveRecordBytes = recordBytes
        if let metadata = transaction.metadata {
            state.currentMetadata = metadata
            state.metadataOffset = metadataOffset
        }
        assert(number == state.lastNumber + 1, "commits are applied in the order of their numbers")
        state.lastNumber = number
        state.lastCommitChecksum = commitChecksum
        state.endOffset = start + UInt64(length)
        return CommitInfo(
            number: state.lastNumber,
            offset: start,
            date: commit.date,
            inserted: Int(inserted),
            updated: Int(updated),
            deleted: Int(deleted)
        )
    }
}

extension CommitWriter {
    /// Calls `body` with each key the transaction puts or deletes and its new location (nil
    /// for a delete), in an order that leaves a key's last change last.
    func forEachLocation(_ body: (ObjectKey, RecordLocation?) -> Void) {
        if writesFramedPuts {
            transaction.entries.withUnsafeBufferPointer { entries in
                var update = FramedPutUpdate(
                    entries: entries,
                    holes: transaction.holes,
                    start: start,
                    keepsUndo: false,
                    undo: [],
                    counts: EntityCounter(),
                    recordBytes: 0
                )
                withoutActuallyEscaping(body) { body in
                    var recorder = LocationRecorder(body: body)
                    update.apply(to: &recorder)
                }
            }
        }
        for (key, location) in written { body(key, location) }
    }
}

/// Hands each location set to a closure: what the pending commits' locations are made with.
private struct LocationRecorder: LocationSetter {
    let body: (ObjectKey, RecordLocation?) -> Void

    mutating func updateValue(
        _ location: RecordLocation,
        forKey key: ObjectKey
    ) -> RecordLocation? {
        body(key, location)
        return nil
    }

    func prefetch(_ key: ObjectKey) {}
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
    /// ``CommitWriter/prefetchDistance`` puts ahead.
    @inline(__always)
    mutating func apply(to target: inout some LocationSetter) {
        let distance = CommitWriter.prefetchDistance
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
