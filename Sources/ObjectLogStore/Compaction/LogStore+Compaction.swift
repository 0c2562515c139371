import Foundation

/// What a compaction did.
public struct CompactionReport: Sendable, Equatable {
    /// The file's size before.
    public var bytesBefore: UInt64
    /// The file's size after.
    public var bytesAfter: UInt64
    /// Live objects copied.
    public var objects: Int
    /// Unreferenced external blob files removed.
    public var blobsRemoved: Int
    /// Bytes of the removed blob files.
    public var blobBytesRemoved: UInt64
    /// The new generation.
    public var generation: UInt64
}

/// Where the live records were before and after one compaction, in log order.
struct CompactionMap {
    /// The generation compacted.
    var fromGeneration: UInt64
    var old: [UInt64]
    var new: [UInt64]
    /// The end of the compacted file (where the next write went).
    var end: UInt64
}

extension LogStore {
    /// Rewrites the store with only its live objects and the latest metadata folded into the
    /// header, crash-safely, then removes external blobs no live object refers to.
    ///
    /// The new file (generation + 1) is written beside the store, synced, renamed over it and
    /// the directory synced: a crash at any point leaves either the old or the new store, and
    /// the next open removes what was left over.
    ///
    /// - Parameter progress: Called now and then with the fraction done, from 0 to 1.
    /// - Returns: What was reclaimed.
    /// - Throws: ``StoreError`` `.readOnly`, `.poisoned`, `.io`.
    @discardableResult
    public func compact(progress: ((Double) -> Void)? = nil) throws -> CompactionReport {
        try compact(progress: progress, rewriting: nil as [RecordRewrite]?)
    }

    /// Rewrites one live record's value as compaction copies it: the engine's rewriting
    /// migration stages.
    ///
    /// Called with the record's key, entity tag, offset and value as stored (before any
    /// translation), and the framer of the new record: puts the value to write instead, in the
    /// current layout, once, with ``RewrittenRecord/put(_:)``, and returns true, or returns
    /// false (putting nothing) to have the record copied as compaction does (translated if it
    /// is older). An error ends the compaction with the store unchanged.
    package typealias RecordRewrite =
        @Sendable (
            _ key: ObjectKey, _ entity: EntityTag, _ offset: UInt64,
            _ value: UnsafeRawBufferPointer, _ record: inout RewrittenRecord
        ) throws -> Bool

    /// Where a ``RecordRewrite`` puts the new value of a record: framed as it is, straight
    /// into the part's output, with no copy in between (and, unlike a function handed to the
    /// rewrite, with nothing allocated for each record).
    package struct RewrittenRecord {
        fileprivate var output: ByteWriter
        fileprivate let layout: RecordLayout
        fileprivate var key: ObjectKey = 0
        fileprivate var entity: EntityTag = 0
        fileprivate var isInsert = false
        fileprivate var blobs: [BlobID] = []
        fileprivate var puts = 0

        fileprivate init(output: consuming ByteWriter, layout: RecordLayout) {
            self.output = output
            self.layout = layout
        }

        /// Frames `value` as the record's new value.
        package mutating func put(_ value: UnsafeRawBufferPointer) {
            layout.appendPut(
                key: key,
                entity: entity,
                isInsert: isInsert,
                blobs: blobs,
                value: value,
                into: &output
            )
            puts += 1
        }
    }

