import Foundation

/// What ``LogStore/salvage(path:to:upgrade:merge:)`` or ``LogStore/repair(path:upgrade:merge:)`` did.
public struct SalvageResult: Sendable, Equatable {
    /// What was dropped; empty when the store was not damaged.
    public var report: SalvageReport
    /// Live objects in the salvaged store.
    public var objects: Int
    /// External blobs that salvaged objects refer to but that are missing or damaged.
    public var missingBlobs: [BlobID]
    /// Where ``LogStore/repair(path:upgrade:merge:)`` kept the damaged original; nil when nothing was written.
    public var damagedCopyPath: String?
}

extension LogStore {
    /// The suffix of the copy of a damaged store that ``repair(path:upgrade:merge:)`` keeps beside it.
    public static let damagedCopySuffix = ".damaged"

    /// Writes the salvaged state of the store at `path` (every intact committed transaction,
    /// without the damaged ones) into a new, valid store at `output`, with copies of the
    /// external blobs its objects refer to.
    ///
    /// The damaged store is only read. The new store is written beside its final name, synced
    /// and renamed into place, so it appears whole or not at all.
    ///
    /// - Returns: What was dropped and what the new store holds.
    /// - Throws: `StoreError` `.notFound`, `.notAStore`, `.unsupportedVersion`, `.corrupt`
    ///   (a damaged header), `.invalidArgument` (the output exists, or its directory does not),
    ///   `.io` (with the output's path).
    public static func salvage(
        path: String,
        to output: String,
        upgrade: ((LogStore) throws -> PayloadUpgrade?)? = nil,
        merge: ((LogStore) throws -> PatchMerge?)? = nil
    ) throws -> SalvageResult {
        try salvage(path: path, to: output, options: StoreOptions(), upgrade: upgrade, merge: merge)
    }

    /// ``salvage(path:to:upgrade:merge:)`` that also writes into the new store the puts of
    /// `restoring`: records the damage lost (of keys that are not live) which the caller has
    /// from elsewhere, such as the schema of a model version.
    ///
    /// - Throws: As ``salvage(path:to:upgrade:merge:)``; `.invalidArgument` when a key of
    ///   `restoring` is live.
    package static func salvage(
        path: String,
        to output: String,
        options: StoreOptions,
        upgrade: ((LogStore) throws -> PayloadUpgrade?)? = nil,
        merge: ((LogStore) throws -> PatchMerge?)? = nil,
        restoring: Transaction? = nil
    ) throws -> SalvageResult {
        let source = try openSalvaging(path, options: options)
        defer { try? source.close() }
        try source.prepareCopy(upgrade, merge, restoring)
        let fileSystem = source.fileSystem
        guard fileSystem.kind(of: output) == .missing else {
            throw StoreError(
                .invalidArgument,
                "already exists; choose a new path for the salvaged store",
                path: output
            )
        }
        guard fileSystem.kind(of: directoryOf(output)) == .directory else {
            throw StoreError(
                .invalidArgument,
                "cannot create: the directory \(directoryOf(output)) does not exist",
                path: output
            )
        }
        return try namingOutput(output) {
            try source.locked {
                let temporary = output + LogFormat.creationSuffix
                let copy = try Compactor(copying: source).writeCopy(
                    to: temporary,
                    generation: source.state.header.generation + 1,
                    progress: nil,
                    restoring: restoring
                )
                var missing: [BlobID] = []
                if !copy.referencedBlobs.isEmpty {
                    let blobs = output + LogFormat.blobsSuffix
                    try fileSystem.makeDirectory(blobs, permissions: 0o700)
                    for id in copy.referencedBlobs.sorted(by: { $0.hex < $1.hex }) {
                        guard let data = try? source.readBlob(id) else {
                            missing.append(id)
                            continue
                        }
                        let file = try fileSystem.open(
                            blobs + "/" + id.hex,
                            mode: .create(permissions: source.options.fileMode)
                        )
                        defer { file.close() }
                        try data.withUnsafeBytes { try file.write($0, at: 0) }
                        try file.sync()
                    }
                    try fileSystem.syncDirectory(blobs)
                }
                try fileSystem.rename(temporary, to: output)
                try fileSystem.syncDirectory(directoryOf(output))
                return SalvageResult(
                    report: source.salvageReport ?? SalvageReport(losses: []),
                    objects: copy.live.count,
                    missingBlobs: missing,
                    damagedCopyPath: nil
                )
            }
        }
    }

    /// Repairs the damaged store at `path` in place: replaces it with its salvaged state (every
    /// intact committed transaction, without the damaged ones) and keeps the damaged original
    /// as `PATH.damaged`.
    ///
    /// Crash-safe: the salvaged store is written beside the store and synced, the original is
    /// copied to `PATH.damaged` and synced, and only then is the salvaged store renamed over
    /// `PATH` and the directory synced; at every moment `PATH` is the damaged store or the
    /// repaired one. The writer lock is held throughout, so no save can come in between. The
    /// stale index checkpoint is removed; external blobs stay where they are. A store that is not
    /// damaged is left as it is.
    ///
    /// - Returns: What was dropped, and where the original was kept.
    /// - Throws: `StoreError` `.notFound`, `.notAStore`, `.unsupportedVersion`, `.corrupt`
    ///   (a damaged header), `.locked` (another process writes the store), `.invalidArgument`
    ///   (`PATH.damaged` exists), `.io`.
    public static func repair(
        path: String,
        upgrade: ((LogStore) throws -> PayloadUpgrade?)? = nil,
        merge: ((LogStore) throws -> PatchMerge?)? = nil
    ) throws -> SalvageResult {
        try repair(path: path, options: StoreOptions(), upgrade: upgrade, merge: merge)
    }

