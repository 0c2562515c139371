import Foundation
import ObjectLogStore

/// A file system over another that can hold a chosen `fdatasync` of a store file until the
/// test lets it go: what makes several threads' commits meet one flush on cue.
///
/// Syncs of files (not of directories) are numbered from 1 in the order they start. A sync
/// held after syncing waits once the file system underneath has synced (or failed to): what
/// is written while it waits is not covered by it, as with an `fdatasync` that has done its
/// work and not returned yet. One held before syncing waits first: what is written meanwhile
/// is covered, and a power cut taken meanwhile finds none of it durable.
package final class GatedFileSystem: FileSystem, @unchecked Sendable {
    // `@unchecked Sendable`: the counters are read and written only under `condition`.
    private let base: any FileSystem
    private let condition = NSCondition()
    private var started = 0
    private var writes = 0
    private var held: [Int: Moment] = [:]
    private var waiting: Set<Int> = []

    package init(base: any FileSystem) {
        self.base = base
    }

    /// When a held sync waits.
    package enum Moment: Sendable {
        case beforeSyncing, afterSyncing
    }

    /// Makes the `number`-th sync (counting from the first of this file system) wait until
    /// ``release(sync:)``, after syncing unless asked otherwise.
    package func hold(sync number: Int, _ moment: Moment = .afterSyncing) {
        condition.withLock { held[number] = moment }
    }

    /// Waits until the `number`-th sync is waiting at its hold.
    package func waitUntilHolding(sync number: Int) {
        condition.withLock {
            while !waiting.contains(number) { condition.wait() }
        }
    }

    /// Lets the `number`-th sync go on (or, if it has not started, go by without waiting).
    package func release(sync number: Int) {
        condition.withLock {
            held[number] = nil
            condition.broadcast()
        }
    }

    /// Syncs of files started so far.
    package var syncCount: Int { condition.withLock { started } }

    /// Writes to files so far.
    package var writeCount: Int { condition.withLock { writes } }

    /// Waits until at least `count` writes to files have been made.
    package func waitForWrites(_ count: Int) {
        condition.withLock {
            while writes < count { condition.wait() }
        }
    }

    fileprivate func countWrite() {
        condition.withLock {
            writes += 1
            condition.broadcast()
        }
    }

    /// Counts a sync; its number.
    fileprivate func startSync() -> Int {
        condition.withLock {
            started += 1
            return started
        }
    }

    /// Waits while the `number`-th sync is held at `moment`.
    fileprivate func holdIfAsked(_ number: Int, _ moment: Moment) {
        condition.withLock {
            guard held[number] == moment else { return }
            waiting.insert(number)
            condition.broadcast()
            while held[number] != nil { condition.wait() }
            waiting.remove(number)
        }
    }

    package func open(_ path: String, mode: FileOpenMode) throws -> any StoreFile {
        GatedFile(base: try base.open(path, mode: mode), owner: self)
    }
    package func kind(of path: String) -> FileKind { base.kind(of: path) }
    package func rename(_ source: String, to destination: String) throws {
        try base.rename(source, to: destination)
    }
    package func remove(_ path: String) throws { try base.remove(path) }
    package func removeDirectory(_ path: String) throws { try base.removeDirectory(path) }
    package func syncDirectory(_ path: String) throws { try base.syncDirectory(path) }
    package func makeDirectory(_ path: String, permissions: UInt32) throws {
        try base.makeDirectory(path, permissions: permissions)
    }
    package func contents(ofDirectory path: String) throws -> [String] {
        try base.contents(ofDirectory: path)
    }
}

private final class GatedFile: StoreFile {
    let base: any StoreFile
    let owner: GatedFileSystem

    init(base: any StoreFile, owner: GatedFileSystem) {
        self.base = base
        self.owner = owner
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        try base.read(into: buffer, at: offset)
    }
    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        try base.write(bytes, at: offset)
        owner.countWrite()
    }
    func size() throws -> UInt64 { try base.size() }
    func truncate(to size: UInt64) throws { try base.truncate(to: size) }
    func sync() throws {
        let number = owner.startSync()
        owner.holdIfAsked(number, .beforeSyncing)
        defer { owner.holdIfAsked(number, .afterSyncing) }
        try base.sync()
    }
    func lockExclusive() throws { try base.lockExclusive() }
    func close() { base.close() }
}
