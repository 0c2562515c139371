import Foundation

/// What a backup copied.
public struct BackupReport: Sendable, Equatable {
    /// The bytes of the log copied: the store as of its last committed transaction.
    public var logBytes: UInt64
    /// The number of the last transaction the copy holds.
    public var transactionNumber: UInt64
    /// The live objects in the copy.
    public var objects: Int
    /// The external blob files copied, and their bytes.
    public var blobs: Int
    /// See ``blobs``.
    public var blobBytes: UInt64
    /// How many times the copy started again because a compaction replaced the store while it
    /// was copied.
    public var restarts: Int
}

extension LogStore {
    /// How many times a backup starts again when compactions keep replacing the store under it.
    static var backupAttempts: Int { 5 }

    /// Copies the store at `path` to `destination`, whole and consistent, while an app may be
    /// writing to it: the log as of its last committed transaction, an index checkpoint for
    /// it, and the external blob files.
    ///
    /// Copying only the store file loses the external data, which lives in files beside it;
    /// copying the files one by one while an app writes may catch a transaction half written,
    /// or miss a blob a compaction removed meanwhile. A backup reads the store as a read-only
    /// open does (a transaction still being written is left out), copies that prefix of the
    /// log, which later saves only append to, and every blob file, each checked against its
    /// content address. If a compaction replaced the store meanwhile (it may remove blobs the
    /// copied log refers to), the backup starts again. The copy appears at `destination` whole
    /// or not at all.
    ///
    /// - Parameters:
    ///   - path: The store to copy.
    ///   - destination: The new store's path; nothing may exist there yet.
    ///   - options: How the store is read (its file system; it is always opened read-only).
    ///   - progress: Called now and then with the share done, from 0 to 1.
    /// - Returns: What was copied.
    /// - Throws: `StoreError` — `.notFound`, `.notAStore`, `.corrupt` (the store is damaged;
    ///   `objectlog recover` salvages it), `.invalidArgument` (`destination` exists), `.io`.
    @discardableResult
    public static func backup(
        path: String,
        to destination: String,
        options: StoreOptions = StoreOptions(),
        progress: ((Double) -> Void)? = nil
    ) throws -> BackupReport {
        let fileSystem = options.fileSystem
        for suffix in ["", LogFormat.blobsSuffix, LogFormat.indexSuffix, HistoryFile.suffix] {
            guard fileSystem.kind(of: destination + suffix) == .missing else {
                throw StoreError(
                    .invalidArgument,
                    "the output already exists; choose a new path",
                    path: destination + suffix
                )
            }
        }
        var options = options
        options.readOnly = true
        var restarts = 0
        while true {
            let source = try LogStore.open(path: path, options: options)
            defer { try? source.close() }
            if var report = try source.copy(to: destination, progress: progress) {
                report.restarts = restarts
                return report
            }
            restarts += 1
            guard restarts < backupAttempts else {
                throw StoreError(
                    .io,
                    "the store was compacted \(restarts) times while it was copied; try again",
                    path: path
                )
            }
        }
    }

    /// Copies this read-only handle's state to `destination`; nil when a compaction replaced
    /// the store under it, and the copy must start again (nothing is left at `destination`).
    private func copy(
        to destination: String,
        progress: ((Double) -> Void)?
    ) throws -> BackupReport? {
        let (end, generation, index, number) = try locked {
            // The copy's index lists every live key: a damaged page of a mapped index must not
            // pass into it with new checksums.
            _ = state.live.checkAllPages()
            try checkDirectory(state.live)
            return (state.endOffset, state.header.generation, state.index, state.lastNumber)
        }
        let blobs = (try? fileSystem.contents(ofDirectory: blobDirectory)) ?? []
        let targetBlobs = destination + LogFormat.blobsSuffix
        let temporary = destination + LogFormat.creationSuffix
        var blobCount = 0
        var blobBytes: UInt64 = 0
        do {
            // The log first, up to the end this handle read: saves since only append after it.
            let output = try fileSystem.open(
                temporary,
                mode: .create(permissions: options.fileMode)
            )
            do {
                try output.truncate(to: 0)
                var offset: UInt64 = 0
                let chunk = 8 << 20
                while offset < end {
                    let bytes = try locked {
                        try file.read(at: offset, count: Int(min(UInt64(chunk), end - offset)))
                    }
                    guard !bytes.isEmpty else {
                        throw StoreError(
                            .corrupt,
                            "the log ends before its last commit",
                            path: path,
                            offset: offset
                        )
                    }
                    try output.write(bytes, at: offset)
                    offset += UInt64(bytes.count)
                    progress?(Double(offset) / Double(end) * 0.5)
                }
                try output.sync()
                output.close()
            } catch {
                output.close()
                throw error
            }
            if !blobs.isEmpty {
                try fileSystem.makeDirectory(
                    targetBlobs,
                    permissions: 0o700 | (options.fileMode & 0o077)
                )
            }
            for (number, name) in blobs.enumerated() {
                guard let id = BlobID(hex: name) else { continue }
                let data: Data
                do {
                    data = try readBlob(id)
                } catch let error as StoreError
                    where error.code == .missingBlob || error.code == .notFound
                {
                    // Removed since it was listed: only a compaction removes blobs.
                    throw BackupRestart()
                }
                try data.withUnsafeBytes { bytes in
                    try fileSystem.replaceAtomically(
                        targetBlobs + "/" + name,
                        with: bytes,
                        temporary: targetBlobs + "/" + name + ".tmp",
                        permissions: options.fileMode
                    )
                }
                blobCount += 1
                blobBytes += UInt64(data.count)
                progress?(0.5 + 0.5 * Double(number + 1) / Double(blobs.count))
            }
            // The history compactions kept, as the last of them wrote it.
            let header = locked { state.header }
            if let history = try HistoryFile.read(
                storePath: path,
                storeUUID: header.storeUUID,
                fileSystem: fileSystem
            ) {
                try history.write(storePath: destination, fileSystem: fileSystem)
            }
            // Every blob the copied log refers to existed when it was listed, unless a
            // compaction removed it since this handle opened; one that did made a new file
            // (and the history file before it).
            guard try Self.generation(of: path, fileSystem: fileSystem) == generation else {
                throw BackupRestart()
            }
            try writeIndex(index, besideStoreAt: destination)
            try fileSystem.rename(temporary, to: destination)
            try fileSystem.syncDirectory(directoryOf(destination))
        } catch {
            try? fileSystem.remove(temporary)
            try? fileSystem.remove(destination + LogFormat.indexSuffix)
            try? fileSystem.remove(destination + HistoryFile.suffix)
            for name in (try? fileSystem.contents(ofDirectory: targetBlobs)) ?? [] {
                try? fileSystem.remove(targetBlobs + "/" + name)
            }
            try? fileSystem.removeDirectory(targetBlobs)
            if error is BackupRestart { return nil }
            throw error
        }
        progress?(1)
        return BackupReport(
            logBytes: end,
            transactionNumber: number,
            objects: index.entries.count,
            blobs: blobCount,
            blobBytes: blobBytes,
            restarts: 0
        )
    }

    /// The generation of the store file at `path` now.
    private static func generation(of path: String, fileSystem: any FileSystem) throws -> UInt64 {
        let file = try fileSystem.open(path, mode: .read)
        defer { file.close() }
        return try StoreHeader.read(from: file, path: path, fileSize: try file.size()).generation
    }
}

/// A compaction replaced the store during a backup's copy.
private struct BackupRestart: Error {}
