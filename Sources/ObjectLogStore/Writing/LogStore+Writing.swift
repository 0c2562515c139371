import Foundation

extension LogStore {
    /// Hands out `count` fresh keys, never used before in this store.
    ///
    /// Keys become permanent with the next commit; keys handed out but never committed may be
    /// handed out again after the store is reopened.
    public func allocateKeys(_ count: Int) -> ClosedRange<ObjectKey> {
        precondition(count > 0, "allocateKeys needs a positive count")
        // Safe: a store's next key is at most `LogFormat.maximumCounter` (2^62) when read, so
        // only a count of about 2^62 keys could overflow it.
        precondition(UInt64(count) <= LogFormat.maximumCounter, "allocateKeys count too large")
        return locked {
            let first = state.nextKey
            state.nextKey += UInt64(count)
            return first...(first + UInt64(count) - 1)
        }
    }

    func checkWritable() throws {
        // A read-only handle never writes, so it is never poisoned: the order of the checks
        // does not matter past the first.
        try checkOpen()
        if isReadOnly { throw StoreError(.readOnly, "the store is open read-only", path: path) }
    }

    /// Refuses a closed handle, and one whose earlier fsync failed (what it holds in memory may
    /// not be what the file holds).
    func checkOpen() throws {
        if state.isClosed { throw StoreError(.closed, "the store is closed", path: path) }
        try checkDirectory(state.live)
        if state.isPoisoned {
            throw StoreError(
                .poisoned,
                "an earlier fsync failed; reopen the store before writing again",
                path: path
            )
        }
    }

    /// Appends `transaction` and, with durable options, makes it durable before returning.
    ///
    /// The records and a commit record are written at the end of the log in one `write` (for
    /// more than 64 KiB of object records, one for those records, or for each run of them
    /// between the transaction's holes, then one for the rest), then flushed with one
    /// `fdatasync`. If a write fails, the log is cut back to where it was; if the flush fails,
    /// the handle is poisoned (rule 3).
    ///
    /// - Returns: The transaction's number, offset, time and counts.
    /// - Throws: `StoreError` — `.readOnly`, `.poisoned`, `.closed`, `.tooLarge`,
    ///   `.invalidArgument` (a key never allocated), `.io`.
    @discardableResult
    public func commit(_ transaction: Transaction) throws -> CommitInfo {
        let info = try commitTransaction(transaction)
        compactIfWorthwhile()
        return info
    }

    /// Commits `transaction` as ``commit(_:)`` does, but leaves the automatic compaction to
    /// the caller: one that holds locks of its own calls ``compactIfWorthwhile()`` once it
    /// has released them, so that no lock of its is held while the store is copied.
    package func commitWithoutCompacting(_ transaction: Transaction) throws -> CommitInfo {
        try commitTransaction(transaction)
    }

    /// Compacts when ``StoreOptions/autoCompactionThreshold`` says so; a failure leaves the
    /// store as it was, and the commit before stands.
    package func compactIfWorthwhile() {
        guard let threshold = options.autoCompactionThreshold else { return }
        let worthwhile = locked { () -> Bool in
            let (end, live) = (state.endOffset, state.liveLength)
            guard end >= options.autoCompactionMinimumBytes, end > live, !lacksUpgrade else {
                return false
            }
            return Double(end - live) >= threshold * Double(end)
        }
        guard worthwhile else { return }
        locked { counters.autoCompactions += 1 }
        _ = try? compact()
    }

    /// Frames, writes, flushes and applies `transaction` under the lock (see ``CommitWriter``).
    private func commitTransaction(_ transaction: Transaction) throws -> CommitInfo {
        lock.lock()
        defer { lock.unlock() }
        try checkWritable()
        let commit = try CommitWriter(framing: transaction, after: state, path: path)
        // Framing read the changed keys' slots: a damaged page found there stops the commit
        // before anything is written.
        try checkDirectory(state.live)
        try commit.write(to: file, state: &state)
        counters.bytesWritten += UInt64(commit.length)
        var flush: PendingFlush?
        if options.durable {
            counters.logSyncs += 1
            flush = try commit.flush(file, state: &state)
        }
        let info = try commit.apply(to: &state, flushing: flush)
        counters.commits += 1
        return info
    }
}
