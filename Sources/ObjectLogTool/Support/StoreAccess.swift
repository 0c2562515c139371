import CommandLineKit
import ObjectLogPostgreSQL
import ObjectLogStore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How the commands open stores: read-only ones never write, lock or truncate; writing ones
/// check the store read-only before they take the writer lock.
enum StoreAccess {
    /// Opens the store without writing anything and without taking the writer lock.
    ///
    /// - Throws: `StoreError` `.notFound`, `.notAStore`, `.unsupportedVersion`, `.corrupt`,
    ///   `.io`.
    static func openReadOnly(_ path: String) throws -> LogStore {
        try refuseDatabase(path)
        var options = StoreOptions()
        options.readOnly = true
        options.createIfMissing = false
        return try LogStore.open(path: path, options: options)
    }

    /// Opens the store read-only with salvage, checking every record (no index checkpoint):
    /// the store without its damaged transactions, and its damage classified as ``inspect(_:checkBlobs:)``
    /// classifies it, so every command shows the same state and reports the same damage.
    ///
    /// - Throws: `StoreError` `.notFound`, `.notAStore`, `.unsupportedVersion`, `.corrupt` (a
    ///   damaged header), `.io`.
    static func openSalvaging(_ path: String) throws -> LogStore {
        try refuseDatabase(path)
        var options = StoreOptions()
        options.readOnly = true
        options.salvage = true
        options.usesIndex = false
        options.createIfMissing = false
        return try LogStore.open(path: path, options: options)
    }

    /// Opens the store for writing, after a read-only check that it is a whole, undamaged store.
    ///
    /// The check comes first so that nothing (not even the lock file beside it) is created next
    /// to a file that is not a store, and so that a torn tail is not cut off silently: a
    /// writable open would truncate it.
    ///
    /// - Parameters:
    ///   - path: The store file.
    ///   - discardingTornTail: Whether a torn tail may be cut off (otherwise it is refused).
    ///   - checking: Further checks of the store, opened read-only, before anything is
    ///     written; what it throws refuses the store.
    /// - Returns: The store, open for writing; the caller closes it.
    /// - Throws: `StoreError` (`.locked` when another process writes the store),
    ///   ``CommandError`` (exit 65) for a torn tail, or what `checking` throws.
    static func openForWriting(
        _ path: String,
        discardingTornTail: Bool = false,
        checking: (LogStore) throws -> Void = { _ in }
    ) throws -> LogStore {
        let check = try openReadOnly(path)
        let damage = check.damageAtOpen
        do {
            try checking(check)
        } catch {
            try? check.close()
            throw error
        }
        try check.close()
        if let damage, damage.isDamage, !discardingTornTail {
            throw CommandError(
                "\(path): \(damage); writing would cut off the incomplete last transaction — "
                    + "check with 'objectlog verify', then run 'objectlog compact "
                    + "--discard-torn-tail' to drop it (or 'objectlog recover')",
                exitCode: .dataError
            )
        }
        var options = StoreOptions()
        options.createIfMissing = false
        // A writer that is closing, or a child another process forks while holding the store
        // (the lock goes with the descriptor until `exec`), keeps the lock for a moment: wait
        // briefly before reporting the store as locked.
        let deadline = ContinuousClock.now + lockWait
        while true {
            do {
                return try LogStore.open(path: path, options: options)
            } catch let error as StoreError where error.code == .locked {
                guard ContinuousClock.now < deadline else { throw error }
                usleep(10_000)
            }
        }
    }

    /// Refuses, with exit 65, to read objects stored as patches when there is no model to
    /// merge them with.
    ///
    /// A patch holds only the properties it changes: the object's value is the merge of its
    /// base's value with them, which only the model that wrote it can compute (FORMAT.md,
    /// section 10). Commands call this when the store gives them no model.
    ///
    /// - Parameters:
    ///   - store: The open store.
    ///   - path: The store, for the message.
    ///   - keys: The objects the command would read (default: every live object).
    ///   - modelProblem: Why there is no model, when the store records one that cannot be read.
    ///   - remedy: What the user can do instead, the message's last clause.
    /// - Throws: ``CommandError`` (exit 65) naming the first patched object and how many there are.
    static func requireMergeablePatches(
        _ store: LogStore,
        path: String,
        keys: [ObjectKey]? = nil,
        modelProblem: String?,
        remedy: String
    ) throws(CommandError) {
        let patched = (keys ?? store.liveKeys(entity: nil)).filter {
            store.location(of: $0)?.isPatch == true
        }
        guard let first = patched.first else { return }
        let objects =
            patched.count == 1
            ? "object #\(first) is stored as a patch"
            : "\(patched.count) objects (#\(first) first) are stored as patches"
        throw CommandError(
            "\(path): \(objects), which only the store's model can merge with its base, and "
                + (modelProblem ?? "the store records no ObjectLog model") + "; " + remedy,
            exitCode: .dataError
        )
    }

    /// How long a writing command waits for another writer's lock before giving up.
    static let lockWait = Duration.milliseconds(500)

    /// Examines the store read-only.
    ///
    /// - Throws: `StoreError` when the file is not a store or its header is damaged.
    static func inspect(_ path: String, checkBlobs: Bool) throws -> StoreInspection {
        try refuseDatabase(path)
        return try StoreInspection(path: path, checkBlobs: checkBlobs)
    }

    /// Refuses a database's URI where a command reads or writes store files only.
    ///
    /// - Throws: ``CommandError`` (usage) naming the database (never its password).
    static func refuseDatabase(_ path: String) throws(CommandError) {
        guard StoreLocation.isDatabase(path) else { return }
        throw CommandError(
            "\(StoreLocation.displayName(path)) is a PostgreSQL database, and this command works "
                + "on store files only (info and dump read a database; 'objectlog import' copies "
                + "its store into a file)",
            exitCode: .usage
        )
    }
}
