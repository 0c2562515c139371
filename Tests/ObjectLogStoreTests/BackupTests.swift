import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ObjectLogStore

/// A memory file system that runs a hook once, the first time a file under a given folder is
/// opened: a test's way to act in the middle of a backup.
final class HookedFileSystem: FileSystem, Sendable {
    private let base = MemoryFileSystem()
    private let hook = Mutex<(folder: String, action: @Sendable () throws -> Void)?>(nil)

    /// Runs `action` the first time a file under `folder` is opened.
    func onFirstOpen(under folder: String, _ action: @escaping @Sendable () throws -> Void) {
        hook.withLock { $0 = (folder, action) }
    }

    func open(_ path: String, mode: FileOpenMode) throws -> any StoreFile {
        let action = hook.withLock { hook -> (@Sendable () throws -> Void)? in
            guard let folder = hook?.folder, path.hasPrefix(folder + "/") else { return nil }
            defer { hook = nil }
            return hook?.action
        }
        try action?()
        return try base.open(path, mode: mode)
    }
    func kind(of path: String) -> FileKind { base.kind(of: path) }
    func rename(_ source: String, to destination: String) throws {
        try base.rename(source, to: destination)
    }
    func remove(_ path: String) throws { try base.remove(path) }
    func removeDirectory(_ path: String) throws { try base.removeDirectory(path) }
    func syncDirectory(_ path: String) throws { try base.syncDirectory(path) }
    func makeDirectory(_ path: String, permissions: UInt32) throws {
        try base.makeDirectory(path, permissions: permissions)
    }
    func contents(ofDirectory path: String) throws -> [String] {
        try base.contents(ofDirectory: path)
    }
}

@Suite("Backup")
struct BackupTests {
    /// Puts `count` objects, each referring to a blob of its own, and sets metadata.
    private static func fill(_ store: LogStore, count: Int, tag: UInt8) throws -> [ObjectKey] {
        var transaction = Transaction()
        let keys = Array(store.allocateKeys(count))
        for key in keys {
            let blob = try store.writeBlob(Data(repeating: tag &+ UInt8(key % 200), count: 300))
            transaction.put(
                key: key,
                entity: 1,
                payload: [tag, UInt8(key % 256)],
                blobs: [blob],
                isInsert: true
            )
        }
        transaction.metadata = ["filled": .integer(Int64(tag))]
        try store.commit(transaction)
        return keys
    }

    /// Every live object of `store` with its payload and its blobs' bytes.
    private static func contents(_ store: LogStore) throws -> [ObjectKey: [UInt8]] {
        var result: [ObjectKey: [UInt8]] = [:]
        for key in store.liveKeys(entity: nil) {
            let (payload, blobs) = try #require(try store.readObject(key))
            result[key] =
                payload + blobs.flatMap { (try? store.readBlob($0)).map(Array.init) ?? [] }
        }
        return result
    }

    @Test("a backup opens as the store it copied, with its index, metadata and blobs")
    func copiesEverything() throws {
        let fileSystem = MemoryFileSystem()
        let options = StoreOptions(fileSystem: fileSystem)
        let store = try LogStore.open(path: "/s.olog", options: options)
        _ = try Self.fill(store, count: 20, tag: 1)
        let second = try Self.fill(store, count: 10, tag: 2)
        var delete = Transaction()
        delete.delete(key: second[0], entity: 1)
        try store.commit(delete)
        let expected = try Self.contents(store)

        let report = try LogStore.backup(path: "/s.olog", to: "/b.olog", options: options)
        #expect(report.objects == expected.count)
        #expect(report.transactionNumber == store.transactionCount)
        #expect(report.logBytes == store.locked { store.state.endOffset })
        #expect(report.blobs == 30 && report.restarts == 0)
        let copy = try LogStore.open(path: "/b.olog", options: options)
        #expect(copy.indexState == .loaded)
        #expect(try Self.contents(copy) == expected)
        #expect(copy.metadata == ["filled": .integer(2)])
        // The copy is a store of its own: writing to it leaves the original alone.
        _ = try Self.fill(copy, count: 1, tag: 3)
        #expect(try Self.contents(store) == expected)
    }

