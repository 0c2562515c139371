import Foundation

extension LogStore {
    /// Writes the index checkpoint (when writable), releases the writer lock and closes the file.
    ///
    /// Later calls fail with `.closed`. Closing twice does nothing.
    public func close() throws {
        // Before taking the lock: the follower's thread may be waiting for it.
        stopFollowing()
        lock.lock()
        defer { lock.unlock() }
        guard !state.isClosed else { return }
        // Commits written and not flushed yet are made durable (or fail) before the file
        // closes under them.
        let settled = Result { try settlePendingCommits() }
        defer {
            state.isClosed = true
            file.close()
            lockFile?.close()
            lockFile = nil
        }
        try settled.get()
        if !isReadOnly && !state.isPoisoned && !state.indexIsCurrent {
            try writeIndex()
        }
    }

    /// Writes the index checkpoint for the state as of the last commit.
    ///
    /// The caller holds `lock`.
    func writeIndex() throws {
        try writeIndex(
            state.indexHeader,
            directory: state.live,
            counts: state.entityCounts,
            besideStoreAt: path
        )
        state.indexedEnd = (state.header.generation, state.endOffset)
    }

    /// Writes the index checkpoint of `directory` (with `counts`, its live keys by entity)
    /// and `index`'s other fields beside the store file at `storePath`: a version 5 index
    /// used in place by the next open, or, for a directory that is not dense, version 3.
    ///
    /// - Returns: The first bytes of the file, and its size.
    /// - Throws: `.corrupt` when the directory's mapped index turned out damaged: its slots
    ///   cannot be written as a checkpoint.
    @discardableResult
    func writeIndex(
        _ index: StoreIndex,
        directory: KeyDirectory,
        counts: EntityCounter,
        besideStoreAt storePath: String
    ) throws -> (head: [UInt8], size: Int) {
        try checkDirectory(directory)
        guard let header = DenseIndexFile.header(for: index, directory: directory, counts: counts)
        else {
            var index = index
            index.entries = directory.sortedEntries()
            let bytes = try writeIndex(index, besideStoreAt: storePath)
            return (bytes, bytes.count)
        }
        var size = header.count
        try fileSystem.replaceAtomically(
            storePath + LogFormat.indexSuffix,
            temporary: storePath + LogFormat.indexSuffix + LogFormat.creationSuffix,
            permissions: options.fileMode
        ) { file in
            try file.write(header, at: 0)
            let written = directory.withDenseSlotBytes { slots in
                size += slots.count
                return Result { try file.write(slots, at: UInt64(header.count)) }
            }
            try written?.get()
        }
        return (header, size)
    }

    /// Throws `.corrupt` when `directory` was mapped from an index file with a damaged page.
    func checkDirectory(_ directory: KeyDirectory) throws {
        guard let page = directory.damagedPage else { return }
        throw StoreError(
            .corrupt,
            "the index file's slots are damaged (page \(page) does not match its checksum); "
                + "remove '\(path)\(LogFormat.indexSuffix)' and open the store again to rebuild "
                + "it from the log",
            path: path
        )
    }

    /// Writes `index` as the index checkpoint of the store file at `storePath`: to a new file,
    /// synced, then renamed into place.
    ///
    /// - Returns: The bytes written.
    @discardableResult
    func writeIndex(_ index: StoreIndex, besideStoreAt storePath: String) throws -> [UInt8] {
        let bytes = index.encoded()
        try bytes.withUnsafeBytes { bytes in
            try fileSystem.replaceAtomically(
                storePath + LogFormat.indexSuffix,
                with: bytes,
                temporary: storePath + LogFormat.indexSuffix + LogFormat.creationSuffix,
                permissions: options.fileMode
            )
        }
        return bytes
    }

    /// Writes the index checkpoint now, so a later open need not replay the log.
    public func checkpoint() throws {
        lock.lock()
        defer { lock.unlock() }
        try checkWritable()
        try settlePendingCommits()
        try writeIndex()
    }
}
