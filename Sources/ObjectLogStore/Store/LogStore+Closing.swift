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
        try writeIndex(state.index, besideStoreAt: path)
        state.indexedEnd = (state.header.generation, state.endOffset)
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
