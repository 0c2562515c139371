import Foundation

extension LogStore {
    /// Writes the index checkpoint (when writable), releases the writer lock and closes the file.
    ///
    /// Later calls fail with `.closed`. Closing twice does nothing.
    public func close() throws {
        lock.lock()
        defer { lock.unlock() }
        guard !state.isClosed else { return }
        defer {
            state.isClosed = true
            file.close()
            lockFile?.close()
            lockFile = nil
        }
        if !isReadOnly && !state.isPoisoned && !state.indexIsCurrent {
            try writeIndex()
        }
    }

    /// Writes the index checkpoint for the state as of the last commit.
    ///
    /// The caller holds `lock`.
    func writeIndex() throws {
        try writeIndex(
            StoreIndex(
                storeUUID: state.header.storeUUID,
                generation: state.header.generation,
                coveredLength: state.endOffset,
                lastCommitChecksum: state.lastCommitChecksum ?? 0,
                lastNumber: state.lastNumber,
                nextKey: state.nextKey,
                metadataOffset: state.metadataOffset,
                liveBytes: state.liveRecordBytes,
                entries: state.live.sortedEntries()
            ),
            besideStoreAt: path
        )
        state.indexedEnd = (state.header.generation, state.endOffset)
    }

    /// Writes `index` as the index checkpoint of the store file at `storePath`: to a new file,
    /// synced, then renamed into place.
    ///
    /// - Returns: The bytes written.
    @discardableResult
    func writeIndex(_ index: StoreIndex, besideStoreAt storePath: String) throws -> [UInt8] {
        let temporary = storePath + LogFormat.indexSuffix + LogFormat.creationSuffix
        let indexFile = try fileSystem.open(temporary, mode: .create(permissions: options.fileMode))
        let bytes = index.encoded()
        do {
            try indexFile.truncate(to: 0)
            try indexFile.write(bytes, at: 0)
            try indexFile.sync()
            indexFile.close()
        } catch {
            indexFile.close()
            try? fileSystem.remove(temporary)
            throw error
        }
        try fileSystem.rename(temporary, to: storePath + LogFormat.indexSuffix)
        try fileSystem.syncDirectory(directoryOf(storePath))
        return bytes
    }

    /// Writes the index checkpoint now, so a later open need not replay the log.
    public func checkpoint() throws {
        lock.lock()
        defer { lock.unlock() }
        try checkWritable()
        try writeIndex()
    }
}