    @Test("a destination that exists is refused, and nothing is written")
    func refusesExistingDestination() throws {
        let fileSystem = MemoryFileSystem()
        let options = StoreOptions(fileSystem: fileSystem)
        let store = try LogStore.open(path: "/s.olog", options: options)
        _ = try Self.fill(store, count: 3, tag: 1)
        let existing = try LogStore.open(path: "/b.olog", options: options)
        try existing.close()
        let before = try fileSystem.open("/b.olog", mode: .read).read(at: 0, count: 1 << 16)
        let refused = #expect(throws: StoreError.self) {
            try LogStore.backup(path: "/s.olog", to: "/b.olog", options: options)
        }
        #expect(refused?.code == .invalidArgument)
        #expect(try fileSystem.open("/b.olog", mode: .read).read(at: 0, count: 1 << 16) == before)
        #expect(fileSystem.kind(of: "/b.olog" + LogFormat.blobsSuffix) == .missing)
    }

    @Test("a compaction during the copy starts it again, and the copy keeps every blob it needs")
    func compactionRestartsTheCopy() throws {
        let fileSystem = HookedFileSystem()
        let options = StoreOptions(fileSystem: fileSystem)
        let store = try LogStore.open(path: "/s.olog", options: options)
        let keys = try Self.fill(store, count: 10, tag: 1)
        // While the backup copies the blobs: half the objects are deleted and the store
        // compacted, which removes their blobs; the copied log still refers to them.
        fileSystem.onFirstOpen(under: "/s.olog" + LogFormat.blobsSuffix) {
            var delete = Transaction()
            for key in keys.prefix(5) { delete.delete(key: key, entity: 1) }
            try store.commit(delete)
            try store.compact()
        }
        let report = try LogStore.backup(path: "/s.olog", to: "/b.olog", options: options)
        #expect(report.restarts == 1)
        #expect(report.objects == 5 && report.blobs == 5)
        let copy = try LogStore.open(path: "/b.olog", options: options)
        #expect(try Self.contents(copy) == (try Self.contents(store)))
        #expect(copy.generation == store.generation)
    }

    @Test("backups taken while a writer saves are each a state the writer committed")
    func backupsWhileWriting() throws {
        let directory = TemporaryDirectory()
        let path = directory.path + "/live.olog"
        let store = try LogStore.open(path: path)
        _ = try Self.fill(store, count: 50, tag: 0)
        // The writer's state after each of its transactions, by number.
        let states = WriterStates()
        states.value.withLock { $0[store.transactionCount] = try? Self.contents(store) }
        let writer = Thread {
            for round in 1...40 {
                _ = try? Self.fill(store, count: 5, tag: UInt8(round))
                let contents = try? Self.contents(store)
                states.value.withLock { $0[store.transactionCount] = contents }
            }
        }
        writer.start()
        var checked = 0
        for attempt in 0..<6 {
            let destination = directory.path + "/backup-\(attempt).olog"
            let report = try LogStore.backup(path: path, to: destination)
            let copy = try LogStore.open(path: destination)
            let copied = try Self.contents(copy)
            // The writer records a state after its commit returns: wait for it.
            var expected: [ObjectKey: [UInt8]]?
            for _ in 0..<1_000 {
                expected = states.value.withLock { $0[report.transactionNumber] }
                if expected != nil { break }
                usleep(1_000)
            }
            #expect(
                copied == expected,
                "backup \(attempt) at transaction \(report.transactionNumber)"
            )
            try copy.close()
            checked += 1
        }
        while !writer.isFinished { usleep(1_000) }
        #expect(checked == 6)
    }
}

/// The states a writer thread committed, by transaction number.
private final class WriterStates: Sendable {
    let value = Mutex<[UInt64: [ObjectKey: [UInt8]]]>([:])
}
