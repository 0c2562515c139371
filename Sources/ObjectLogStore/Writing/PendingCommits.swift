/// The commits written to the log whose flush has not completed yet: the group the next
/// `fdatasync` makes durable.
///
/// A durable commit of fewer than ``CommitWriter/overlappedSyncChanges`` changes is framed
/// after the last of these (not after the live state), written, and kept here; its saver then
/// waits for a flush that covers it, running one itself when none is running. A flush covers
/// every commit written before it starts, so the commits written while one runs share the
/// next. Only once its flush has completed is a commit applied to the live state: readers
/// never see a commit that is not durable. ``LogStore`` holds one, under its lock.
struct PendingCommits {
    /// The commits, in log order.
    private(set) var commits: [CommitWriter] = []
    /// Whether a thread is flushing them, with the store's lock released.
    var isFlushing = false
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

    /// The metadata dictionary after the commits, if one of them changes it.
    var metadata: Metadata? {
        commits.last { $0.transaction.metadata != nil }?.transaction.metadata
    }

    mutating func append(_ commit: CommitWriter) {
        commits.append(commit)
        locations = nil
    }

    /// Builds ``locations`` if it is not built.
    mutating func buildLocations() {
        guard locations == nil else { return }
        var built: [ObjectKey: RecordLocation?] = [:]
        for commit in commits {
            commit.forEachLocation { key, location in built.updateValue(location, forKey: key) }
        }
        locations = built
    }

    /// Takes the first `count` commits out, in order: their flush has completed.
    mutating func removeFirst(_ count: Int) -> ArraySlice<CommitWriter> {
        let taken = commits[..<count]
        commits.removeFirst(count)
        locations = nil
        return taken
    }

    /// Fails every commit: the flush of the first `covered` failed with `error`.
    mutating func fail(covered: Int, with error: any Error) {
        if let first = commits.first?.number {
            failure = (first...commits[covered - 1].number, error)
        }
        commits = []
        locations = nil
    }
}
