import Foundation

#if canImport(Glibc)
import Glibc
#endif

// A read-only handle following the process that writes its file: the transactions appended
// since it last looked are read into its live state (`catchUp`), and a thread watches the file
// to do so as they come (`follow`).

extension LogStore {
    /// Reads what another process committed since this read-only handle last looked into its
    /// live state, and returns those transactions' changes, oldest first.
    ///
    /// An incomplete transaction at the end (the writer still writing it) is left for the next
    /// call. When a compaction has replaced the file, the handle moves to the new one: the
    /// transactions after the last one seen come from its log when it still has them, and
    /// otherwise one change set, numbered as the new file's last transaction, that calls every
    /// object both files hold updated.
    ///
    /// A writable handle is the only writer of its file: it returns nothing.
    ///
    /// - Throws: `StoreError` `.closed`, `.io`, `.corrupt` for damage before the last commit.
    package func catchUp() throws -> [LogHistoryTransaction] {
        guard isReadOnly, !options.salvage else { return [] }
        if let now = fileSystem.identity(of: path), let ours = locked({ file.identity }),
            now != ours
        {
            return try moveToReplacement()
        }
        lock.lock()
        defer { lock.unlock() }
        if state.isClosed { throw StoreError(.closed, "the store is closed", path: path) }
        let fileSize = try file.size()
        guard fileSize > state.endOffset else { return [] }
        var scanner = LogScanner(file: file, path: path, fileSize: fileSize, header: state.header)
        // An incomplete transaction at the end is one the writer is writing.
        scanner.hasActiveWriter = true
        // The keydir moves into the replay and back, so that it is changed in place.
        var visitor = FollowingVisitor(
            replay: LogReplay(
                live: state.live,
                entityCounts: state.entityCounts,
                liveRecordBytes: state.liveRecordBytes,
                metadataOffset: state.metadataOffset,
                nextKey: state.nextKey,
                lastNumber: state.lastNumber,
                lastCommitChecksum: state.lastCommitChecksum,
                start: state.endOffset
            )
        )
        state.live = KeyDirectory()
        state.entityCounts = EntityCounter()
        let outcome: LogScanner.Outcome
        do {
            outcome = try scanner.scan(
                from: state.endOffset,
                lastNumber: state.lastNumber,
                visitor: &visitor
            )
        } catch {
            visitor.restore(into: &state)
            throw error
        }
        visitor.restore(into: &state)
        if let damage = outcome.damage, damage.kind == .corrupt {
            throw StoreError(
                .corrupt,
                "the log is damaged: \(damage.reason)",
                path: path,
                offset: damage.offset
            )
        }
        guard visitor.committedEnd != 0 else { return [] }
        let metadataOffset = state.metadataOffset
        state.endOffset = visitor.committedEnd
        // Bytes read ahead or patches kept may describe the log before these commits.
        readAhead = ReadAhead()
        livePatches = nil
        if metadataOffset != 0, visitor.changedMetadata {
            state.currentMetadata = try readMetadataRecord(at: metadataOffset)
        }
        return visitor.transactions
    }

    /// Moves this read-only handle to the file a compaction put at its path, and says what
    /// changed since the last transaction it had seen.
    private func moveToReplacement() throws -> [LogHistoryTransaction] {
        let fresh = try LogStore.open(path: path, options: options)
        let seen = locked { state.lastNumber }
        var transactions: [LogHistoryTransaction]
        let freshLatest = fresh.locked { fresh.state.lastNumber }
        if fresh.locked({ fresh.state.header.baseTransactionCount }) <= seen {
            transactions = try fresh.history(after: seen).transactions
        } else {
            // The changes between are folded into the copy: everything may have changed.
            var changes: [LogHistoryChange] = []
            let (old, new) = (locked { state.live }, fresh.locked { fresh.state.live })
            old.forEachEntry { key, location in
                let kind: LogHistoryChange.Kind = new[key] == nil ? .delete : .update
                changes.append(
                    LogHistoryChange(key: key, entity: location.entity, kind: kind)
                )
            }
            new.forEachEntry { key, location in
                if old[key] == nil {
                    changes.append(
                        LogHistoryChange(key: key, entity: location.entity, kind: .insert)
                    )
                }
            }
            transactions = [
                LogHistoryTransaction(
                    number: freshLatest,
                    timestampMicroseconds: Int64(Date().timeIntervalSince1970 * 1e6),
                    changes: changes
                )
            ]
        }
        // The handle takes the new file and state; the fresh handle is left closed without
        // closing the file it handed over.
        let oldFile: any StoreFile = try locked {
            if state.isClosed { throw StoreError(.closed, "the store is closed", path: path) }
            let oldFile = file
            fresh.locked {
                file = fresh.file
                state = fresh.state
                fresh.state.isClosed = true
            }
            readAhead = ReadAhead()
            livePatches = nil
            return oldFile
        }
        oldFile.close()
        return transactions
    }

