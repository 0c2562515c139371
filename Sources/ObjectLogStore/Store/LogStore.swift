import Foundation

/// An open ObjectLog store file: a checksummed, append-only log of transactions that begins
/// with a header holding the store's identity and metadata dictionary.
///
/// `LogStore` is the bytes-and-files layer under the object engine. It keeps, for every live
/// object, where its latest value is in the log (a Bitcask-style keydir), appends each
/// ``Transaction`` atomically, and reads values back on demand.
///
/// ```swift
/// let store = try LogStore.open(path: "notes.olog")
/// var transaction = Transaction()
/// let key = store.allocateKeys(1).lowerBound
/// transaction.put(key: key, entity: 1, payload: Array("hello".utf8), isInsert: true)
/// try store.commit(transaction)
/// try store.close()
/// ```
///
/// ## Rules
/// 1. One writer at a time: a second writable open of the same path, in this process or
///    another, fails with `StoreError.Code.locked`. Read-only opens are always allowed.
/// 2. A commit that returned is durable (with the default options) and atomic; nothing of a
///    transaction is visible before its commit record is, nor, with durable options, before
///    it is durable. Commits from several threads share a flush (group commit).
/// 3. After a failed `fdatasync` the handle is *poisoned*: later commits fail with
///    `StoreError.Code.poisoned` until the store is reopened (the kernel may have dropped the
///    dirty pages, so retrying could silently lose data).
/// 4. `LogStore` is thread-safe; calls are serialised internally.
/// 5. A store path that is a symbolic link is resolved when the store is opened; ``path`` is the
///    link's target, and the store's other files live beside it.
public final class LogStore: @unchecked Sendable {
    // A façade: the handle holds the lock, the file and one `LiveState`, and hands each
    // operation to the part that does it, in a folder of its own:
    // - Writing/: `CommitWriter` frames, writes, flushes and applies a transaction;
    //   LogStore+Writing hands out keys and drives a commit under the lock.
    // - Reading/: single loads, bulk reads and read plans, patch merges, upgrades.
    // - Recovery/: the checked scan, replay at open, salvage.
    // - Compaction/: `Compactor` writes a copy of the live records; LogStore+Compaction
    //   switches to it and translates offsets across compactions.
    // - Store/: opening, closing and the index checkpoint, metadata without opening, blobs.

    /// How the in-memory keydir was obtained at open.
    public enum IndexState: String, Sendable {
        /// From a valid index checkpoint, plus the log after it.
        case loaded
        /// By replaying the whole log (no valid index).
        case rebuilt
    }

    /// Counts of what this handle has done since it was opened.
    ///
    /// `logSyncs / commits` is the number of flushes per save: 1 with durable options when
    /// one thread saves, less when saves of several threads share a flush.
    public struct Statistics: Sendable, Equatable {
        /// Transactions committed.
        public var commits: UInt64 = 0
        /// `fdatasync` calls on the log file made by commits.
        public var logSyncs: UInt64 = 0
        /// Bytes appended to the log by commits.
        public var bytesWritten: UInt64 = 0
        /// Compactions started by ``StoreOptions/autoCompactionThreshold`` after a commit.
        public var autoCompactions: UInt64 = 0
        /// External blobs offered to ``LogStore/writeBlob(_:)`` (each one hashed), and of those
        /// the ones not already in the store, written to files.
        public var blobsOffered: UInt64 = 0
        /// See ``blobsOffered``.
        public var blobsWritten: UInt64 = 0
    }

    // Internal rather than private so that the extensions in the other files can use them.
    // Safe: every mutable property below is read and written only while holding `lock`.
    /// The handle's lock; savers wait on it for a flush that covers their commit.
    let lock = NSCondition()
    let fileSystem: any FileSystem
    package let options: StoreOptions
    var file: any StoreFile
    var lockFile: (any StoreFile)?
    /// The thread that reads another process's commits into this read-only handle, when
    /// following (see ``follow(interval:handler:)``).
    var follower: LogFollower?
    /// What the handle knows of its log; see ``LiveState``.
    var state: LiveState
    /// Commits written after `state`'s end whose flush has not completed.
    var pending = PendingCommits()
    var counters = Statistics()
    /// Bytes that single-object loads read ahead while they went forward through the file.
    var readAhead = ReadAhead()
    /// The windows of bulk reads, kept from one read to the next (safe without `lock`).
    let readWindows = ReadWindowPool()
    /// Whether the engine installed a translation of records in an older layout (see
    /// ``PayloadUpgrade``), and, if the file has such records, the translation with where they
    /// end, resolved once at installation.
    var hasPayloadUpgrade = false
    var installedUpgrade: (generation: UInt64, active: ActiveUpgrade)?
    /// The engine's merge of patches into their bases (see ``PatchMerge``), if installed.
    var installedPatchMerge: PatchMerge?
    /// The patches the last plan of every live object (of an entity, or of all) read, and the
    /// state they were read in: the next such plan of an unchanged store takes them again
    /// instead of reading every patch once more.
    var livePatches: (generation: UInt64, end: UInt64, entity: EntityTag?, patches: PlanPatches)?

