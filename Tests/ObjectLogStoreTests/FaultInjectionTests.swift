import Foundation
import Synchronization
import Testing

@testable import ObjectLogStore

/// A file system over memory that fails chosen operations: the store's I/O seam in a test.
final class FaultyFileSystem: FileSystem, Sendable {
    enum Operation: Sendable { case write, sync }

    private let base = MemoryFileSystem()
    private let failures = Mutex<[Operation: Int]>([:])  // operation → calls left before it fails

    /// Makes the `n`-th next call (1 = the next) of `operation` fail with EIO.
    func fail(_ operation: Operation, after calls: Int) {
        failures.withLock { $0[operation] = calls }
    }

    func shouldFail(_ operation: Operation) -> Bool {
        failures.withLock { failures in
            guard let left = failures[operation] else { return false }
            if left <= 1 {
                failures[operation] = nil
                return true
            }
            failures[operation] = left - 1
            return false
        }
    }

    func open(_ path: String, mode: FileOpenMode) throws -> any StoreFile {
        FaultyFile(base: try base.open(path, mode: mode), owner: self)
    }
    func kind(of path: String) -> FileKind { base.kind(of: path) }
    func rename(_ source: String, to destination: String) throws {
        try base.rename(source, to: destination)
    }
    func remove(_ path: String) throws { try base.remove(path) }
    func syncDirectory(_ path: String) throws { try base.syncDirectory(path) }
    func makeDirectory(_ path: String, permissions: UInt32) throws {
        try base.makeDirectory(path, permissions: permissions)
    }
    func contents(ofDirectory path: String) throws -> [String] {
        try base.contents(ofDirectory: path)
    }
}

final class FaultyFile: StoreFile {
    let base: any StoreFile
    let owner: FaultyFileSystem

    init(base: any StoreFile, owner: FaultyFileSystem) {
        self.base = base
        self.owner = owner
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        try base.read(into: buffer, at: offset)
    }
    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        if owner.shouldFail(.write) {
            // A short write: half the bytes land, then the error.
            try base.write(
                UnsafeRawBufferPointer(rebasing: bytes[0..<(bytes.count / 2)]),
                at: offset
            )
            throw StoreError(.io, "write failed: Input/output error (injected)", errno: EIO)
        }
        try base.write(bytes, at: offset)
    }
    func size() throws -> UInt64 { try base.size() }
    func truncate(to size: UInt64) throws { try base.truncate(to: size) }
    func sync() throws {
        if owner.shouldFail(.sync) {
            throw StoreError(.io, "fdatasync failed: Input/output error (injected)", errno: EIO)
        }
        try base.sync()
    }
    func lockExclusive() throws { try base.lockExclusive() }
    func close() { base.close() }
}

@Suite("Fault injection")
struct FaultInjectionTests {
    private func insert(_ store: LogStore, _ byte: UInt8) throws -> ObjectKey {
        var transaction = Transaction()
        let key = store.allocateKeys(1).lowerBound
        transaction.put(key: key, entity: 1, payload: [byte], isInsert: true)
        try store.commit(transaction)
        return key
    }

    @Test("a failed fsync poisons the handle; a reopen shows the last committed state")
    func fsyncPoisons() throws {
        let fileSystem = FaultyFileSystem()
        let options = StoreOptions(fileSystem: fileSystem)
        let store = try LogStore.open(path: "/s.olog", options: options)
        let first = try insert(store, 1)
        fileSystem.fail(.sync, after: 1)
        #expect(throws: StoreError.self) { _ = try insert(store, 2) }
        let poisoned = #expect(throws: StoreError.self) { _ = try insert(store, 3) }
        #expect(poisoned?.code == .poisoned)
        try store.close()
        let reopened = try LogStore.open(path: "/s.olog", options: options)
        // The unsynced save may or may not have reached the disk; the acknowledged one has.
        #expect(try reopened.readObject(first)?.payload == [1])
        let afterwards = try insert(reopened, 4)
        #expect(try reopened.readObject(afterwards)?.payload == [4])
    }

    @Test("a failed write is cut back, so the next save follows the last commit")
    func failedWriteIsCutBack() throws {
        let fileSystem = FaultyFileSystem()
        let options = StoreOptions(fileSystem: fileSystem)
        let store = try LogStore.open(path: "/w.olog", options: options)
        let first = try insert(store, 1)
        let end = store.fileBytes
        fileSystem.fail(.write, after: 1)
        let error = #expect(throws: StoreError.self) { _ = try insert(store, 2) }
        #expect(error?.code == .io)
        #expect(store.fileBytes == end)
        let third = try insert(store, 3)
        try store.close()
        let reopened = try LogStore.open(path: "/w.olog", options: options)
        #expect(reopened.damageAtOpen == nil)
        #expect(try snapshot(reopened) == [first: [1], third: [3]])
    }
}
