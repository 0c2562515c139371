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
    /// - Throws: `StoreError` `.readOnly`, `.poisoned`, `.io`.
    @discardableResult
    public func compact(progress: ((Double) -> Void)? = nil) throws -> CompactionReport {
        try compact(progress: progress, rewriting: nil as [RecordRewrite]?)
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
    /// - Throws: `StoreError` `.readOnly`, `.poisoned`, `.io`, or what a rewrite throws.
    @discardableResult
    package func compact(
        progress: ((Double) -> Void)?,
        rewriting rewrites: [RecordRewrite]?
    ) throws -> CompactionReport {
        lock.lock()
        defer { lock.unlock() }
        try checkWritable()
        // The copy is of the state, which then holds every commit written to the old file.
        try settlePendingCommits()
        if lacksUpgrade {
            throw StoreError(
                .invalidArgument,
                "records in an older model's layout need the engine's translation to be "
                    + "compacted: install it (installPayloadUpgrade), as ObjectLog's engine does "
                    + "with the model the store records",
                path: path
            )
        }

        // Every live record the directory names is copied: every page of a mapped index is
        // checked first, so that a damaged one cannot drop or misplace an object.
        _ = state.live.checkAllPages()
        try checkDirectory(state.live)
        let bytesBefore = state.endOffset
        // The history the retention keeps is copied out before the log stops holding it.
        let historyBlobs = try keepHistoryForCompaction()
        let temporary = path + LogFormat.compactionSuffix
        let copy = try Compactor(copying: self).writeCopy(
            to: temporary,
            generation: state.header.generation + 1,
            progress: progress,
            rewrites: rewrites,
            mappingOffsets: true
        )
        try fileSystem.rename(temporary, to: path)
        try fileSystem.syncDirectory(directoryOf(path))
        let newHeader = copy.header
        let newLive = copy.live
        let referenced = copy.referencedBlobs.union(historyBlobs)
        let commitChecksum = copy.commitChecksum
        let newEnd = copy.end
        state.compactionMaps.append(
            CompactionMap(
                fromGeneration: state.header.generation,
                old: copy.oldOffsets,
                new: copy.newOffsets,
                end: newEnd
            )
        )
        // Offsets older than a few compactions are not translated (a save of objects loaded
        // that long ago reports a conflict instead).
        if state.compactionMaps.count > 4 { state.compactionMaps.removeFirst() }

        // The new file is the store now; switch to it.
        let newFile = try fileSystem.open(path, mode: .readWrite)
        file.close()
        file = newFile
        state.header = newHeader
        state.live = newLive
        state.liveRecordBytes = copy.recordBytes
        state.metadataOffset = 0
        state.lastCommitChecksum = commitChecksum
        state.endOffset = newEnd
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
    /// - Throws: `StoreError` `.invalidArgument`, `.poisoned`, `.io`, or what a rewrite
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
        try settlePendingCommits()
        try checkCopyable()
        let copy = try Compactor(copying: self).writeCopy(
            to: target,
            generation: state.header.generation + 1,
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
                entries: []
            )
            var counts = EntityCounter()
            copy.live.forEachEntry { counts.add($1.entity, 1) }
            let (head, size) = try writeIndex(
                index,
                directory: copy.live,
                counts: counts,
                besideStoreAt: target
            )
            // The copy is opened next (a migration's new store): its directory goes with it.
            IndexHandover.shared.offer(
                copy.live,
                counts: counts,
                index: index,
                fileHead: head,
                size: size
            )
        } catch {
            try? fileSystem.remove(target)
            throw error
        }
        progress?(1)
        return copy.live.count
    }

    /// Salvages a damaged store: writes what precedes the damage (the live objects and metadata
    /// as of the last valid commit before it) into a new, valid store at `output`, with copies
    /// of the external blobs those objects refer to.
    ///
    /// The damaged store is opened read-only and never modified.
    ///
    /// - Returns: The damage found (nil if the store was not damaged) and the number of objects
    ///   saved.
    /// - Throws: `StoreError` `.notFound`, `.notAStore`, `.invalidArgument` (the output
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
        let copy = try Compactor(copying: source).writeCopy(
            to: temporary,
            generation: source.state.header.generation + 1,
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
            while current < state.header.generation {
                guard let map = state.compactionMaps.first(where: { $0.fromGeneration == current })
                else {
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
            return current == state.header.generation ? position : nil
        }
    }
}