    /// The store file's path.
    public let path: String
    /// How the keydir was obtained when the store was opened.
    public let indexState: IndexState
    /// Damage found after the last valid commit when the store was opened (a torn tail that a
    /// writable open has cut off, or, with `salvage`, the corruption it stopped at).
    public private(set) var damageAtOpen: StoreDamage?
    /// What an open with `salvage` dropped; nil without `salvage`.
    ///
    /// Empty when the store is not damaged.
    public private(set) var salvageReport: SalvageReport?

    // MARK: - Opening

    /// Opens the store at `path`, creating it if allowed and missing.
    ///
    /// Every record is validated (or, with a valid index checkpoint, every record after it). A
    /// torn tail — an incomplete last transaction, as a crash leaves — is dropped, and a writable
    /// open cuts it off the file before anything new is appended. Damage before a valid commit
    /// (or in a transaction the index checkpoint covers) is corruption: the open fails with an
    /// error naming the byte offset, unless `options.salvage` asks for a read-only open of every
    /// intact committed transaction.
    ///
    /// - Throws: `StoreError` — `.notFound`, `.notAStore`, `.unsupportedVersion`, `.corrupt`,
    ///   `.locked` or `.io`.
    public static func open(path: String, options: StoreOptions = StoreOptions()) throws -> LogStore
    {
        try LogStore(path: path, options: options)
    }

