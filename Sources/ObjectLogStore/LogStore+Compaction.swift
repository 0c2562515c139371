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
        lock.lock()
        defer { lock.unlock() }
        try checkWritable()

        let bytesBefore = endOffset
        let temporary = path + LogFormat.compactionSuffix
        let copy = try writeCopy(
            to: temporary,
            generation: header.generation + 1,
            progress: progress
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

    /// A copy of the live state written to a new file.
    struct Copy {
        var header: StoreHeader
        var live: KeyDirectory
        var recordBytes: UInt64
        var referencedBlobs: Set<BlobID>
        var commitChecksum: UInt32
        var end: UInt64
        /// Old and new offsets of the copied records, in log order.
        var oldOffsets: [UInt64]
        var newOffsets: [UInt64]
    }

    /// Writes the live objects and the latest metadata to a new synced file at `target`.
    ///
    /// They form one compaction commit. The caller holds `lock`.
    func writeCopy(
        to target: String,
        generation: UInt64,
        progress: ((Double) -> Void)?
    ) throws -> Copy {
        var newHeader = StoreHeader(
            storeUUID: header.storeUUID,
            generation: generation,
            nextKey: nextKey,
            baseTransactionCount: lastNumber,
            metadata: currentMetadata
        )
        let headerBytes = newHeader.encoded()
        let output = try fileSystem.open(target, mode: .create(permissions: options.fileMode))
        var newLive = KeyDirectory(minimumCapacity: live.count)
        var recordBytes: UInt64 = 0
        var referenced: Set<BlobID> = []
        do {
            try output.truncate(to: 0)
            try output.write(headerBytes, at: 0)
            var position = UInt64(headerBytes.count)
            var items: [(key: ObjectKey, location: RecordLocation)] = []
            items.reserveCapacity(live.count)
            live.forEachEntry { items.append(($0, $1)) }
            items.sort { $0.location.offset < $1.location.offset }
            var buffer = ByteWriter(capacity: 8 << 20)
            var copied = 0
            var oldOffsets: [UInt64] = []
            var newOffsets: [UInt64] = []
            oldOffsets.reserveCapacity(items.count)
            newOffsets.reserveCapacity(items.count)
            // Records are read through an 8 MiB window (one pread per record made compaction
            // run at a tenth of the disk's write speed) and copied verbatim: a record's bytes
            // do not depend on where it lies, and its checksum is verified on the way.
            var window: [UInt8] = []
            var windowStart: UInt64 = 0
            let windowSize = 8 << 20
            // Records keep their bytes when the file already has the layout written now; a
            // format 1 file's records are re-framed (compaction upgrades it to format 2).
            let sourceLayout = header.layout
            let layout = newHeader.layout
            for item in items {
                let offset = item.location.offset
                let total = Int(item.location.length)
                if !(offset >= windowStart
                    && offset + UInt64(total) <= windowStart + UInt64(window.count))
                {
                    window = try file.read(at: offset, count: max(windowSize, total))
                    windowStart = offset
                    guard window.count >= total else {
                        throw StoreError(
                            .corrupt,
                            "record runs past the end of the file",
                            path: path,
                            offset: offset
                        )
                    }
                }
                let at = Int(offset - windowStart)
                let newStart = buffer.count
                let blobs: [BlobID] = try window.withUnsafeBytes { bytes in
                    let record = UnsafeRawBufferPointer(rebasing: bytes[at..<(at + total)])
                    let (frame, payload, contents) = try checkedPut(
                        record,
                        key: item.key,
                        offset: offset,
                        layout: sourceLayout
                    )
                    let blobs = contents.blobs(in: payload)
                    if sourceLayout == layout {
                        buffer.append(contentsOf: record)
                    } else {
                        layout.appendPut(
                            key: frame.key,
                            entity: frame.entity,
                            isInsert: frame.flags & PutFlags.insert != 0,
                            blobs: blobs,
                            value: UnsafeRawBufferPointer(
                                rebasing: payload[contents.valueStart...]
                            ),
                            into: &buffer
                        )
                    }
                    return blobs
                }
                referenced.formUnion(blobs)
                let newLength = buffer.count - newStart
                let newOffset = position + UInt64(newStart)
                oldOffsets.append(offset)
                newOffsets.append(newOffset)
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
                    try buffer.withUnsafeBytes { try output.write($0, at: position) }
                    position += UInt64(buffer.count)
                    buffer.removeAll()
                    progress?(Double(copied) / Double(max(items.count, 1)))
                }
            }
            var recordCount = items.count
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
            output.close()
            try? fileSystem.remove(target)
            throw error
        }
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
        to output: String
    ) throws -> (damage: StoreDamage?, objects: Int) {
        var options = StoreOptions()
        options.salvage = true
        options.usesIndex = false
        let source = try LogStore.open(path: path, options: options)
        defer { try? source.close() }
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
