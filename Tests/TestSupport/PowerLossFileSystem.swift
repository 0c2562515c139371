import Foundation
import ObjectLogStore
import Synchronization

/// A file system that remembers what is durable, so a test can cut the power at any sync
/// point: like SQLite's crash-test VFS.
///
/// Writes land in a file's *current* bytes; `sync` makes them durable. Directory entries
/// (creations, renames, removals) become durable only when their directory is synced. At the
/// crash, every 512-byte sector written since the file's last sync is independently kept,
/// dropped (back to its durable bytes) or garbled, a grown file keeps its durable or its new
/// length, and every unsynced directory change is lost.
package final class PowerLossFileSystem: FileSystem, Sendable {
    package struct Crash: Error {}

    final class Inode: @unchecked Sendable {
        // Guarded by the file system's mutex.
        var current: [UInt8] = []
        var durable: [UInt8] = []
        var dirtySectors: Set<Int> = []
        var isLocked = false
    }

    struct State {
        var names: [String: Inode] = [:]
        var durableNames: [String: Inode] = [:]
        var directories: Set<String> = []
        var syncs = 0
        var crashAtSync: Int?
        var crashed = false
    }

    private let state = Mutex(State())

    package init(crashAtSync: Int?) {
        state.withLock { $0.crashAtSync = crashAtSync }
    }

    /// Makes the `count`-th sync point from now the crash.
    package func crash(afterSyncs count: Int) {
        state.withLock { $0.crashAtSync = $0.syncs + count }
    }

    /// Whether the crash has happened.
    package var hasCrashed: Bool { state.withLock { $0.crashed } }

    package var syncCount: Int { state.withLock { $0.syncs } }

    /// Counts a sync point; throws `Crash` (and refuses all later I/O) at the chosen one.
    func syncPoint(_ body: (inout State) -> Void) throws {
        try state.withLock { state in
            if state.crashed { throw Crash() }
            state.syncs += 1
            if state.syncs == state.crashAtSync {
                state.crashed = true
                throw Crash()
            }
            body(&state)
        }
    }

    fileprivate func withState<R>(_ body: (inout State) throws -> R) throws -> R {
        try state.withLock { state in
            if state.crashed { throw Crash() }
            return try body(&state)
        }
    }

    /// The disk as the power cut leaves it, as a fresh file system.
    package func afterPowerLoss(seed: UInt64) -> PowerLossFileSystem {
        let survivor = PowerLossFileSystem(crashAtSync: nil)
        var generator = SeededGenerator(seed: seed)
        state.withLock { old in
            var images: [ObjectIdentifier: Inode] = [:]
            for (name, inode) in old.durableNames {
                let image: Inode
                if let existing = images[ObjectIdentifier(inode)] {
                    image = existing
                } else {
                    image = Inode()
                    var bytes = inode.durable
                    let grownLength = inode.current.count
                    if grownLength > bytes.count, Bool.random(using: &generator) {
                        bytes.append(contentsOf: repeatElement(0, count: grownLength - bytes.count))
                    }
                    for sector in inode.dirtySectors.sorted() {
                        let start = sector * 512
                        guard start < bytes.count else { continue }
                        let end = min(start + 512, bytes.count)
                        switch Int.random(in: 0..<3, using: &generator) {
                        case 0:  // kept: the new bytes reached the disk
                            let keep = min(end, inode.current.count)
                            if keep > start {
                                bytes.replaceSubrange(
                                    start..<keep,
                                    with: inode.current[start..<keep]
                                )
                            }
                        case 1:  // dropped: the old bytes stay
                            break
                        default:  // garbled
                            for index in start..<end {
                                bytes[index] = UInt8.random(in: 0...255, using: &generator)
                            }
                        }
                    }
                    image.current = bytes
                    image.durable = bytes
                    images[ObjectIdentifier(inode)] = image
                }
                survivor.state.withLock {
                    $0.names[name] = image
                    $0.durableNames[name] = image
                }
            }
            survivor.state.withLock { $0.directories = old.directories }
        }
        return survivor
    }

    package func open(_ path: String, mode: FileOpenMode) throws -> any StoreFile {
        let inode: Inode = try withState { state in
            if let inode = state.names[path] {
                if mode.create && mode.exclusive { throw StoreError(.io, "exists", path: path) }
                return inode
            }
            guard mode.create else { throw StoreError(.notFound, "no such file", path: path) }
            let inode = Inode()
            state.names[path] = inode
            return inode
        }
        return PowerLossFile(inode: inode, fileSystem: self, path: path)
    }

    package func kind(of path: String) -> FileKind {
        state.withLock { state in
            if state.names[path] != nil { return .regular }
            return state.directories.contains(path) ? .directory : .missing
        }
    }

    package func rename(_ source: String, to destination: String) throws {
        try withState { state in
            guard let inode = state.names.removeValue(forKey: source) else {
                throw StoreError(.io, "no such file", path: source)
            }
            state.names[destination] = inode
        }
    }

    package func remove(_ path: String) throws {
        try withState { state in _ = state.names.removeValue(forKey: path) }
    }

    package func syncDirectory(_ path: String) throws {
        let prefix = path == "/" ? "/" : path + "/"
        try syncPoint { state in
            func inDirectory(_ name: String) -> Bool {
                name.hasPrefix(prefix) && !name.dropFirst(prefix.count).contains("/")
            }
            for name in state.durableNames.keys where inDirectory(name) && state.names[name] == nil
            {
                state.durableNames[name] = nil
            }
            for (name, inode) in state.names where inDirectory(name) {
                state.durableNames[name] = inode
            }
        }
    }

    package func makeDirectory(_ path: String, permissions: UInt32) throws {
        try withState { state in _ = state.directories.insert(path) }
    }

    package func contents(ofDirectory path: String) throws -> [String] {
        let prefix = path + "/"
        return try withState { state in
            state.names.keys.compactMap { name in
                guard name.hasPrefix(prefix) else { return nil }
                let rest = name.dropFirst(prefix.count)
                return rest.contains("/") ? nil : String(rest)
            }
        }
    }
}