    private init(path: String, options: StoreOptions) throws {
        // A store path that is a symbolic link is resolved once, here: the lock, the index,
        // the blobs and a compaction's new file all live beside the link's target, and
        // compaction replaces the target, so the link keeps pointing at the store.
        let path = options.fileSystem.resolvingSymbolicLinks(path)
        self.path = path
        self.options = options
        fileSystem = options.fileSystem
        var options = options
        if options.salvage { options.readOnly = true }

        switch fileSystem.kind(of: path) {
        case .directory:
            throw StoreError(.notAStore, "is a directory, not an ObjectLog store", path: path)
        case .other: throw StoreError(.notAStore, "is not a regular file", path: path)
        case .missing where options.readOnly || !options.createIfMissing:
            throw StoreError(.notFound, "no store file at this path", path: path)
        default: break
        }

        if !options.readOnly {
            let lockFile = try fileSystem.open(
                path + LogFormat.lockSuffix,
                mode: .create(permissions: options.fileMode)
            )
            try lockFile.lockExclusive()
            self.lockFile = lockFile
            try Self.removeLeftovers(path: path, fileSystem: fileSystem)
            if fileSystem.kind(of: path) == .missing {
                try Self.create(path: path, options: options)
            }
        }

        file = try fileSystem.open(path, mode: options.readOnly ? .read : .readWrite)
        let fileSize = try file.size()
        let header = try StoreHeader.read(from: file, path: path, fileSize: fileSize)
        state = LiveState(header: header)
        var live = KeyDirectory()
        var entityCounts = EntityCounter()
        var liveRecordBytes: UInt64 = 0
        var metadataOffset: UInt64 = 0
        var nextKey = state.nextKey
        var lastNumber = state.lastNumber
        var lastCommitChecksum: UInt32?

        var start = UInt64(header.length)
        var indexState = IndexState.rebuilt
        let index = Self.loadIndex(
            path: path,
            fileSystem: fileSystem,
            header: header,
            file: file,
            fileSize: fileSize
        )
        if options.usesIndex && !options.salvage, let (index, directory, counts) = index {
            live = directory
            entityCounts = counts
            liveRecordBytes = index.liveBytes
            metadataOffset = index.metadataOffset
            nextKey = max(nextKey, index.nextKey)
            lastNumber = index.lastNumber
            lastCommitChecksum = index.lastCommitChecksum
            start = index.coveredLength
            indexState = .loaded
            if options.checksLastIndexedTransaction {
                try Self.checkLastIndexedTransaction(
                    file: file,
                    path: path,
                    fileSize: fileSize,
                    layout: header.layout,
                    allowsPatches: header.allowsPatches,
                    end: start
                )
            }
        }
        self.indexState = indexState

        var scanner = LogScanner(file: file, path: path, fileSize: fileSize, header: header)
        // Damage is classified the same way by every reader (see LogScanner's classify): a
        // transaction the index covers was acknowledged, and an incomplete last transaction is
        // in flight while another process holds the writer lock.
        scanner.acknowledgedLength = index?.0.coveredLength ?? 0
        scanner.hasActiveWriter =
            options.readOnly && fileSystem.hasActiveWriter(lockPath: path + LogFormat.lockSuffix)
        var replay = LogReplay(
            live: live,
            entityCounts: entityCounts,
            liveRecordBytes: liveRecordBytes,
            metadataOffset: metadataOffset,
            nextKey: nextKey,
            lastNumber: lastNumber,
            lastCommitChecksum: lastCommitChecksum,
            start: start
        )
        // Release this instance's references so the replay's keydir is uniquely referenced
        // and is updated in place.
        live = KeyDirectory()
        entityCounts = EntityCounter()
        if let keys = try Self.keyCountHint(
            scanner: scanner,
            fileSize: fileSize,
            start: start,
            liveCount: replay.live.count
        ) {
            replay.reserveCapacity(keys)
        }
        var damage: StoreDamage?
        let validEnd: UInt64
        var salvagedLastNumber: UInt64 = 0
        if options.salvage {
            // Every intact transaction is kept; each damaged one is dropped whole.
            let outcome = try scanner.salvage(from: start, lastNumber: lastNumber, visitor: &replay)
            validEnd = outcome.validEnd
            // A dropped transaction whose commit survived still counts: numbers go on after it.
            salvagedLastNumber = outcome.lastNumber
            damage = outcome.damages.first.map { StoreDamage($0.damage) }
            let directory = replay.live
            salvageReport = try SalvageReport(
                damages: outcome.damages.filter { $0.damage.kind != .inFlight },
                file: file,
                layout: header.layout,
                fileSize: fileSize,
                metadataOffset: replay.metadataOffset,
                location: { directory[$0] }
            )
        } else {
            let outcome = try scanner.scan(from: start, lastNumber: lastNumber, visitor: &replay)
            if outcome.damage != nil { replay.rollBack() }
            validEnd = outcome.validEnd
            if let found = outcome.damage {
                damage = StoreDamage(found)
                if found.kind == .corrupt {
                    throw StoreError(
                        .corrupt,
                        "\(found.reason); \(found.laterCommits) committed transaction(s) follow "
                            + "the damage (open read-only with salvage, or run `objectlog repair`)",
                        path: path,
                        offset: found.offset
                    )
                }
                if !options.readOnly {
                    // Cut the torn tail off before anything new is appended after it.
                    try file.truncate(to: outcome.validEnd)
                    try file.sync()
                }
            }
        }
        state.live = replay.live
        state.entityCounts = replay.entityCounts
        state.liveRecordBytes = replay.liveRecordBytes
        state.metadataOffset = replay.metadataOffset
        state.nextKey = replay.nextKey
        state.lastNumber = max(replay.lastNumber, salvagedLastNumber)
        state.lastCommitChecksum = replay.lastCommitChecksum
        state.endOffset = validEnd
        damageAtOpen = damage
        if indexState == .loaded, validEnd == start {
            state.indexedEnd = (header.generation, validEnd)
        }
        if state.metadataOffset != 0 {
            state.currentMetadata = try readMetadataRecord(at: state.metadataOffset)
        }
    }
    // MARK: - Closing

    // Here rather than in LogStore+Closing: a class's deinit, like its designated initialiser,
    // must be in the class body.
    deinit {
        try? close()
    }

    // MARK: - Locking

    /// Runs `body` while holding `lock`.
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}
