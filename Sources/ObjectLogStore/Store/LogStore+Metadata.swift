import Foundation

extension LogStore {
    /// Reads the latest committed metadata of the store at `path` without opening the store or
    /// replaying its objects (compare Core Data's `metadataForPersistentStore(ofType:at:)`).
    ///
    /// It reads the header, finds the last committed transaction by scanning back from the end
    /// of the file for a valid commit record whose transaction's records are all intact (a torn
    /// write can damage an earlier record of a transaction whose commit survived), and reads the
    /// metadata record that commit names, checking that the transaction holding it is intact
    /// too (FORMAT.md, section 5): the time taken grows with the size of those transactions,
    /// not with the number of objects.
    ///
    /// - Throws: `StoreError` `.notFound`, `.notAStore`, `.unsupportedVersion`, `.corrupt`, `.io`.
    public static func readMetadata(path: String) throws -> Metadata {
        try readMetadata(path: path, fileSystem: PosixFileSystem())
    }

    package static func readMetadata(path: String, fileSystem: any FileSystem) throws -> Metadata {
        try requireExistingStoreFile(path, fileSystem: fileSystem)
        let file = try fileSystem.open(path, mode: .read)
        defer { file.close() }
        let size = try file.size()
        let header = try StoreHeader.read(from: file, path: path, fileSize: size)
        let layout = header.layout
        let scanner = LogScanner(file: file, path: path, fileSize: size, header: header)
        let trailer = LogFormat.commitTrailer
        let lowest = UInt64(header.length + layout.commitRecordLength)
        var chunkEnd = size
        let chunk: UInt64 = 1 << 16
        // Metadata records found damaged or outside an intact transaction.
        var rejected: Set<UInt64> = []
        while chunkEnd >= lowest {
            let chunkStart = max(chunkEnd >= chunk ? chunkEnd - chunk : 0, UInt64(header.length))
            let bytes = try file.read(at: chunkStart, count: Int(chunkEnd - chunkStart))
            var index = bytes.count - trailer.count
            while index >= 0 {
                if bytes[index] == trailer[0],
                    bytes[index..<(index + trailer.count)].elementsEqual(trailer)
                {
                    let end = chunkStart + UInt64(index + trailer.count)
                    if end >= lowest, let commit = try scanner.commitRecord(endingAt: end),
                        try transactionIsIntact(
                            file: file,
                            layout: layout,
                            allowsPatches: header.allowsPatches,
                            commit: commit,
                            commitOffset: end - UInt64(layout.commitRecordLength)
                        )
                    {
                        if commit.metadataOffset == 0 { return header.metadata }
                        if !rejected.contains(commit.metadataOffset),
                            let metadata = try readCommittedMetadata(
                                file: file,
                                layout: layout,
                                allowsPatches: header.allowsPatches,
                                scanner: scanner,
                                offset: commit.metadataOffset,
                                limit: end
                            )
                        {
                            return metadata
                        }
                        rejected.insert(commit.metadataOffset)
                    }
                }
                index -= 1
            }
            guard chunkStart > UInt64(header.length) else { break }
            // Overlap by the trailer's length so a trailer across the boundary is still found.
            chunkEnd = chunkStart + UInt64(trailer.count) - 1
        }
        return header.metadata
    }

    /// Whether every record of the transaction `commit` (at `commitOffset`) ends is intact:
    /// frames, bounds, checksums and structure (a patch's base lying before it), as many as the
    /// commit counts, ending at the commit.
    ///
    /// The records are read a window of up to 1 MiB at a time and checked in memory (a read
    /// for each record's frame and another for the rest would be two system calls a record,
    /// and a batch update's transaction holds a small record for every object it changed).
    static func transactionIsIntact(
        file: any StoreFile,
        layout: RecordLayout,
        allowsPatches: Bool,
        commit: CommitPayload,
        commitOffset: UInt64
    ) throws -> Bool {
        var offset = commit.firstRecordOffset
        var count: UInt32 = 0
        var window: [UInt8] = []
        var windowStart: UInt64 = 0
        let tables = CRC32.lookupTables
        // Makes `[offset, offset + length)` available in the window; false if the transaction
        // or the file ends before.
        func ensure(_ length: Int) throws -> Bool {
            if offset >= windowStart, offset + UInt64(length) <= windowStart + UInt64(window.count)
            {
                return true
            }
            let wanted = Int(min(UInt64(max(1 << 20, length)), commitOffset - offset))
            window = try file.read(at: offset, count: wanted)
            windowStart = offset
            return window.count >= length
        }
        while offset < commitOffset {
            let remaining = commitOffset - offset
            let head = Int(min(UInt64(layout.maximumAnyFrameLength), remaining))
            guard try ensure(head) else { return false }
            let at = Int(offset - windowStart)
            let decoded = window.withUnsafeBytes {
                RecordFrame.decode(
                    UnsafeRawBufferPointer(rebasing: $0[at..<(at + head)]),
                    layout: layout
                )
            }
            // A patch in a file of format 1 or 2 is damage, as the scan calls it.
            guard case .frame(let frame) = decoded, frame.type != .commit,
                frame.type != .patch || allowsPatches, UInt64(frame.totalLength) <= remaining
            else { return false }
            let total = frame.totalLength
            guard try ensure(total) else { return false }
            let start = Int(offset - windowStart)
            let intact = window.withUnsafeBytes { bytes in
                let record = UnsafeRawBufferPointer(rebasing: bytes[start..<(start + total)])
                return checksumsMatch(
                    frame.checksum,
                    RecordFrame.checksum(of: record, tables: tables)
                )
                    && LogScanner.structuralProblem(
                        frame: frame,
                        payload: UnsafeRawBufferPointer(rebasing: record[frame.frameLength...]),
                        layout: layout
                    ) == nil
            }
            // A patch's base must lie before it, as the scan checks; whether the base is its
            // key's record is not checked (that needs the live state of a replay).
            guard intact,
                frame.type != .patch
                    || (frame.baseOffset <= offset
                        && UInt64(frame.baseLength) <= offset - frame.baseOffset)
            else { return false }
            offset += UInt64(total)
            count += 1
        }
        return offset == commitOffset && count == commit.recordCount
    }