    /// Watches the file of this read-only handle for transactions another process appends and
    /// calls `handler` with each batch that ``catchUp()`` reads, from a thread of its own, until
    /// the handle is closed.
    ///
    /// The thread waits on inotify for changes in the file's directory where the kernel has it,
    /// and looks at least every `interval` seconds whatever it says (the fallback when inotify is
    /// missing or its watches are used up). A writable handle, or one on a file system other
    /// than the real one, watches nothing.
    package func follow(
        interval: Double = 0.1,
        handler: @escaping @Sendable ([LogHistoryTransaction]) -> Void
    ) {
        guard isReadOnly, options.followsWriter, !options.salvage, fileSystem is PosixFileSystem
        else { return }
        let follower = LogFollower(directory: directoryOf(path), interval: interval)
        let replaced = locked {
            defer { self.follower = follower }
            return self.follower
        }
        replaced?.stop()
        follower.start { [weak self] in
            guard let self else { return false }
            do {
                let transactions = try self.catchUp()
                if !transactions.isEmpty { handler(transactions) }
            } catch let error as StoreError where error.code == .closed {
                return false
            } catch {
                // Damage or a failed read: tried again at the next change or interval.
            }
            return true
        }
    }

    /// Stops the thread ``follow(interval:handler:)`` started, if any.
    func stopFollowing() {
        let follower = locked {
            defer { self.follower = nil }
            return self.follower
        }
        follower?.stop()
    }
}

extension LogHistoryChange {
    /// A change known by its kind alone, without its records.
    init(key: ObjectKey, entity: EntityTag, kind: Kind) {
        self.init(key: key, entity: entity, kind: kind, before: nil, after: nil)
    }
}

/// Replays a followed log's new transactions, each applied once its commit is read (so that
/// an incomplete one at the end needs no undoing), and lists their changes.
private struct FollowingVisitor: LogScanVisitor {
    var replay: LogReplay
    var transactions: [LogHistoryTransaction] = []
    /// Where the last committed transaction read ends.
    var committedEnd: UInt64 = 0
    var changedMetadata = false
    private var pending: [ScannedRecord] = []
    /// The locations the pending records give their keys (nil for a delete), to check patches.
    private var changed: [ObjectKey: RecordLocation?] = [:]

    init(replay: LogReplay) { self.replay = replay }

    mutating func visit(_ record: ScannedRecord, payload: UnsafeRawBufferPointer) {
        pending.append(record)
        switch record.type {
        case .put: changed[record.key] = .some(record.location)
        case .delete: changed[record.key] = .some(nil)
        case .metadata, .commit, .padding, .patch: break
        }
    }

    mutating func visitPatch(_ record: ScannedRecord, payload: UnsafeRawBufferPointer) -> String? {
        let current = changed[record.key] ?? replay.live[record.key]
        if let problem = LogReplay.patchProblem(record, current: current) { return problem }
        changed[record.key] = .some(record.location)
        pending.append(record)
        return nil
    }

    mutating func commit(_ commit: ScannedCommit) {
        var changes: [LogHistoryChange] = []
        var position: [ObjectKey: Int] = [:]
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        for record in pending {
            let kind: LogHistoryChange.Kind
            switch record.type {
            case .put:
                kind = record.flags & 1 != 0 && replay.live[record.key] == nil ? .insert : .update
                replay.visit(record, payload: none)
            case .patch:
                kind = .update
                _ = replay.visitPatch(record, payload: none)
            case .delete:
                kind = .delete
                replay.visit(record, payload: none)
            case .metadata:
                changedMetadata = true
                replay.visit(record, payload: none)
                continue
            case .commit, .padding:
                continue
            }
            if let index = position[record.key] {
                if kind == .delete { changes[index].kind = .delete }
                continue
            }
            position[record.key] = changes.count
            changes.append(LogHistoryChange(key: record.key, entity: record.entity, kind: kind))
        }
        replay.commit(commit)
        pending.removeAll(keepingCapacity: true)
        changed.removeAll(keepingCapacity: true)
        committedEnd = commit.endOffset
        guard !commit.isCompaction else { return }
        transactions.append(
            LogHistoryTransaction(
                number: commit.number,
                timestampMicroseconds: commit.commit.timestampMicroseconds,
                changes: changes
            )
        )
    }

