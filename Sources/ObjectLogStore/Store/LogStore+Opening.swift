import Foundation

extension LogStore {
    static func create(path: String, options: StoreOptions) throws {
        let fileSystem = options.fileSystem
        var header = StoreHeader(
            storeUUID: UUID(),
            generation: 1,
            nextKey: 1,
            baseTransactionCount: 0,
            metadata: [:]
        )
        let bytes = header.encoded()
        // A new store appears whole or not at all.
        try bytes.withUnsafeBytes { bytes in
            try fileSystem.replaceAtomically(
                path,
                with: bytes,
                temporary: path + LogFormat.creationSuffix,
                permissions: options.fileMode
            )
        }
    }

    /// Removes what an interrupted creation, compaction or blob write left behind.
    static func removeLeftovers(path: String, fileSystem: any FileSystem) throws {
        for suffix in [
            LogFormat.creationSuffix, LogFormat.compactionSuffix,
            LogFormat.indexSuffix + LogFormat.creationSuffix,
        ] {
            try fileSystem.remove(path + suffix)
        }
        let blobs = path + LogFormat.blobsSuffix
        for name in try fileSystem.contents(ofDirectory: blobs) where name.hasSuffix(".tmp") {
            try fileSystem.remove(blobs + "/" + name)
        }
    }

    static func loadIndex(
        path: String,
        fileSystem: any FileSystem,
        header: StoreHeader,
        file: any StoreFile,
        fileSize: UInt64
    ) -> (StoreIndex, KeyDirectory, EntityCounter)? {
        guard fileSystem.kind(of: path + LogFormat.indexSuffix) == .regular,
            let indexFile = try? fileSystem.open(path + LogFormat.indexSuffix, mode: .read),
            let size = try? indexFile.size(), size <= UInt64(Int.max),
            size >= UInt64(StoreIndex.fixedLength + 4)
        else { return nil }
        defer { indexFile.close() }
        // An index this process has just written comes with its directory (a migration's new
        // store, opened after it is written).
        guard
            let (index, directory, counts) = IndexHandover.shared.take(
                for: indexFile,
                size: Int(size)
            )
                ?? mapIndex(indexFile, size: size)
                ?? decodeIndex(indexFile, size: Int(size)),
            index.storeUUID == header.storeUUID, index.generation == header.generation,
            index.coveredLength >= UInt64(header.length), index.coveredLength <= fileSize
        else { return nil }
        if index.coveredLength > UInt64(header.length) {
            // The index names the commit it ends at; the log must still have exactly that commit.
            let layout = header.layout
            let start = index.coveredLength - UInt64(layout.commitRecordLength)
            guard start >= UInt64(header.length),
                let checksumBytes = try? file.read(at: start, count: 4),
                checksumBytes.count == 4,
                checksumBytes.withUnsafeBytes({ UInt32(littleEndianBytesOf: $0, at: 0) })
                    == index.lastCommitChecksum,
                (try? LogScanner(file: file, path: path, fileSize: fileSize, header: header)
                    .commitRecord(endingAt: index.coveredLength)) != nil
            else { return nil }
        }
        return (index, directory, counts)
    }

    /// The directory of a version 5 or 4 index in `file` (`size` bytes), its slots mapped in place
    /// (or read, from a file that cannot be mapped); nil for another version, or an index
    /// whose header is not valid.
    private static func mapIndex(
        _ file: any StoreFile,
        size: UInt64
    ) -> (StoreIndex, KeyDirectory, EntityCounter)? {
        guard
            let header = DenseIndexFile.decodeHeader(
                fileSize: size,
                read: { offset, count in try? file.read(at: offset, count: count) }
            )
        else { return nil }
        if let descriptor = file.mappableDescriptor,
            let directory = KeyDirectory(
                mapping: descriptor,
                at: header.slotsOffset,
                slotCount: header.slotCount,
                count: header.count,
                checksums: header.pageChecksums,
                pageSize: header.pageSize
            )
        {
            return (header.index, directory, header.counts)
        }
        // Read, and checked whole, from a file that cannot be mapped.
        guard let bytes = try? file.read(at: header.slotsOffset, count: header.slotCount * 16),
            bytes.count == header.slotCount * 16
        else { return nil }
        var directory = KeyDirectory(
            minimumCapacity: header.count,
            keysBelow: header.index.nextKey
        )
        let valid = bytes.withUnsafeBytes { slots in
            DenseIndexFile.forEachLiveSlot(
                of: slots,
                checkedBy: header.pageChecksums,
                pageSize: header.pageSize
            ) {
                directory.insertUnique($0, $1)
                return true
            }
        }
        return valid && directory.count == header.count
            ? (header.index, directory, header.counts) : nil
    }

    /// Reads and decodes the index in `file` (`size` bytes); nil for one that is not valid.
    private static func decodeIndex(
        _ file: any StoreFile,
        size: Int
    ) -> (StoreIndex, KeyDirectory, EntityCounter)? {
        guard let bytes = try? file.read(at: 0, count: size) else { return nil }
        // Entries go straight into the keydir, sized from the count in the file (bounded by the
        // bytes present). The decoder checks keys are strictly ascending, so each is new.
        // Its keys lie below the next key it records, which sizes a dense directory (one that
        // would be too sparse for that many entries starts as a hash table).
        let declared = bytes.withUnsafeBytes { UInt64(littleEndianBytesOf: $0, at: 56) }
        let keysBelow = bytes.withUnsafeBytes { UInt64(littleEndianBytesOf: $0, at: 72) }
        let bounded = min(declared, UInt64(bytes.count / StoreIndex.minimumEntryLength))
        var directory = KeyDirectory(minimumCapacity: Int(bounded), keysBelow: keysBelow)
        var counts = EntityCounter()
        guard
            let index = StoreIndex.decode(
                bytes,
                visit: { key, location in
                    directory.insertUnique(key, location)
                    counts.add(location.entity, 1)
                }
            )
        else { return nil }
        return (index, directory, counts)
    }
}
