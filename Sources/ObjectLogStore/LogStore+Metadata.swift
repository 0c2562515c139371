import Foundation

extension LogStore {
    /// Reads the latest committed metadata of the store at `path` without opening the store or
    /// replaying its objects (compare Core Data's `metadataForPersistentStore(ofType:at:)`).
    ///
    /// It reads the header, finds the last valid commit record by scanning back from the end of
    /// the file, and reads the metadata record that commit names: the time taken does not grow
    /// with the number of objects.
    ///
    /// - Throws: ``StoreError`` `.notFound`, `.notAStore`, `.unsupportedVersion`, `.corrupt`, `.io`.
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
        let scanner = LogScanner(file: file, path: path, fileSize: size, layout: layout)
        let trailer = LogFormat.commitTrailer
        let lowest = UInt64(header.length + layout.commitRecordLength)
        var chunkEnd = size
        let chunk: UInt64 = 1 << 16
        while chunkEnd >= lowest {
            let chunkStart = max(chunkEnd >= chunk ? chunkEnd - chunk : 0, UInt64(header.length))
            let bytes = try file.read(at: chunkStart, count: Int(chunkEnd - chunkStart))
            var index = bytes.count - trailer.count
            while index >= 0 {
                if bytes[index] == trailer[0],
                    bytes[index..<(index + trailer.count)].elementsEqual(trailer)
                {
                    let end = chunkStart + UInt64(index + trailer.count)
                    if end >= lowest, let commit = try scanner.commitRecord(endingAt: end) {
                        if commit.metadataOffset == 0 { return header.metadata }
                        if let metadata = try? readMetadataPayload(
                            file: file,
                            path: path,
                            layout: layout,
                            offset: commit.metadataOffset,
                            limit: end
                        ) {
                            return metadata
                        }
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