package final class PowerLossFile: StoreFile {
    let inode: PowerLossFileSystem.Inode
    let fileSystem: PowerLossFileSystem
    let path: String
    var holdsLock = false

    init(inode: PowerLossFileSystem.Inode, fileSystem: PowerLossFileSystem, path: String) {
        self.inode = inode
        self.fileSystem = fileSystem
        self.path = path
    }

    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        try fileSystem.withState { _ in
            guard offset < UInt64(inode.current.count) else { return 0 }
            let start = Int(offset)
            let count = min(buffer.count, inode.current.count - start)
            inode.current.withUnsafeBytes {
                buffer.copyMemory(
                    from: UnsafeRawBufferPointer(rebasing: $0[start..<(start + count)])
                )
            }
            return count
        }
    }

    package func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        try fileSystem.withState { _ in
            let start = Int(offset)
            if inode.current.count < start + bytes.count {
                inode.current.append(
                    contentsOf: repeatElement(0, count: start + bytes.count - inode.current.count)
                )
            }
            inode.current.withUnsafeMutableBytes { target in
                UnsafeMutableRawBufferPointer(rebasing: target[start..<(start + bytes.count)])
                    .copyMemory(from: bytes)
            }
            if bytes.count > 0 {
                for sector in (start / 512)...((start + bytes.count - 1) / 512) {
                    inode.dirtySectors.insert(sector)
                }
            }
        }
    }

    package func size() throws -> UInt64 {
        try fileSystem.withState { _ in UInt64(inode.current.count) }
    }

    package func truncate(to size: UInt64) throws {
        try fileSystem.withState { _ in
            let target = Int(size)
            if inode.current.count > target {
                inode.current.removeLast(inode.current.count - target)
            } else if inode.current.count < target {
                inode.current.append(
                    contentsOf: repeatElement(0, count: target - inode.current.count)
                )
            }
            inode.dirtySectors.insert(target / 512)
        }
    }

    package func sync() throws {
        try fileSystem.syncPoint { _ in
            inode.durable = inode.current
            inode.dirtySectors.removeAll()
        }
    }

    package func lockExclusive() throws {
        try fileSystem.withState { _ in
            if inode.isLocked { throw StoreError(.locked, "locked", path: path) }
            inode.isLocked = true
            holdsLock = true
        }
    }

    package func close() {
        if holdsLock {
            try? fileSystem.withState { _ in inode.isLocked = false }
            holdsLock = false
        }
    }
}