    /// ``repair(path:upgrade:merge:)`` that also writes into the repaired store the puts of
    /// `restoring`, as ``salvage(path:to:options:upgrade:merge:restoring:)`` does.
    package static func repair(
        path: String,
        options: StoreOptions,
        upgrade: ((LogStore) throws -> PayloadUpgrade?)? = nil,
        merge: ((LogStore) throws -> PatchMerge?)? = nil,
        restoring: Transaction? = nil
    ) throws -> SalvageResult {
        let fileSystem = options.fileSystem
        let path = fileSystem.resolvingSymbolicLinks(path)
        try requireExistingStoreFile(path, fileSystem: fileSystem)
        // Checked before the lock file is created beside something that is not a store.
        try openSalvaging(path, options: options).close()
        let lockFile = try fileSystem.open(
            path + LogFormat.lockSuffix,
            mode: .create(permissions: options.fileMode)
        )
        defer { lockFile.close() }
        try lockFile.lockExclusive()
        let source = try openSalvaging(path, options: options)
        defer { try? source.close() }
        try source.prepareCopy(upgrade, merge, restoring)
        let report = source.salvageReport ?? SalvageReport(losses: [])
        guard !report.isEmpty else {
            return SalvageResult(
                report: report,
                objects: source.liveCount(entity: nil),
                missingBlobs: [],
                damagedCopyPath: nil
            )
        }
        let damagedPath = path + damagedCopySuffix
        guard fileSystem.kind(of: damagedPath) == .missing else {
            throw StoreError(
                .invalidArgument,
                "already exists (an earlier or interrupted repair's copy of the damaged store); "
                    + "move it away and repair again",
                path: damagedPath
            )
        }
        return try source.locked {
            let temporary = path + LogFormat.compactionSuffix
            let copy = try Compactor(copying: source).writeCopy(
                to: temporary,
                generation: source.state.header.generation + 1,
                progress: nil,
                restoring: restoring
            )
            do {
                try copyFile(source.file, to: damagedPath, options: options)
            } catch {
                try? fileSystem.remove(temporary)
                throw error
            }
            try fileSystem.rename(temporary, to: path)
            try fileSystem.syncDirectory(directoryOf(path))
            // The index checkpoint described the damaged file's generation.
            try fileSystem.remove(path + LogFormat.indexSuffix)
            var missing: [BlobID] = []
            for id in copy.referencedBlobs.sorted(by: { $0.hex < $1.hex })
            where (try? source.readBlob(id)) == nil {
                missing.append(id)
            }
            return SalvageResult(
                report: report,
                objects: copy.live.count,
                missingBlobs: missing,
                damagedCopyPath: damagedPath
            )
        }
    }

    /// Installs the engine's translation of records in an older layout, and its merge of
    /// patches, before the records are copied.
    ///
    /// In a later generation older records would pass for current ones: they are refused
    /// without the translation. Patched objects are copied as puts of their merged values.
    private func prepareCopy(
        _ upgrade: ((LogStore) throws -> PayloadUpgrade?)?,
        _ merge: ((LogStore) throws -> PatchMerge?)?,
        _ restoring: Transaction?
    ) throws {
        if let upgrade { installPayloadUpgrade(try? upgrade(self)) }
        if let merge { installPatchMerge(try? merge(self)) }
        try locked { try checkCopyable() }
        for entry in restoring?.entries ?? [] where location(of: entry.key) != nil {
            throw StoreError(
                .invalidArgument,
                "object \(entry.key), which the copy was to restore, is live",
                path: path
            )
        }
    }

    /// Opens `path` read-only with salvage, replaying the whole log (an index checkpoint could
    /// skip damage).
    private static func openSalvaging(_ path: String, options: StoreOptions) throws -> LogStore {
        var options = options
        options.salvage = true
        options.readOnly = true
        options.createIfMissing = false
        options.usesIndex = false
        return try LogStore.open(path: path, options: options)
    }

    /// Copies the whole of `source` to `target`, synced, through a temporary file.
    ///
    /// With `syncing` false the copy's data is not synced (its name and directory are): for a
    /// copy that the caller syncs itself before anything depends on it.
    package static func copyFile(
        _ source: any StoreFile,
        to target: String,
        options: StoreOptions,
        syncing: Bool = true
    ) throws {
        let fileSystem = options.fileSystem
        let temporary = target + LogFormat.creationSuffix
        let output = try fileSystem.open(temporary, mode: .create(permissions: options.fileMode))
        do {
            try output.truncate(to: 0)
            let size = try source.size()
            var offset: UInt64 = 0
            // One buffer for every chunk: a fresh 8 MiB array each time costs its page faults
            // again.
            var chunk = [UInt8](repeating: 0, count: Int(min(8 << 20, size)))
            while offset < size {
                let wanted = Int(min(UInt64(chunk.count), size - offset))
                let count = try chunk.withUnsafeMutableBytes { buffer in
                    try source.read(
                        into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<wanted]),
                        at: offset
                    )
                }
                guard count > 0 else { break }
                try chunk.withUnsafeBytes { buffer in
                    try output.write(UnsafeRawBufferPointer(rebasing: buffer[..<count]), at: offset)
                }
                offset += UInt64(count)
            }
            if syncing { try output.sync() }
            output.close()
        } catch {
            output.close()
            try? fileSystem.remove(temporary)
            throw error
        }
        try fileSystem.rename(temporary, to: target)
        try fileSystem.syncDirectory(directoryOf(target))
    }

    /// Runs `body`, reporting a failure of a file beside `output` (its temporary or blobs) as
    /// a failure of `output` itself.
    private static func namingOutput<T>(_ output: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch var error as StoreError {
            if let path = error.path, path.hasPrefix(output) { error.path = output }
            throw error
        }
    }
}
