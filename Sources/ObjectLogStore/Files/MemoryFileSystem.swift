/// A file system held entirely in memory: the backing of in-memory stores, and the base of the
/// fault-injecting file systems in the tests.
///
/// Files are byte arrays; `sync` does nothing; locks are per file and exclusive.
package final class MemoryFileSystem: FileSystem, Sendable {
    final class Node: @unchecked Sendable {
        // Guarded by the file system's lock.
        var bytes: [UInt8] = []
        var isLocked = false
    }

    private struct State {
        var files: [String: Node] = [:]
        var directories: Set<String> = []
    }

    private let state = LockedValue(State())

    package init() {}

    package func open(_ path: String, mode: FileOpenMode) throws -> any StoreFile {
        let result: Result<Node, StoreError> = state.withLock { state in
            if let node = state.files[path] {
                if mode.create && mode.exclusive {
                    return .failure(StoreError(.io, "cannot open: File exists", path: path))
                }
                return .success(node)
            }
            guard mode.create else {
                return .failure(
                    StoreError(.notFound, "cannot open: No such file or directory", path: path)
                )
            }
            let node = Node()
            state.files[path] = node
            return .success(node)
        }
        return MemoryFile(node: try result.get(), fileSystem: self, path: path)
    }

    package func kind(of path: String) -> FileKind {
        state.withLock { state in
            if state.files[path] != nil { return .regular }
            if state.directories.contains(path) { return .directory }
            return .missing
        }
    }

    package func rename(_ source: String, to destination: String) throws {
        let moved = state.withLock { state in
            guard let node = state.files.removeValue(forKey: source) else { return false }
            state.files[destination] = node
            return true
        }
        if !moved {
            throw StoreError(.io, "cannot rename: No such file or directory", path: source)
        }
    }

    package func remove(_ path: String) throws {
        _ = state.withLock { $0.files.removeValue(forKey: path) }
    }

    package func removeDirectory(_ path: String) throws {
        _ = state.withLock { $0.directories.remove(path) }
    }

    package func syncDirectory(_ path: String) throws {}

    package func makeDirectory(_ path: String, permissions: UInt32) throws {
        _ = state.withLock { $0.directories.insert(path) }
    }

    package func contents(ofDirectory path: String) throws -> [String] {
        let prefix = path.hasSuffix("/") ? path : path + "/"
        return state.withLock { state in
            state.files.keys.compactMap { name in
                guard name.hasPrefix(prefix) else { return nil }
                let rest = name.dropFirst(prefix.count)
                return rest.contains("/") ? nil : String(rest)
            }
        }
    }

    func withNode<R>(_ node: Node, _ body: (Node) -> R) -> R {
        state.withLock { _ in body(node) }
    }
}

final class MemoryFile: StoreFile {
    private let node: MemoryFileSystem.Node
    private let fileSystem: MemoryFileSystem
    private let path: String
    private var holdsLock = false
    private var isClosed = false

    init(node: MemoryFileSystem.Node, fileSystem: MemoryFileSystem, path: String) {
        self.node = node
        self.fileSystem = fileSystem
        self.path = path
    }

    deinit { close() }

    private func checkOpen() throws {
        if isClosed { throw StoreError(.io, "file is closed", path: path) }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        try checkOpen()
        return fileSystem.withNode(node) { node in
            guard offset < UInt64(node.bytes.count) else { return 0 }
            let start = Int(offset)
            let count = min(buffer.count, node.bytes.count - start)
            node.bytes.withUnsafeBytes { source in
                buffer.copyMemory(
                    from: UnsafeRawBufferPointer(rebasing: source[start..<(start + count)])
                )
            }
            return count
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        try checkOpen()
        fileSystem.withNode(node) { node in
            let start = Int(offset)
            if node.bytes.count < start + bytes.count {
                node.bytes.append(
                    contentsOf: repeatElement(0, count: start + bytes.count - node.bytes.count)
                )
            }
            node.bytes.withUnsafeMutableBytes { target in
                UnsafeMutableRawBufferPointer(rebasing: target[start..<(start + bytes.count)])
                    .copyMemory(from: bytes)
            }
        }
    }

    func size() throws -> UInt64 {
        try checkOpen()
        return fileSystem.withNode(node) { UInt64($0.bytes.count) }
    }

    func truncate(to size: UInt64) throws {
        try checkOpen()
        fileSystem.withNode(node) { node in
            let target = Int(size)
            if node.bytes.count > target {
                node.bytes.removeLast(node.bytes.count - target)
            } else {
                node.bytes.append(contentsOf: repeatElement(0, count: target - node.bytes.count))
            }
        }
    }

    func sync() throws { try checkOpen() }

    func lockExclusive() throws {
        try checkOpen()
        let taken = fileSystem.withNode(node) { node in
            if node.isLocked { return false }
            node.isLocked = true
            return true
        }
        guard taken else {
            throw StoreError(
                .locked,
                "the store is open for writing in another process or handle",
                path: path
            )
        }
        holdsLock = true
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        if holdsLock {
            fileSystem.withNode(node) { $0.isLocked = false }
            holdsLock = false
        }
    }
}
