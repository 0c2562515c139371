import Foundation
import ObjectLogStore
import Synchronization

/// A file system over memory that fails chosen operations: the store's I/O seam in a test.
///
/// It counts calls of each kind of operation and makes the `n`-th fail with a chosen `errno`; a
/// failing write first writes half its bytes (a short write).
package final class FaultyFileSystem: FileSystem, Sendable {
    package enum Operation: Sendable, CaseIterable { case write, sync, rename, directorySync }

    private struct Plan {
        var counts: [Operation: Int] = [:]
        var failing: (operation: Operation, call: Int, errno: Int32)?
    }

    private let base = MemoryFileSystem()

    package init() {}
    private let plan = Mutex(Plan())

    /// Makes the `calls`-th next call (1 = the next) of `operation` fail with `errno`.
    package func fail(_ operation: Operation, after calls: Int, errno: Int32 = EIO) {
        plan.withLock { plan in
            plan.failing = (operation, (plan.counts[operation] ?? 0) + calls, errno)
        }
    }

    /// Stops failing.
    package func heal() { plan.withLock { $0.failing = nil } }

    /// Calls of `operation` so far.
    package func count(_ operation: Operation) -> Int {
        plan.withLock { $0.counts[operation] ?? 0 }
    }

    /// Counts a call; returns the errno to fail it with, if it is the chosen one.
    package func check(_ operation: Operation) -> Int32? {
        plan.withLock { plan in
            let call = (plan.counts[operation] ?? 0) + 1
            plan.counts[operation] = call
            guard let failing = plan.failing, failing.operation == operation, failing.call == call
            else { return nil }
            plan.failing = nil
            return failing.errno
        }
    }

    package func open(_ path: String, mode: FileOpenMode) throws -> any StoreFile {
        FaultyFile(base: try base.open(path, mode: mode), owner: self)
    }
    package func kind(of path: String) -> FileKind { base.kind(of: path) }
    package func rename(_ source: String, to destination: String) throws {
        if let code = check(.rename) {
            throw StoreError(.io, "rename failed (injected)", path: source, errno: code)
        }
        try base.rename(source, to: destination)
    }
    package func remove(_ path: String) throws { try base.remove(path) }
    package func syncDirectory(_ path: String) throws {
        if let code = check(.directorySync) {
            throw StoreError(.io, "fsync failed (injected)", path: path, errno: code)
        }
        try base.syncDirectory(path)
    }
    package func makeDirectory(_ path: String, permissions: UInt32) throws {
        try base.makeDirectory(path, permissions: permissions)
    }
    package func contents(ofDirectory path: String) throws -> [String] {
        try base.contents(ofDirectory: path)
    }
}

package final class FaultyFile: StoreFile {
    package let base: any StoreFile
    package let owner: FaultyFileSystem

    package init(base: any StoreFile, owner: FaultyFileSystem) {
        self.base = base
        self.owner = owner
    }

    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        try base.read(into: buffer, at: offset)
    }
    package func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        if let code = owner.check(.write) {
            // A short write: half the bytes land, then the error.
            try base.write(
                UnsafeRawBufferPointer(rebasing: bytes[0..<(bytes.count / 2)]),
                at: offset
            )
            throw StoreError(.io, "write failed (injected errno \(code))", errno: code)
        }
        try base.write(bytes, at: offset)
    }
    package func size() throws -> UInt64 { try base.size() }
    package func truncate(to size: UInt64) throws { try base.truncate(to: size) }
    package func sync() throws {
        if let code = owner.check(.sync) {
            throw StoreError(.io, "fdatasync failed (injected errno \(code))", errno: code)
        }
        try base.sync()
    }
    package func lockExclusive() throws { try base.lockExclusive() }
    package func close() { base.close() }
}
