import Foundation

/// The commits written to the log whose flush has not completed yet: the group the next
/// `fdatasync` makes durable.
///
/// A durable commit of fewer than ``CommitWriter/overlappedSyncChanges`` changes is framed
/// after the last of these (not after the live state), written, and kept here with the
/// ``FlushWaiter`` its thread waits on. One thread at a time leads: it gathers the commits of
/// the other savers for a moment (see ``gatheringDeadline(now:)``), flushes every commit
/// written before its flush starts, applies them to the live state and wakes their threads;
/// then it hands the lead to the thread of the first commit written meanwhile. Only once its
/// flush has completed is a commit applied to the live state: readers never see a commit that
/// is not durable. ``LogStore`` holds one, under its lock.
struct PendingCommits {
    /// The commits, in log order; their numbers are consecutive.
    private(set) var commits: [CommitWriter] = []
    /// The waiter of each commit, in the same order.
    private(set) var waiters: [FlushWaiter] = []
    /// Whether a thread leads: gathers, flushes, or has been handed the lead.
    var hasLeader = false
    /// The leader's waiter while it gathers commits, woken once they are all written.
    var gatherer: FlushWaiter?
    /// Threads waiting, holding nothing, to flush the commits themselves without releasing
    /// the lock (``LogStore/settlePendingCommits()``): the leader then gives up the lead
    /// instead of handing it on.
    var settlers = 0
    /// How many commits the last completed flush covered.
    private(set) var lastGroupSize = 0
    /// How many commits were written since the last flush completed.
    private(set) var writtenSinceFlush = 0
    /// How long the last flush took, in seconds.
    var lastFlushSeconds = 0.0
    /// Where the commits put or delete keys (nil for a delete), later ones over earlier; built
    /// when first asked for since the commits last changed.
    private(set) var locations: [ObjectKey: RecordLocation?]?
    /// The numbers of the commits a failed flush covered, and its error.
    ///
    /// Commits after those fail as the poisoned handle's.
    private(set) var failure: (numbers: ClosedRange<UInt64>, error: any Error)?

    var isEmpty: Bool { commits.isEmpty }

    /// The offset the next commit is written at, when there are commits.
    var end: UInt64? { commits.last.map { $0.start + UInt64($0.length) } }

    /// The number of the last commit, when there are commits.
    var lastNumber: UInt64? { commits.last?.number }

    /// Where the metadata record is after the last commit, when there are commits.
    var metadataOffset: UInt64? { commits.last?.metadataOffset }

    /// The waiter of commit `number`, if it is pending.
    func waiter(of number: UInt64) -> FlushWaiter? {
        guard let first = commits.first?.number, number >= first else { return nil }
        let index = Int(number - first)
        return index < waiters.count ? waiters[index] : nil
    }

    mutating func append(_ commit: CommitWriter) {
        commits.append(commit)
        waiters.append(FlushWaiter())
        writtenSinceFlush += 1
        locations = nil
    }

    /// Until when the leader waits for more commits before it flushes, or nil when it should
    /// not wait.
    ///
    /// The threads whose commits the last flush covered have returned, and those that save
    /// again each write a commit soon after; flushing at once would leave them to the flush
    /// after, so that under steady concurrency each flush would cover about half the threads
    /// that save. The leader waits for as many commits as the last flush covered, or for half
    /// that flush's duration (at most 5 ms: a flush that stalled says little of the next),
    /// whichever comes first. One thread saving alone never waits: its own commit is the one
    /// the last flush's group has written again.
    func gatheringDeadline(now: Date) -> Date? {
        guard lastGroupSize > 1, !hasGathered else { return nil }
        return now.addingTimeInterval(min(lastFlushSeconds / 2, 0.005))
    }

    /// Whether as many commits were written since the last flush as it covered.
    var hasGathered: Bool { writtenSinceFlush >= lastGroupSize }

    /// Builds ``locations`` if it is not built.
    mutating func buildLocations() {
        guard locations == nil else { return }
        var built: [ObjectKey: RecordLocation?] = [:]
        for commit in commits {
            commit.forEachLocation { key, location in built.updateValue(location, forKey: key) }
        }
        locations = built
    }

    /// Takes the first `count` commits out, in order, with their waiters: their flush has
    /// completed.
    mutating func removeFirst(
        _ count: Int
    ) -> (commits: ArraySlice<CommitWriter>, waiters: ArraySlice<FlushWaiter>) {
        let taken = (commits[..<count], waiters[..<count])
        commits.removeFirst(count)
        waiters.removeFirst(count)
        locations = nil
        lastGroupSize = count
        writtenSinceFlush = 0
        return taken
    }

    /// Fails every commit: the flush of the first `covered` failed with `error`.
    ///
    /// - Returns: Their waiters.
    mutating func fail(covered: Int, with error: any Error) -> [FlushWaiter] {
        if let first = commits.first?.number {
            failure = (first...commits[covered - 1].number, error)
        }
        let failed = waiters
        commits = []
        waiters = []
        locations = nil
        return failed
    }
}

/// What the thread of a pending commit waits on: woken once its commit is durable or has
/// failed, when the lead is handed to it, or, leading, when the commits it gathers are written.
final class FlushWaiter: @unchecked Sendable {
    // `@unchecked Sendable`: `takesLead` is written under the store's lock before
    // `semaphore` is signalled, and read under it once the wait is over.
    let semaphore = DispatchSemaphore(value: 0)
    /// Whether the wake hands this thread the lead.
    var takesLead = false
}