    /// The dictionary of the metadata record at `offset`, if the record and the rest of its
    /// transaction are intact and that transaction is committed; nil otherwise.
    private static func readCommittedMetadata(
        file: any StoreFile,
        layout: RecordLayout,
        allowsPatches: Bool,
        scanner: LogScanner,
        offset: UInt64,
        limit: UInt64
    ) throws -> Metadata? {
        // Forward from the metadata record to its transaction's commit.
        var position = offset
        while position < limit {
            guard
                case .success(let (frame, _)) = try readRecord(
                    at: position,
                    file: file,
                    path: "",
                    layout: layout,
                    limit: limit
                )
            else { return nil }
            let end = position + UInt64(frame.totalLength)
            if frame.type == .commit {
                guard let commit = try scanner.commitRecord(endingAt: end),
                    commit.firstRecordOffset <= offset,
                    try transactionIsIntact(
                        file: file,
                        layout: layout,
                        allowsPatches: allowsPatches,
                        commit: commit,
                        commitOffset: position
                    )
                else { return nil }
                return try? readMetadataPayload(
                    file: file,
                    path: "",
                    layout: layout,
                    offset: offset,
                    limit: limit
                )
            }
            position = end
        }
        return nil
    }

    private static func readMetadataPayload(
        file: any StoreFile,
        path: String,
        layout: RecordLayout,
        offset: UInt64,
        limit: UInt64
    ) throws -> Metadata? {
        guard
            case .success(let (frame, record)) = try readRecord(
                at: offset,
                file: file,
                path: path,
                layout: layout,
                limit: limit
            ),
            frame.type == .metadata, Int(frame.payloadLength) <= LogFormat.maximumMetadataLength
        else { return nil }
        return try? MetadataCoding.decodeDictionary(Array(record[frame.frameLength...]))
    }
}

extension LogStore {
    /// The largest last transaction an open through the index checkpoint reads again.
    static let indexedTransactionCheckLimit: UInt64 = 4 << 20

    /// Checks, when a store opens through its index checkpoint, every record of the last
    /// transaction the index covers (up to ``indexedTransactionCheckLimit`` bytes of it).
    ///
    /// The commands replay the whole log and call damage in a transaction the index covers
    /// corruption; the engine, trusting the index, would not read that transaction's padding
    /// or superseded records and would show the newer state. Reading the last one again keeps
    /// the engine and the commands agreeing where a torn or damaged save is most likely, at
    /// the cost of one small read; a larger last transaction (a bulk load, a compaction) is
    /// checked record by record as its objects are read, and whole by `objectlog verify`.
    static func checkLastIndexedTransaction(
        file: any StoreFile,
        path: String,
        fileSize: UInt64,
        layout: RecordLayout,
        allowsPatches: Bool,
        end: UInt64
    ) throws {
        // Only its commit records are read: patches or not makes no difference.
        let scanner = LogScanner(
            file: file,
            path: path,
            fileSize: fileSize,
            layout: layout,
            allowsPatches: false
        )
        guard end >= UInt64(layout.commitRecordLength),
            let commit = try scanner.commitRecord(endingAt: end)
        else { return }
        let commitOffset = end - UInt64(layout.commitRecordLength)
        guard commit.firstRecordOffset < commitOffset,
            commitOffset - commit.firstRecordOffset <= indexedTransactionCheckLimit
        else { return }
        guard
            try !transactionIsIntact(
                file: file,
                layout: layout,
                allowsPatches: allowsPatches,
                commit: commit,
                commitOffset: commitOffset
            )
        else { return }
        throw StoreError(
            .corrupt,
            "a record of the last transaction the index checkpoint covers is damaged "
                + "(open read-only with salvage, or run `objectlog repair`)",
            path: path,
            offset: commit.firstRecordOffset
        )
    }
}
