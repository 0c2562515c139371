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
    /// between the transaction's holes, then one for the rest), then flushed with `fdatasync`.
    /// Commits from several threads share flushes (group commit): one written while another's
    /// flush runs waits for the next, which covers every commit written before it starts. A
    /// commit is visible to reads only once its flush has completed. If a write fails, the log
    /// is cut back to where it was; if a flush fails, every commit it covered fails with its
    /// error, those written after it with `.poisoned`, and the handle is poisoned (rule 3).
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

    /// Frames, writes, flushes and applies `transaction` (see ``CommitWriter``).
    private func commitTransaction(_ transaction: Transaction) throws -> CommitInfo {
        lock.lock()
        defer { lock.unlock() }
        return try awaitFlush(of: writeCommit(transaction))
    }

    /// Writes `transaction` as ``commit(_:)`` does, without waiting for its flush: the caller
    /// waits with ``waitUntilDurable(_:)`` once it has released locks of its own, so that
    /// other threads' commits meanwhile can share the flush.
    ///
    /// Every commit begun must be waited for, soon: the flush of the commits written before
    /// it may be left to its thread.
    ///
    /// - Returns: The commit, which is durable already unless its `awaitsFlush`.
    /// - Throws: As ``commit(_:)``; once this returns, only the flush can still fail.
    package func beginCommit(_ transaction: Transaction) throws -> WrittenCommit {
        lock.lock()
        defer { lock.unlock() }
        return try writeCommit(transaction)
    }

    /// Waits until `commit` is durable, flushing on this thread when no other thread is.
    ///
    /// - Returns: The commit's number, offset, time and counts.
    /// - Throws: `StoreError` — the error of the flush that covered the commit, or
    ///   `.poisoned` when one before it failed.
    @discardableResult
    package func waitUntilDurable(_ commit: WrittenCommit) throws -> CommitInfo {
        lock.lock()
        defer { lock.unlock() }
        return try awaitFlush(of: commit)
    }

    /// Waits until every commit written is durable and applied to the state, which reads
    /// then see; flushes them on this thread when no other thread is flushing.
    ///
    /// - Throws: `StoreError` — the error of the flush, which poisons the handle.
    package func waitForPendingCommits() throws {
        lock.lock()
        defer { lock.unlock() }
        try settlePendingCommits()
    }

    /// Frames and writes `transaction`; a durable commit of fewer than
    /// ``CommitWriter/overlappedSyncChanges`` changes is then left pending, others are
    /// flushed and applied at once, holding the lock throughout, after the pending ones.
    ///
    /// The caller holds `lock`.
    private func writeCommit(_ transaction: Transaction) throws -> WrittenCommit {
        try checkWritable()
        let generation = state.header.generation
        guard options.durable, transaction.entries.count < CommitWriter.overlappedSyncChanges
        else {
            // A large commit updates the key directory while its flush runs (see
            // `CommitWriter.flush`), on the state as of every commit before it.
            try settlePendingCommits()
            let commit = try CommitWriter(framing: transaction, after: state, path: path)
            // Framing read the changed keys' slots: a damaged page of a mapped index found
            // there stops the commit before anything is written.
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
            return WrittenCommit(
                info: info,
                end: state.endOffset,
                generation: generation,
                awaitsFlush: false
            )
        }
        if !pending.isEmpty, transaction.hasDelete || transaction.hasPatch {
            pending.buildLocations()
        }
        let commit = try CommitWriter(
            framing: transaction,
            after: state,
            pending: pending,
            path: path
        )
        try checkDirectory(state.live)
        try commit.write(to: file, state: &state)
        counters.bytesWritten += UInt64(commit.length)
        pending.append(commit)
        // The leader gathering commits for its flush is woken once it has them all.
        if let gatherer = pending.gatherer, pending.hasGathered {
            pending.gatherer = nil
            gatherer.semaphore.signal()
        }
        return WrittenCommit(
            info: CommitInfo(
                number: commit.number,
                offset: commit.start,
                date: commit.commit.date,
                inserted: Int(commit.inserted),
                updated: Int(commit.updated),
                deleted: Int(commit.deleted)
            ),
            end: commit.start + UInt64(commit.length),
            generation: generation,
            awaitsFlush: true
        )
    }

    /// Waits, holding `lock` except while waiting, until a flush that covers `commit` has
    /// completed, leading the flush itself when no other thread leads or when the lead is
    /// handed to it (see ``PendingCommits``).
    private func awaitFlush(of commit: WrittenCommit) throws -> CommitInfo {
        guard commit.awaitsFlush else { return commit.info }
        let number = commit.info.number
        while true {
            if let failure = pending.failure, number >= failure.numbers.lowerBound {
                if failure.numbers.contains(number) { throw failure.error }
                throw StoreError(
                    .poisoned,
                    "the flush of an earlier commit failed, so this one was not made durable; "
                        + "reopen the store before writing again",
                    path: path
                )
            }
            // Numbers go on across compactions, which wait for the pending commits first.
            if state.lastNumber >= number { return commit.info }
            // Safe: a commit neither durable nor failed is pending.
            let waiter = pending.waiter(of: number)!
            if !pending.hasLeader {
                pending.hasLeader = true
                lead(as: waiter)
                continue
            }
            // Woken once: the commit is durable or failed, or the lead is this thread's.
            lock.unlock()
            waiter.semaphore.wait()
            lock.lock()
            if waiter.takesLead {
                waiter.takesLead = false
                lead(as: waiter)
            }
        }
    }

    /// Gathers the commits of the other savers for a moment, flushes every pending commit,
    /// and hands the lead on; the caller, holding `lock`, leads, with `waiter` its commit's.
    ///
    /// The flush's error reaches every commit it covered through `pending.failure`.
    private func lead(as waiter: FlushWaiter) {
        if let deadline = pending.gatheringDeadline(now: Date()) {
            pending.gatherer = waiter
            lock.unlock()
            let woken = waiter.semaphore.wait(timeout: .now() + deadline.timeIntervalSinceNow)
            lock.lock()
            if pending.gatherer === waiter {
                pending.gatherer = nil
            } else if woken == .timedOut {
                // The last commit woke it as the wait ended: the signal is posted already.
                waiter.semaphore.wait()
            }
        }
        try? flushPendingCommits(releasingLock: true, leader: waiter)
    }

    /// Makes the state hold every commit written.
    ///
    /// It waits for the thread that leads to give up the lead, then flushes the rest on this
    /// one, holding the lock. What needs the state and the file to agree (a compaction, the
    /// index checkpoint) calls it first.
    ///
    /// The caller holds `lock`.
    ///
    /// - Throws: The flush's error (the handle is then poisoned).
    func settlePendingCommits() throws {
        pending.settlers += 1
        while pending.hasLeader { lock.wait() }
        pending.settlers -= 1
        guard !pending.isEmpty else { return }
        pending.hasLeader = true
        try flushPendingCommits(releasingLock: false, leader: nil)
    }

    /// Flushes every pending commit with one `fdatasync`, applies them to the state in order,
    /// wakes their threads, and hands the lead to the thread of the first commit written
    /// during the flush (or gives it up).
    ///
    /// The caller holds `lock` and leads (`leader` is its commit's waiter, if it has one).
    /// The lock is released during the flush when `releasingLock`: other threads then write
    /// commits for the next flush, and read the state as it was. Otherwise nobody else
    /// writes or reads meanwhile.
    ///
    /// - Throws: The flush's error, after poisoning the handle and failing every pending
    ///   commit: the state stays as it was before them.
    private func flushPendingCommits(releasingLock: Bool, leader: FlushWaiter?) throws {
        let covered = pending.commits.count
        counters.logSyncs += 1
        var failure: (any Error)?
        let clock = ContinuousClock()
        let started = clock.now
        if releasingLock {
            // A compaction or a close, which replace or close `file`, waits for the lead.
            let file = self.file
            lock.unlock()
            do { try file.sync() } catch { failure = error }
            lock.lock()
        } else {
            do { try file.sync() } catch { failure = error }
        }
        let elapsed = (clock.now - started).components
        pending.lastFlushSeconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
        if let failure {
            // The kernel may have dropped the dirty pages: nothing written since the last
            // completed flush can be trusted to be in the file.
            state.isPoisoned = true
            for waiter in pending.fail(covered: covered, with: failure) where waiter !== leader {
                waiter.semaphore.signal()
            }
            giveUpLead()
            throw failure
        }
        let (commits, waiters) = pending.removeFirst(covered)
        for commit in commits {
            do {
                _ = try commit.apply(to: &state, flushing: nil)
            } catch {
                // Without a flush to wait for, `apply` has nothing that can fail.
                preconditionFailure("applying a flushed commit failed: \(error)")
            }
            counters.commits += 1
        }
        for waiter in waiters where waiter !== leader { waiter.semaphore.signal() }
        if pending.settlers == 0, let next = pending.waiters.first {
            next.takesLead = true
            next.semaphore.signal()
        } else {
            giveUpLead()
        }
    }

    /// Leaves the lead to whoever wants it next, and wakes the threads waiting to settle.
    private func giveUpLead() {
        pending.hasLeader = false
        if pending.settlers > 0 { lock.broadcast() }
    }
}

/// A commit written to the log, and whether it still waits for a flush to be durable (see
/// ``LogStore/beginCommit(_:)``).
package struct WrittenCommit: Sendable {
    /// The commit's number, offset, time and counts.
    package var info: CommitInfo
    /// The offset just past the commit.
    package var end: UInt64
    /// The file generation `end` and `info.offset` are counted in.
    package var generation: UInt64
    /// Whether ``LogStore/waitUntilDurable(_:)`` must still wait for a flush that covers it.
    package var awaitsFlush: Bool

    /// A commit as ``LogStore/beginCommit(_:)`` returned it.
    package init(info: CommitInfo, end: UInt64, generation: UInt64, awaitsFlush: Bool) {
        self.info = info
        self.end = end
        self.generation = generation
        self.awaitsFlush = awaitsFlush
    }
}