    /// ``compact(progress:)``, with every live record's value offered to a rewrite first.
    ///
    /// The records of each read window are rewritten by all the workers at once (rewriting is
    /// the costly part; the copy itself stays in order on the calling thread).
    ///
    /// - Parameters:
    ///   - progress: Called now and then with the fraction done, from 0 to 1.
    ///   - rewrites: One rewrite per worker thread; each is called from one thread at a time,
    ///     for one record after another, so it may keep scratch state.
    /// - Returns: What was reclaimed.
    /// - Throws: ``StoreError`` `.readOnly`, `.poisoned`, `.io`, or what a rewrite throws.
    @discardableResult
    package func compact(
        progress: ((Double) -> Void)?,
        rewriting rewrites: [RecordRewrite]?
    ) throws -> CompactionReport {
        lock.lock()
        defer { lock.unlock() }
        try checkWritable()
        if lacksUpgrade {
            throw StoreError(
                .invalidArgument,
                "records in an older model's layout need the engine's translation to be "
                    + "compacted: install it (installPayloadUpgrade), as ObjectLog's engine does "
                    + "with the model the store records",
                path: path
            )
        }

        let bytesBefore = endOffset
        let temporary = path + LogFormat.compactionSuffix
        let copy = try writeCopy(
            to: temporary,
            generation: header.generation + 1,
            progress: progress,
            rewrites: rewrites,
            mappingOffsets: true
        )
        try fileSystem.rename(temporary, to: path)
        try fileSystem.syncDirectory(directoryOf(path))
        let newHeader = copy.header
        let newLive = copy.live
        let referenced = copy.referencedBlobs
        let commitChecksum = copy.commitChecksum
        let newEnd = copy.end
        compactionMaps.append(
            CompactionMap(
                fromGeneration: header.generation,
                old: copy.oldOffsets,
                new: copy.newOffsets,
                end: newEnd
            )
        )
        // Offsets older than a few compactions are not translated (a save of objects loaded
        // that long ago reports a conflict instead).
        if compactionMaps.count > 4 { compactionMaps.removeFirst() }

        // The new file is the store now; switch to it.
        let newFile = try fileSystem.open(path, mode: .readWrite)
        file.close()
        file = newFile
        header = newHeader
        live = newLive
        liveRecordBytes = copy.recordBytes
        metadataOffset = 0
        lastCommitChecksum = commitChecksum
        endOffset = newEnd
        try writeIndex()

        var blobsRemoved = 0
        var blobBytesRemoved: UInt64 = 0
        let directory = path + LogFormat.blobsSuffix
        for name in try fileSystem.contents(ofDirectory: directory) {
            guard let id = BlobID(hex: name), !referenced.contains(id) else { continue }
            let blobPath = directory + "/" + name
            if let blob = try? fileSystem.open(blobPath, mode: .read) {
                blobBytesRemoved += (try? blob.size()) ?? 0
                blob.close()
            }
            try fileSystem.remove(blobPath)
            blobsRemoved += 1
        }
        if blobsRemoved > 0 { try fileSystem.syncDirectory(directory) }
        progress?(1)
        return CompactionReport(
            bytesBefore: bytesBefore,
            bytesAfter: newEnd,
            objects: newLive.count,
            blobsRemoved: blobsRemoved,
            blobBytesRemoved: blobBytesRemoved,
            generation: newHeader.generation
        )
    }

    /// Writes the live objects, with every record offered to `rewrites` first and
    /// `transaction` folded in as if it had been committed before, to a new store at `target`
    /// (the next generation, with its index), leaving this store as it is.
    ///
    /// A compaction into another file: the engine's rewriting migration stages write the
    /// migrated store beside the old one, which stays untouched (and readable by the old
    /// version) until the new one replaces it. The store may be open read-only; records in an
    /// older layout need its translation installed, as for ``compact(progress:)``.
    ///
    /// - Parameters:
    ///   - target: The new store's path; a file there is replaced.
    ///   - transaction: Puts, deletes and metadata to fold in (keys from
    ///     ``allocateKeys(_:)``); the copy counts it as one more transaction.
    ///   - progress: Called now and then with the fraction done, from 0 to 1.
    ///   - rewrites: One rewrite per worker thread, as for ``compact(progress:rewriting:)``.
    /// - Returns: The number of live objects in the copy.
    /// - Throws: ``StoreError`` `.invalidArgument`, `.poisoned`, `.io`, or what a rewrite
    ///   throws; the copy is then removed.
    package func writeCompactedCopy(
        to target: String,
        folding transaction: Transaction,
        progress: ((Double) -> Void)?,
        rewriting rewrites: [RecordRewrite]
    ) throws -> Int {
        lock.lock()
        defer { lock.unlock() }
        try checkOpen()
        try checkCopyable()
        let copy = try writeCopy(
            to: target,
            generation: header.generation + 1,
            progress: progress,
            rewrites: rewrites,
            folding: transaction
        )
        do {
            let index = StoreIndex(
                storeUUID: copy.header.storeUUID,
                generation: copy.header.generation,
                coveredLength: copy.end,
                lastCommitChecksum: copy.commitChecksum,
                lastNumber: copy.header.baseTransactionCount,
                nextKey: copy.header.nextKey,
                metadataOffset: 0,
                liveBytes: copy.recordBytes,
                entries: copy.live.sortedEntries()
            )
            let bytes = try writeIndex(index, besideStoreAt: target)
            // The copy is opened next (a migration's new store): its directory goes with it.
            var counts = EntityCounter()
            copy.live.forEachEntry { counts.add($1.entity, 1) }
            IndexHandover.shared.offer(copy.live, counts: counts, index: index, encoded: bytes)
        } catch {
            try? fileSystem.remove(target)
            throw error
        }
        progress?(1)
        return copy.live.count
    }

