import Foundation

/// Copies the live records of a store into a new file, in log order: checked, translated from
/// an older layout or merged with their patches where they must be, offered to the engine's
/// rewrites when a migration asks, and written as one compaction commit.
///
/// A compaction (``LogStore/compact(progress:)``), a migration's copy into another file and a
/// salvage each make one `Compactor` of the store, under its lock, and write one copy; the
/// store then switches to the new file, hands it to the engine, or leaves it beside the
/// damaged one.
// `@unchecked Sendable`: the workers of a rewritten run only read a compactor, while the
// thread that made it waits for them, holding the store's lock.
struct Compactor: @unchecked Sendable {
    /// The store copied, whose lock the caller holds while the compactor lives.
    let store: LogStore
    /// The store's live state at the start of the copy.
    let state: LiveState
    let file: any StoreFile
    let fileSystem: any FileSystem
    let fileMode: UInt32
    /// The translation of records in an older layout, when the file has such records.
    let upgrade: ActiveUpgrade?
    /// The engine's merge of patches into their bases, if installed.
    let patchMerge: PatchMerge?

    var path: String { store.path }

    /// A compactor of `store`, whose lock the caller holds.
    init(copying store: LogStore) {
        self.store = store
        state = store.state
        file = store.file
        fileSystem = store.fileSystem
        fileMode = store.options.fileMode
        upgrade = store.activeUpgrade
        patchMerge = store.installedPatchMerge
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
        rewrites: [LogStore.RecordRewrite]? = nil,
        folding folded: Transaction? = nil,
        restoring restored: Transaction? = nil,
        mappingOffsets: Bool = false
    ) throws -> Copy {
        var newHeader = StoreHeader(
            storeUUID: state.header.storeUUID,
            generation: generation,
            nextKey: state.nextKey,
            baseTransactionCount: state.lastNumber + (folded == nil ? 0 : 1),
            metadata: folded?.metadata ?? state.currentMetadata
        )
        let headerBytes = newHeader.encoded()
        let output = try fileSystem.open(target, mode: .create(permissions: fileMode))
        var newLive = KeyDirectory(minimumCapacity: state.live.count)
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
            items.reserveCapacity(state.live.count)
            // Only the live keys the folded transaction deletes or replaces are left out. Its
            // inserts are new keys, normally none of them live (a migration folds in the
            // records of its model version): with no other change, no key is looked up.
            let changed = Set(
                (folded?.entries ?? []).lazy.filter { !$0.isInsert || state.live[$0.key] != nil }
                    .map(\.key)
            )
            if !changed.isEmpty {
                state.live.forEachEntry { key, location in
                    if !changed.contains(key) { items.append((key, location)) }
                }
            } else {
                state.live.forEachEntry { items.append(($0, $1)) }
            }
            items.sort { $0.location.offset < $1.location.offset }
            // A patched object is written as a put of its merged value, where its patch was.
            var merged: [ObjectKey: (value: [UInt8], blobs: [BlobID])] = [:]
            if items.contains(where: { $0.location.isPatch }) {
                guard let merge = patchMerge else {
                    throw StoreError(
                        .invalidArgument,
                        "objects stored as patches need the engine's merge to be copied: "
                            + "install it (installPatchMerge), as ObjectLog's engine does with "
                            + "the model the store records",
                        path: path
                    )
                }
                merged = try store.mergedPatches(
                    of: items,
                    merge: merge,
                    file: file,
                    end: state.endOffset
                )
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
            // Records are read through an 8 MiB window (one pread per record would be a system
            // call for every few dozen bytes) and copied verbatim: a record's bytes do not
            // depend on where it lies, and its checksum is verified on the way.
            // One buffer for every window: a fresh 8 MiB array per window costs its page faults
            // again each time. `windowCount` bytes of it hold the file from `windowStart`.
            var window: [UInt8] = []
            var windowCount = 0
            var windowStart: UInt64 = 0
            let windowSize = 8 << 20
            // Records keep their bytes when the file already has the layout written now; a
            // format 1 file's records are re-framed (compaction upgrades it to format 2).
            let sourceLayout = state.header.layout
            let layout = newHeader.layout
            // Records in an older layout of the engine's values are written in the current one:
            // the new file is a later generation, where nothing marks a record as older.
            let upgrade = self.upgrade
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
                        let (frame, payload, contents) = try store.checkedPut(
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
                nextKey: state.nextKey
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
}
