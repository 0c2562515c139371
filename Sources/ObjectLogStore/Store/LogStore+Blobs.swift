import Foundation

extension LogStore {
    /// The directory beside the store that holds its external blobs (`NAME.olog-blobs`).
    public var blobDirectory: String { path + LogFormat.blobsSuffix }

    /// Writes `bytes` as an external blob file beside the store and makes it durable; returns its
    /// content address.
    ///
    /// A blob is written to a temporary name, synced, renamed to its digest and the directory
    /// synced, so it exists whole before any commit names it. Writing the same content twice
    /// writes it once.
    ///
    /// - Throws: `StoreError` `.readOnly`, `.io`.
    public func writeBlob(_ bytes: Data) throws -> BlobID {
        if isReadOnly { throw StoreError(.readOnly, "the store is open read-only", path: path) }
        let id = BlobID(contentsOf: bytes)
        let directory = blobDirectory
        let target = directory + "/" + id.hex
        locked { counters.blobsOffered += 1 }
        if fileSystem.kind(of: target) == .regular { return id }
        locked { counters.blobsWritten += 1 }
        if fileSystem.kind(of: directory) == .missing {
            try fileSystem.makeDirectory(
                directory,
                permissions: 0o700 | (options.fileMode & 0o077)
            )
            try fileSystem.syncDirectory(directoryOf(path))
        }
        try bytes.withUnsafeBytes { bytes in
            try fileSystem.replaceAtomically(
                target,
                with: bytes,
                temporary: target + ".tmp",
                permissions: options.fileMode
            )
        }
        return id
    }

    /// Reads an external blob and checks it against its content address.
    ///
    /// - Throws: `StoreError` `.missingBlob` if the file is missing or its bytes do not hash
    ///   to `id`; `.io`.
    public func readBlob(_ id: BlobID) throws -> Data {
        let target = blobDirectory + "/" + id.hex
        guard fileSystem.kind(of: target) == .regular else {
            throw StoreError(.missingBlob, "external blob \(id.hex) is missing", path: target)
        }
        let file = try fileSystem.open(target, mode: .read)
        defer { file.close() }
        let size = try file.size()
        guard size <= UInt64(Int.max) else {
            throw StoreError(.tooLarge, "blob too large", path: target)
        }
        let bytes = try file.read(at: 0, count: Int(size))
        guard BlobID(contentsOf: bytes) == id else {
            throw StoreError(
                .missingBlob,
                "external blob \(id.hex) does not match its checksum",
                path: target
            )
        }
        return Data(bytes)
    }

    /// The blob files present beside the store, with their sizes.
    public func blobFiles() throws -> [(id: BlobID, bytes: UInt64)] {
        var result: [(BlobID, UInt64)] = []
        for name in try fileSystem.contents(ofDirectory: blobDirectory) {
            guard let id = BlobID(hex: name) else { continue }
            let file = try fileSystem.open(blobDirectory + "/" + name, mode: .read)
            result.append((id, try file.size()))
            file.close()
        }
        return result
    }
}