    /// A copy of the live state written to a new file.
    struct Copy {
        var header: StoreHeader
        var live: KeyDirectory
        var recordBytes: UInt64
        var referencedBlobs: Set<BlobID>
        var commitChecksum: UInt32
        var end: UInt64
        /// Old and new offsets of the copied records, in log order (empty unless asked for).
        var oldOffsets: [UInt64]
        var newOffsets: [UInt64]
    }

    /// Writes the live objects and the latest metadata to a new synced file at `target`.
    ///
    /// They form one compaction commit. The caller holds `lock`.
    ///
    /// With `folded`, the copy holds the state as if that transaction had been committed
    /// first: its deletes and replaced objects are left out, its puts follow the copied
    /// records, and its metadata (when it has some) is the copy's.
    ///
    /// With `restored`, the puts of records the store lost (keys that are not live) are copied
    /// too, after the rest, as part of the copy: unlike a folded transaction they are not a
    /// transaction of their own, and its deletes and metadata are ignored.
    ///
    /// With `mappingOffsets`, the copy lists each copied record's old and new offsets (what a
    /// compaction of this store keeps to translate offsets loaded before it); a copy into
    /// another file has no use for them, and two 8-byte entries a record are memory that
    /// would be faulted in and filled for nothing.
    func writeCopy(
        to target: String,
        generation: UInt64,
        progress: ((Double) -> Void)?,
        rewrites: [RecordRewrite]? = nil,
        folding folded: Transaction? = nil,
        restoring restored: Transaction? = nil,
        mappingOffsets: Bool = false
    ) throws -> Copy {
        var newHeader = StoreHeader(
            storeUUID: header.storeUUID,
            generation: generation,
            nextKey: nextKey,
            baseTransactionCount: lastNumber + (folded == nil ? 0 : 1),
            metadata: folded?.metadata ?? currentMetadata
        )
        let headerBytes = newHeader.encoded()
        let output = try fileSystem.open(target, mode: .create(permissions: options.fileMode))
        var newLive = KeyDirectory(minimumCapacity: live.count)
        var recordBytes: UInt64 = 0
        var referenced: Set<BlobID> = []
        // The output is written a window behind: each window's write runs while the next
        // window's records are checked and copied.
        let behind = WriteBehind(output)
        do {
            try output.truncate(to: 0)
            try output.write(headerBytes, at: 0)
            var position = UInt64(headerBytes.count)
            var items: [(key: ObjectKey, location: RecordLocation)] = []
            items.reserveCapacity(live.count)
            // Only the live keys the folded transaction deletes or replaces are left out. Its
            // inserts are new keys, normally none of them live (a migration folds in the
            // records of its model version): with no other change, no key is looked up.
            let changed = Set(
                (folded?.entries ?? []).lazy.filter { !$0.isInsert || self.live[$0.key] != nil }
                    .map(\.key)
            )
            if !changed.isEmpty {
                live.forEachEntry { key, location in
                    if !changed.contains(key) { items.append((key, location)) }
                }
            } else {
                live.forEachEntry { items.append(($0, $1)) }
            }
            items.sort { $0.location.offset < $1.location.offset }
            // A patched object is written as a put of its merged value, where its patch was.
            var merged: [ObjectKey: (value: [UInt8], blobs: [BlobID])] = [:]
            if items.contains(where: { $0.location.isPatch }) {
                guard let merge = installedPatchMerge else {
                    throw StoreError(
                        .invalidArgument,
                        "objects stored as patches need the engine's merge to be copied: "
                            + "install it (installPatchMerge), as ObjectLog's engine does with "
                            + "the model the store records",
                        path: path
                    )
                }
                merged = try mergedPatches(of: items, merge: merge, file: file, end: endOffset)
            }
            if folded?.hasPatch == true {
                throw StoreError(
                    .invalidArgument,
                    "a transaction folded into a copy holds puts and deletes only",
                    path: path
                )
            }
            var buffer = ByteWriter(capacity: 8 << 20)
            var copied = 0
            var oldOffsets: [UInt64] = []
            var newOffsets: [UInt64] = []
            if mappingOffsets {
                oldOffsets.reserveCapacity(items.count)
                newOffsets.reserveCapacity(items.count)
            }
            // Records are read through an 8 MiB window (one pread per record made compaction
            // run at a tenth of the disk's write speed) and copied verbatim: a record's bytes
            // do not depend on where it lies, and its checksum is verified on the way.
            // One buffer for every window: a fresh 8 MiB array per window costs its page faults
            // again each time. `windowCount` bytes of it hold the file from `windowStart`.
            var window: [UInt8] = []
            var windowCount = 0
            var windowStart: UInt64 = 0
            let windowSize = 8 << 20
            // Records keep their bytes when the file already has the layout written now; a
            // format 1 file's records are re-framed (compaction upgrades it to format 2).
            let sourceLayout = header.layout
            let layout = newHeader.layout
            // Records in an older layout of the engine's values are written in the current one:
            // the new file is a later generation, where nothing marks a record as older.
            let upgrade = activeUpgrade
            /// Reads the window from `offset`, which must hold at least `total` bytes.
            func readWindow(at offset: UInt64, holding total: Int) throws {
                let wanted = max(windowSize, total)
                if window.count < wanted { window = [UInt8](repeating: 0, count: wanted) }
                windowCount = try window.withUnsafeMutableBytes { buffer in
                    try file.read(
                        into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<wanted]),
                        at: offset
                    )
                }
                windowStart = offset
                guard windowCount >= total else {
                    throw StoreError(
                        .corrupt,
                        "record runs past the end of the file",
                        path: path,
                        offset: offset
                    )
                }
            }
            // With rewrites, each window's records are checked, rewritten (or copied) and framed
            // by the workers; this thread only places them.
            var run = RewrittenRun()
            var next = 0
            while let rewrites, next < items.count {
                try readWindow(
                    at: items[next].location.offset,
                    holding: Int(items[next].location.length)
                )
                try window.withUnsafeBytes { bytes in
                    try rewriteRun(
                        into: &run,
                        items,
                        from: next,
                        window: UnsafeRawBufferPointer(rebasing: bytes[..<windowCount]),
                        windowStart: windowStart,
                        layout: sourceLayout,
                        newLayout: layout,
                        upgrade: upgrade,
                        merged: merged,
                        rewrites: rewrites
                    )
                }
                // Each part's output holds its records, framed, in log order.
                for part in run.parts.indices {
                    let base = position + UInt64(buffer.count)
                    var previous = 0
                    for slot in run.parts[part] {
                        let item = items[next + slot]
                        let end = run.ends[slot]
                        let newOffset = base + UInt64(previous)
                        if mappingOffsets {
                            oldOffsets.append(item.location.offset)
                            newOffsets.append(newOffset)
                        }
                        newLive.updateValue(
                            RecordLocation(
                                entity: item.location.entity,
                                offset: newOffset,
                                length: UInt32(end - previous)
                            ),
                            forKey: item.key
                        )
                        previous = end
                    }
                    recordBytes += UInt64(previous)
                    run.outputs[part].withUnsafeBytes { buffer.append(contentsOf: $0) }
                    if !run.blobs[part].isEmpty { referenced.formUnion(run.blobs[part]) }
                }
                next += run.ends.count
                copied = next
                if buffer.count >= 8 << 20 {
                    let count = buffer.count
                    try behind.write(&buffer, at: position)
                    position += UInt64(count)
                    progress?(Double(copied) / Double(max(items.count, 1)))
                }
            }
            for item in items where rewrites == nil {
                let offset = item.location.offset
                let total = Int(item.location.length)
                let newStart = buffer.count
                let blobs: [BlobID]
                if item.location.isPatch, let object = merged[item.key] {
                    try object.value.withUnsafeBytes { value in
                        try Self.appendMerged(
                            value,
                            key: item.key,
                            entity: item.location.entity,
                            blobs: object.blobs,
                            offset: offset,
                            layout: layout,
                            upgrade: upgrade,
                            into: &buffer
                        )
                    }
                    blobs = object.blobs
                } else {
                    if !(offset >= windowStart
                        && offset + UInt64(total) <= windowStart + UInt64(windowCount))
                    {
                        try readWindow(at: offset, holding: total)
                    }
                    let at = Int(offset - windowStart)
                    blobs = try window.withUnsafeBytes { bytes in
                        let record = UnsafeRawBufferPointer(rebasing: bytes[at..<(at + total)])
                        let (frame, payload, contents) = try checkedPut(
                            record,
                            key: item.key,
                            offset: offset,
                            layout: sourceLayout
                        )
                        let blobs = contents.blobs(in: payload)
                        try Self.appendCopy(
                            of: record,
                            frame: frame,
                            value: UnsafeRawBufferPointer(
                                rebasing: payload[contents.valueStart...]
                            ),
                            blobs: blobs,
                            offset: offset,
                            from: sourceLayout,
                            to: layout,
                            upgrade: upgrade,
                            into: &buffer
                        )
                        return blobs
                    }
                }
                referenced.formUnion(blobs)
                let newLength = buffer.count - newStart
                let newOffset = position + UInt64(newStart)
                if mappingOffsets {
                    oldOffsets.append(offset)
                    newOffsets.append(newOffset)
                }
                newLive.updateValue(
                    RecordLocation(
                        entity: item.location.entity,
                        offset: newOffset,
                        length: UInt32(newLength)
                    ),
                    forKey: item.key
                )
                recordBytes += UInt64(newLength)
                copied += 1
                if buffer.count >= 8 << 20 {
                    let count = buffer.count
                    try behind.write(&buffer, at: position)
                    position += UInt64(count)
                    progress?(Double(copied) / Double(max(items.count, 1)))
                }
            }
            var recordCount = items.count
            // The folded transaction's puts, then the restored records: both new keys.
            for added in [folded, restored] {
                guard let added else { continue }
                added.records.withUnsafeBytes { records in
                    for (index, entry) in added.entries.enumerated() where !entry.isDelete {
                        let newStart = buffer.count
                        let blobs = added.blobs(ofEntry: index)
                        layout.appendPut(
                            key: entry.key,
                            entity: entry.entity,
                            isInsert: entry.isInsert,
                            blobs: blobs,
                            value: UnsafeRawBufferPointer(rebasing: records[entry.valueRange]),
                            into: &buffer
                        )
                        referenced.formUnion(blobs)
                        let newLength = buffer.count - newStart
                        newLive.updateValue(
                            RecordLocation(
                                entity: entry.entity,
                                offset: position + UInt64(newStart),
                                length: UInt32(newLength)
                            ),
                            forKey: entry.key
                        )
                        recordBytes += UInt64(newLength)
                        recordCount += 1
                    }
                }
            }
            let beforePadding = buffer.count
            layout.appendPaddingBeforeCommit(base: position, into: &buffer)
            if buffer.count != beforePadding { recordCount += 1 }
            let commit = CommitPayload(
                timestampMicroseconds: CommitPayload.now(),
                firstRecordOffset: UInt64(headerBytes.count),
                recordCount: UInt32(recordCount),
                inserted: 0,
                updated: 0,
                deleted: 0,
                metadataOffset: 0,
                nextKey: nextKey
            )
            let checksum = layout.appendCommit(
                number: 0,
                flags: CommitFlags.compaction,
                commit,
                into: &buffer
            )
            try behind.finish()
            try buffer.withUnsafeBytes { try output.write($0, at: position) }
            let end = position + UInt64(buffer.count)
            try output.sync()
            output.close()
            return Copy(
                header: newHeader,
                live: newLive,
                recordBytes: recordBytes,
                referencedBlobs: referenced,
                commitChecksum: checksum,
                end: end,
                oldOffsets: oldOffsets,
                newOffsets: newOffsets
            )
        } catch {
            try? behind.finish()
            output.close()
            try? fileSystem.remove(target)
            throw error
        }
    }

    /// Appends a checked put record as compaction copies it: translated if it is older than the
    /// upgrade's boundary, verbatim when the layouts agree, framed anew otherwise.
    @inline(__always)
    static func appendCopy(
        of record: UnsafeRawBufferPointer,
        frame: RecordFrame,
        value: UnsafeRawBufferPointer,
        blobs: [BlobID],
        offset: UInt64,
        from sourceLayout: RecordLayout,
        to layout: RecordLayout,
        upgrade: ActiveUpgrade?,
        into output: inout ByteWriter
    ) throws {
        func put(_ value: UnsafeRawBufferPointer) {
            layout.appendPut(
                key: frame.key,
                entity: frame.entity,
                isInsert: frame.flags & PutFlags.insert != 0,
                blobs: blobs,
                value: value,
                into: &output
            )
        }
        if let upgrade, offset < upgrade.boundary {
            try upgrade.deliver(value, entity: frame.entity, offset: offset) { put($0) }
        } else if sourceLayout == layout {
            output.append(contentsOf: record)
        } else {
            put(value)
        }
    }

    /// Appends the put of a patched object as compaction writes it: its merged value (in the
    /// layout of its patch's record at `offset`), translated if that is older than the upgrade's
    /// boundary, with its base's blobs and without the insert flag.
    static func appendMerged(
        _ value: UnsafeRawBufferPointer,
        key: ObjectKey,
        entity: EntityTag,
        blobs: [BlobID],
        offset: UInt64,
        layout: RecordLayout,
        upgrade: ActiveUpgrade?,
        into output: inout ByteWriter
    ) throws {
        func put(_ value: UnsafeRawBufferPointer) {
            layout.appendPut(
                key: key,
                entity: entity,
                isInsert: false,
                blobs: blobs,
                value: value,
                into: &output
            )
        }
        if let upgrade, offset < upgrade.boundary {
            try upgrade.deliver(value, entity: entity, offset: offset) { put($0) }
        } else {
            put(value)
        }
    }

    /// The records of a run, checked, rewritten or copied, and framed in the new file's layout
    /// by the workers, in contiguous parts that they take in turn.
    struct RewrittenRun {
        /// Per part: its slots (indices into the run).
        var parts: [Range<Int>] = []
        /// Per slot: where its record ends in its part's output.
        var ends: [Int] = []
        /// Per part: its records, one after the other.
        var outputs: [ByteWriter] = []
        /// Per part: the blobs its records refer to.
        var blobs: [[BlobID]] = []
    }

    /// Records in one part of a rewritten run: a few milliseconds of rewriting, so that a worker
    /// the host stops for a while holds up the others for at most that long at the run's end
    /// (with one share per worker, the other workers waited out the whole stop).
    static var rewritePartSize: Int { 8_192 }

    /// The records `items[start...]` that lie wholly in `window`, each checked, then rewritten
    /// (or, where its rewrite declines, copied as compaction copies it) and framed, by the
    /// rewrites at once.
    ///
    /// An error of the earliest part that failed is thrown.
    private func rewriteRun(
        into run: inout RewrittenRun,
        _ items: [(key: ObjectKey, location: RecordLocation)],
        from start: Int,
        window: UnsafeRawBufferPointer,
        windowStart: UInt64,
        layout: RecordLayout,
        newLayout: RecordLayout,
        upgrade: ActiveUpgrade?,
        merged: [ObjectKey: (value: [UInt8], blobs: [BlobID])],
        rewrites: [RecordRewrite]
    ) throws {
        let windowEnd = windowStart + UInt64(window.count)
        var end = start
        while end < items.count, items[end].location.offset >= windowStart,
            items[end].location.offset + UInt64(items[end].location.length) <= windowEnd
        {
            end += 1
        }
        let count = end - start
        // Small runs are not worth a thread.
        let workers = max(1, min(rewrites.count, count / 256))
        let partCount = max(workers, (count + Self.rewritePartSize - 1) / Self.rewritePartSize)
        run.parts = (0..<partCount).map { part in
            (count * part / partCount)..<(count * (part + 1) / partCount)
        }
        // The buffers of the run before are reused: fresh ones of a window's size each time
        // cost as much in page faults as the rewriting.
        run.ends.removeAll(keepingCapacity: true)
        run.ends.append(contentsOf: repeatElement(0, count: count))
        while run.outputs.count < partCount { run.outputs.append(ByteWriter()) }
        while run.blobs.count < partCount { run.blobs.append([]) }
        var failures = [(any Error)?](repeating: nil, count: partCount)
        let parts = run.parts
        // The next part to take; each worker takes one at a time until none is left.
        let taken = LockedValue(0)
        run.ends.withUnsafeMutableBufferPointer { ends in
            run.outputs.withUnsafeMutableBufferPointer { outputs in
                run.blobs.withUnsafeMutableBufferPointer { blobs in
                    failures.withUnsafeMutableBufferPointer { failures in
                        // Each part's elements of the buffers are written by the worker that
                        // took it, alone.
                        nonisolated(unsafe) let ends = ends
                        nonisolated(unsafe) let outputs = outputs
                        nonisolated(unsafe) let blobs = blobs
                        nonisolated(unsafe) let failures = failures
                        nonisolated(unsafe) let bytes = window
                        DispatchQueue.concurrentPerform(iterations: workers) { worker in
                            while true {
                                let part = taken.withLock { next in
                                    defer { next += 1 }
                                    return next
                                }
                                guard part < partCount else { return }
                                var framed = outputs[part]
                                outputs[part] = ByteWriter()
                                framed.removeAll()
                                var referenced = blobs[part]
                                blobs[part] = []
                                referenced.removeAll(keepingCapacity: true)
                                defer {
                                    outputs[part] = framed
                                    blobs[part] = referenced
                                }
                                do {
                                    try rewritePart(
                                        parts[part],
                                        of: items,
                                        from: start,
                                        window: bytes,
                                        windowStart: windowStart,
                                        layout: layout,
                                        newLayout: newLayout,
                                        upgrade: upgrade,
                                        merged: merged,
                                        rewrite: rewrites[worker],
                                        ends: ends,
                                        into: &framed,
                                        referencing: &referenced
                                    )
                                } catch {
                                    failures[part] = error
                                }
                            }
                        }
                    }
                }
            }
        }
        if let failure = failures.lazy.compactMap({ $0 }).first { throw failure }
    }

    /// Checks the records at `slots` of the run from `items[start]`, rewrites each (or, where
    /// its rewrite declines, copies it as compaction copies it) and frames it into `framed`,
    /// noting where each ends in `ends` and the blobs each refers to in `referenced`.
    private func rewritePart(
        _ slots: Range<Int>,
        of items: [(key: ObjectKey, location: RecordLocation)],
        from start: Int,
        window: UnsafeRawBufferPointer,
        windowStart: UInt64,
        layout: RecordLayout,
        newLayout: RecordLayout,
        upgrade: ActiveUpgrade?,
        merged: [ObjectKey: (value: [UInt8], blobs: [BlobID])],
        rewrite: RecordRewrite,
        ends: UnsafeMutableBufferPointer<Int>,
        into framed: inout ByteWriter,
        referencing referenced: inout [BlobID]
    ) throws {
        // (On an error, the part's buffer is dropped with the compaction.)
        var rewritten = RewrittenRecord(output: framed, layout: newLayout)
        framed = ByteWriter()
        for slot in slots {
            let item = items[start + slot]
            let offset = item.location.offset
            let blobs: [BlobID]
            if item.location.isPatch, let object = merged[item.key] {
                // A patched object: its merged value, in its patch's layout, as if stored so.
                try object.value.withUnsafeBytes { value in
                    try rewriteOne(
                        key: item.key,
                        entity: item.location.entity,
                        isInsert: false,
                        blobs: object.blobs,
                        value: value,
                        offset: offset,
                        rewrite: rewrite,
                        into: &rewritten
                    ) { output in
                        try Self.appendMerged(
                            value,
                            key: item.key,
                            entity: item.location.entity,
                            blobs: object.blobs,
                            offset: offset,
                            layout: newLayout,
                            upgrade: upgrade,
                            into: &output
                        )
                    }
                }
                blobs = object.blobs
            } else {
                let at = Int(offset - windowStart)
                let record = UnsafeRawBufferPointer(
                    rebasing: window[at..<(at + Int(item.location.length))]
                )
                let (frame, payload, contents) = try checkedPut(
                    record,
                    key: item.key,
                    offset: offset,
                    layout: layout
                )
                let value = UnsafeRawBufferPointer(rebasing: payload[contents.valueStart...])
                blobs = contents.blobs(in: payload)
                try rewriteOne(
                    key: frame.key,
                    entity: frame.entity,
                    isInsert: frame.flags & PutFlags.insert != 0,
                    blobs: blobs,
                    value: value,
                    offset: offset,
                    rewrite: rewrite,
                    into: &rewritten
                ) { output in
                    try Self.appendCopy(
                        of: record,
                        frame: frame,
                        value: value,
                        blobs: blobs,
                        offset: offset,
                        from: layout,
                        to: newLayout,
                        upgrade: upgrade,
                        into: &output
                    )
                }
            }
            // (Appending no blobs to an array with no room yet still costs a new buffer.)
            if !blobs.isEmpty { referenced.append(contentsOf: blobs) }
            ends[slot] = rewritten.output.count
        }
        framed = rewritten.output
    }

    /// Offers one object's value, stored at `offset`, to `rewrite`, which frames its new value
    /// into `rewritten`; where the rewrite declines, `copy` frames the object as compaction
    /// would.
    @inline(__always)
    private func rewriteOne(
        key: ObjectKey,
        entity: EntityTag,
        isInsert: Bool,
        blobs: [BlobID],
        value: UnsafeRawBufferPointer,
        offset: UInt64,
        rewrite: RecordRewrite,
        into rewritten: inout RewrittenRecord,
        copy: (inout ByteWriter) throws -> Void
    ) throws {
        rewritten.key = key
        rewritten.entity = entity
        rewritten.isInsert = isInsert
        rewritten.blobs = blobs
        rewritten.puts = 0
        let isRewritten = try rewrite(key, entity, offset, value, &rewritten)
        guard rewritten.puts == (isRewritten ? 1 : 0) else {
            throw StoreError(
                .invalidArgument,
                "the rewrite of object #\(key) returned \(isRewritten) after putting "
                    + "\(rewritten.puts) values",
                path: path
            )
        }
        if !isRewritten { try copy(&rewritten.output) }
    }

    /// Salvages a damaged store: writes what precedes the damage (the live objects and metadata
    /// as of the last valid commit before it) into a new, valid store at `output`, with copies
    /// of the external blobs those objects refer to.
    ///
    /// The damaged store is opened read-only and never modified.
    ///
    /// - Returns: The damage found (nil if the store was not damaged) and the number of objects
    ///   saved.
    /// - Throws: ``StoreError`` `.notFound`, `.notAStore`, `.invalidArgument` (the output
    ///   exists), `.io`.
    public static func recover(
        path: String,
        to output: String,
        upgrade: ((LogStore) throws -> PayloadUpgrade?)? = nil,
        merge: ((LogStore) throws -> PatchMerge?)? = nil
    ) throws -> (damage: StoreDamage?, objects: Int) {
        var options = StoreOptions()
        options.salvage = true
        options.usesIndex = false
        let source = try LogStore.open(path: path, options: options)
        defer { try? source.close() }
        // The copy is a later generation, where older records would pass for current ones.
        if let upgrade { source.installPayloadUpgrade(try upgrade(source)) }
        // Patched objects are written as puts of their merged values.
        if let merge { source.installPatchMerge(try merge(source)) }
        try source.locked { try source.checkCopyable() }
        let fileSystem = source.fileSystem
        guard fileSystem.kind(of: output) == .missing else {
            throw StoreError(
                .invalidArgument,
                "the output already exists; choose a new path",
                path: output
            )
        }
        source.lock.lock()
        defer { source.lock.unlock() }
        let temporary = output + LogFormat.creationSuffix
        let copy = try source.writeCopy(
            to: temporary,
            generation: source.header.generation + 1,
            progress: nil
        )
        if !copy.referencedBlobs.isEmpty {
            let blobs = output + LogFormat.blobsSuffix
            try fileSystem.makeDirectory(blobs, permissions: 0o700)
            for id in copy.referencedBlobs {
                guard let data = try? source.readBlob(id) else { continue }
                let file = try fileSystem.open(
                    blobs + "/" + id.hex,
                    mode: .create(permissions: 0o600)
                )
                try data.withUnsafeBytes { try file.write($0, at: 0) }
                try file.sync()
                file.close()
            }
            try fileSystem.syncDirectory(blobs)
        }
        try fileSystem.rename(temporary, to: output)
        try fileSystem.syncDirectory(directoryOf(output))
        return (source.damageAtOpen, copy.live.count)
    }

    // MARK: - Offsets across compactions

    /// Translates a record offset seen in an earlier generation of the file into the current one.
    ///
    /// Compaction copies the live records in log order, so positions keep their order. With
    /// `exact`, `offset` is a record's offset: the result is where that record is now, or nil
    /// if it was no longer live when the file was compacted. Without `exact`, `offset` is a
    /// bound: records that were before it are before the result, records written after it
    /// (including every record written since the compaction) are at or after the result.
    /// Nil also when the generation is older than the compactions remembered.
    package func translateOffset(_ offset: UInt64, from generation: UInt64, exact: Bool) -> UInt64?
    {
        locked {
            var position = offset
            var current = generation
            while current < header.generation {
                guard let map = compactionMaps.first(where: { $0.fromGeneration == current }) else {
                    return nil
                }
                // The first old position at or after `position`.
                var low = 0
                var high = map.old.count
                while low < high {
                    let middle = (low + high) / 2
                    if map.old[middle] < position { low = middle + 1 } else { high = middle }
                }
                if exact {
                    guard low < map.old.count, map.old[low] == position else { return nil }
                    position = map.new[low]
                } else {
                    position = low < map.old.count ? map.new[low] : map.end
                }
                current += 1
            }
            return current == header.generation ? position : nil
        }
    }
}