    mutating func skip(to offset: UInt64, nextKey: ObjectKey) {
        pending.removeAll(keepingCapacity: true)
        changed.removeAll(keepingCapacity: true)
    }

    /// Puts the replayed state back into `state` (all of it when nothing was committed).
    func restore(into state: inout LiveState) {
        state.live = replay.live
        state.entityCounts = replay.entityCounts
        guard committedEnd != 0 else { return }
        state.liveRecordBytes = replay.liveRecordBytes
        state.metadataOffset = replay.metadataOffset
        state.nextKey = replay.nextKey
        state.lastNumber = replay.lastNumber
        state.lastCommitChecksum = replay.lastCommitChecksum
    }
}

/// The thread that watches a followed store's directory and calls its check on each change
/// and at least every interval.
final class LogFollower: @unchecked Sendable {
    // `@unchecked Sendable`: `stopped` is used only under `lock`; the descriptors are set in
    // `init` and closed once the thread has ended.
    private let lock = NSLock()
    private var stopped = false
    private var thread: Thread?
    private let done = DispatchSemaphore(value: 0)
    private let directory: String
    private let interval: Double
    /// A pipe whose reading end the thread's wait watches: a byte ends the wait at once.
    private let wake: (read: Int32, write: Int32)

    init(directory: String, interval: Double) {
        self.directory = directory
        self.interval = interval
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) != 0 { ends = [-1, -1] }
        wake = (ends[0], ends[1])
    }

    /// Starts the thread; it calls `check` until `check` returns false or ``stop()`` is called.
    func start(_ check: @escaping @Sendable () -> Bool) {
        let thread = Thread { [self] in
            run(check)
            done.signal()
        }
        thread.name = "ObjectLog follower"
        lock.lock()
        self.thread = thread
        lock.unlock()
        thread.start()
    }

    /// Ends the thread and waits for it (not when called from the thread itself).
    func stop() {
        lock.lock()
        let wasStopped = stopped
        stopped = true
        let isOwnThread = thread == Thread.current
        let started = thread != nil
        lock.unlock()
        guard !wasStopped else { return }
        if wake.write >= 0 {
            var byte: UInt8 = 1
            _ = write(wake.write, &byte, 1)
        }
        if started && !isOwnThread { done.wait() }
    }

    private var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopped
    }

    private func run(_ check: () -> Bool) {
        // See: man 7 inotify. The directory rather than the file: a compaction renames a new
        // file over the store, which a watch of the old file would not see.
        let notifications = inotify_init1(Int32(IN_CLOEXEC) | Int32(IN_NONBLOCK))
        if notifications >= 0 {
            let events = UInt32(IN_MODIFY) | UInt32(IN_MOVED_TO) | UInt32(IN_CREATE)
            if inotify_add_watch(notifications, directory, events) < 0 {
                _ = Glibc.close(notifications)
            }
        }
        let watching = notifications >= 0 && fcntl(notifications, F_GETFD) >= 0
        defer {
            if watching { _ = Glibc.close(notifications) }
            for end in [wake.read, wake.write] where end >= 0 { _ = Glibc.close(end) }
        }
        // With inotify, the interval is a safety net and can be long.
        let timeout = Int32((watching ? max(interval, 1) : interval) * 1000)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !isStopped {
            guard check() else { return }
            var descriptors = [
                pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0),
                pollfd(fd: watching ? notifications : -1, events: Int16(POLLIN), revents: 0),
            ]
            _ = poll(&descriptors, nfds_t(descriptors.count), timeout)
            if watching, descriptors[1].revents != 0 {
                // The events themselves do not matter: any change makes the next check.
                while read(notifications, &buffer, buffer.count) > 0 {}
            }
        }
    }
}
