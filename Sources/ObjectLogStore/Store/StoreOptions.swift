import Foundation

/// How to open a store.
public struct StoreOptions: Sendable {
    /// Open without writing anything and without taking the writer lock.
    public var readOnly = false
    /// Make each commit durable before it returns.
    ///
    /// Durable means `write` then `fdatasync`: one flush per save from one thread; saves from
    /// several threads share flushes, each returning once a flush that covers it completes.
    /// Turning this off is for bulk loads only: a crash may lose recent commits (never atomicity).
    public var durable = true
    /// Create the store if no file is at the path (not with `readOnly`).
    public var createIfMissing = true
    /// Permission bits of files the store creates.
    public var fileMode: UInt32 = 0o600
    /// Open a damaged store read-only (whatever `readOnly` says) with every intact committed
    /// transaction, dropping each damaged one whole, instead of failing.
    ///
    /// The whole log is replayed (the index checkpoint is not used, as it could skip damage).
    /// What was dropped is in ``LogStore/salvageReport``; see ``SalvageReport``.
    public var salvage = false
    /// Use the index checkpoint when it is valid; `false` forces a replay of the whole log.
    public var usesIndex = true
    /// With ``readOnly``, follow the process that writes the file: read each transaction it
    /// commits into this handle's state as it comes, so that a container's contexts merge it.
    ///
    /// Off by default: a read-only open then reads the store as it was when it opened, a
    /// committed state that never changes under its reads.
    public var followsWriter = false
    /// Compact automatically after a commit once at least this share of the file (0 to 1) is
    /// reclaimable and the file has at least ``autoCompactionMinimumBytes``; nil (the
    /// default) never does.
    ///
    /// Updates append whole new versions of objects and old versions stay in the file until a
    /// compaction, so a store whose objects change often keeps growing without one. The
    /// compaction runs in the committing call, after the commit is durable; if it fails, the
    /// commit stands and the store stays as it was (compaction is crash-safe).
    public var autoCompactionThreshold: Double?
    /// The smallest file that ``autoCompactionThreshold`` compacts (1 MiB by default): small
    /// stores are cheap to keep as they are.
    public var autoCompactionMinimumBytes: UInt64 = 1 << 20
    /// The size from which data of an external-storage attribute goes to a blob file beside
    /// the store (16 KiB by default); smaller data stays in the log.
    ///
    /// A blob is written once and referred to by every later version of its object, so a store
    /// whose objects keep large values that rarely change while other values do (a picture
    /// beside a name) writes less with a lower size here; each blob is a file of its own.
    public var externalStorageMinimumByteCount = 16 * 1024
    /// The file system under the store: the real one, an in-memory one, or a test double.
    package var fileSystem: any FileSystem = PosixFileSystem()
    /// Whether an open through the index checkpoint reads the last indexed transaction again
    /// (see `checkLastIndexedTransaction`); tests of the checks made as objects are read turn
    /// it off to meet their damage there.
    package var checksLastIndexedTransaction = true
    /// The log of the size of the windows bulk loads read the file through (1 MiB: a window
    /// that stays in the processor's cache while its records are checked and decoded, where a
    /// larger one is read back from memory; see "8 MiB bulk-load windows" in
    /// Benchmarks/README.md); tests make it small to cross many windows with little data.
    package var bulkReadWindowShift: UInt64 = 20

    /// The default options: read-write, durable, created if missing, files mode 0600.
    public init() {}

    /// Options for a log store whose files are held in memory: every feature of the log
    /// (compaction, backups, its statistics) without touching a disk, for tests of them.
    ///
    /// Each use makes a new, empty file system: two in-memory stores never share data. For
    /// objects in memory only, without a log, the engine has an in-memory store of its own.
    public static var inMemory: StoreOptions {
        var options = StoreOptions()
        options.fileSystem = MemoryFileSystem()
        return options
    }

    /// Options with an explicit file system (the test seam).
    package init(fileSystem: any FileSystem) {
        self.fileSystem = fileSystem
    }
}
