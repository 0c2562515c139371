#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How a file is opened through the ``FileSystem`` seam.
package struct FileOpenMode: Sendable, Equatable {
    /// Open for reading only.
    package var readOnly: Bool
    /// Create the file if it does not exist.
    package var create: Bool
    /// Fail if the file exists (with `create`).
    package var exclusive: Bool
    /// Permission bits for a created file.
    package var permissions: UInt32

    package static let read = FileOpenMode(
        readOnly: true,
        create: false,
        exclusive: false,
        permissions: 0
    )
    package static let readWrite = FileOpenMode(
        readOnly: false,
        create: false,
        exclusive: false,
        permissions: 0
    )

    package static func create(permissions: UInt32, exclusive: Bool = false) -> FileOpenMode {
        FileOpenMode(readOnly: false, create: true, exclusive: exclusive, permissions: permissions)
    }
}

/// What is at a path.
package enum FileKind: Sendable, Equatable {
    case missing, regular, directory, other
}

/// An open file, as the store sees it.
///
/// It offers positioned reads and writes, size, truncation, sync and an advisory writer lock. Every method reports failure as a `StoreError` with code `.io`
/// (or `.locked`).
///
/// All store I/O goes through this protocol and ``FileSystem``, the seam that tests replace to
/// inject I/O errors, short writes and simulated power loss (as swift-system mocks its syscalls
/// and SQLite's test VFS does).
package protocol StoreFile: AnyObject {
    /// Reads up to `buffer.count` bytes at `offset`; returns fewer only at the end of the file.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int
    /// Writes all of `bytes` at `offset` (short writes are continued).
    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws
    /// The file's current size in bytes.
    func size() throws -> UInt64
    /// Cuts or extends the file to `size` bytes.
    func truncate(to size: UInt64) throws
    /// Makes written data durable (`fdatasync`).
    func sync() throws
    /// Takes the exclusive, non-blocking writer lock; throws `.locked` if another holder has it.
    func lockExclusive() throws
    /// Closes the file (releasing any lock). Later calls fail.
    func close()
    /// Which file this is, to tell whether a path still names it (nil when it cannot be told).
    var identity: FileIdentity? { get }
    /// The descriptor to map the file with (`mmap`), for a file of the operating system's;
    /// nil for one that cannot be mapped.
    var mappableDescriptor: Int32? { get }
}

extension StoreFile {
    /// Files that cannot say which file they are.
    package var identity: FileIdentity? { nil }
    /// Files that are not the system's cannot be mapped.
    package var mappableDescriptor: Int32? { nil }
}

/// A file's device and inode: equal for two handles of one file, different once a path names
/// a file that replaced it (a compaction renames its copy over the store).
package struct FileIdentity: Hashable, Sendable {
    package var device: UInt64
    package var inode: UInt64

    package init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }
}

/// The file-system operations the store uses besides reading and writing open files.
package protocol FileSystem: Sendable {
    /// Opens (or creates) a file.
    func open(_ path: String, mode: FileOpenMode) throws -> any StoreFile
    /// What is at `path`.
    func kind(of path: String) -> FileKind
    /// Atomically renames `source` to `destination`, replacing it.
    func rename(_ source: String, to destination: String) throws
    /// Removes a file; a missing file is not an error.
    func remove(_ path: String) throws
    /// Removes an empty directory; a missing one is not an error.
    func removeDirectory(_ path: String) throws
    /// Makes a directory's entries (creations, renames, removals) durable (`fsync` of the directory).
    func syncDirectory(_ path: String) throws
    /// Creates a directory; an existing one is not an error.
    func makeDirectory(_ path: String, permissions: UInt32) throws
    /// The names in a directory (without `.` and `..`); a missing directory gives none.
    func contents(ofDirectory path: String) throws -> [String]
    /// The path with symbolic links resolved, if it names an existing file; else `path`.
    func resolvingSymbolicLinks(_ path: String) -> String
    /// Whether a writer holds the lock on the lock file at `lockPath`, found without taking
    /// any lock (false when it cannot be told).
    func hasActiveWriter(lockPath: String) -> Bool
    /// Which file `path` names now; nil if none, or when it cannot be told.
    func identity(of path: String) -> FileIdentity?
}

extension FileSystem {
    /// File systems that keep no directories of their own remove nothing.
    package func removeDirectory(_ path: String) throws {}

    /// File systems without links return `path` unchanged.
    package func resolvingSymbolicLinks(_ path: String) -> String { path }
    package func hasActiveWriter(lockPath: String) -> Bool { false }
    /// File systems without inodes cannot tell.
    package func identity(of path: String) -> FileIdentity? { nil }
}

extension FileSystem {
    /// Puts a file holding `bytes` at `path` whole or not at all: written to `temporary`,
    /// synced, renamed into place, and `path`'s directory synced so that the name survives a
    /// power loss.
    ///
    /// A failure before the rename removes the temporary file and leaves `path` as it was.
    func replaceAtomically(
        _ path: String,
        with bytes: UnsafeRawBufferPointer,
        temporary: String,
        permissions: UInt32
    ) throws {
        try replaceAtomically(path, temporary: temporary, permissions: permissions) { file in
            try file.write(bytes, at: 0)
        }
    }

    /// ``replaceAtomically(_:with:temporary:permissions:)`` of the bytes `write` writes into
    /// the new, empty file.
    func replaceAtomically(
        _ path: String,
        temporary: String,
        permissions: UInt32,
        write: (any StoreFile) throws -> Void
    ) throws {
        let file = try open(temporary, mode: .create(permissions: permissions))
        do {
            try file.truncate(to: 0)
            try write(file)
            try file.sync()
            file.close()
        } catch {
            file.close()
            try? remove(temporary)
            throw error
        }
        try rename(temporary, to: path)
        try syncDirectory(directoryOf(path))
    }
}

extension StoreFile {
    /// Reads exactly `count` bytes at `offset`, or fewer at the end of the file.
    package func read(at offset: UInt64, count: Int) throws -> [UInt8] {
        // Not zeroed first: only the bytes read become part of the array.
        try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            initialized = try read(into: UnsafeMutableRawBufferPointer(buffer), at: offset)
        }
    }

    package func write(_ bytes: [UInt8], at offset: UInt64) throws {
        try bytes.withUnsafeBytes { buffer in try write(buffer, at: offset) }
    }
}

/// Throws unless `path` names an existing regular file: the check every reader of a store
/// file makes first, with the same errors (`.notFound`, or `.notAStore` for a directory or a
/// special file).
package func requireExistingStoreFile(_ path: String, fileSystem: any FileSystem) throws {
    switch fileSystem.kind(of: path) {
    case .missing: throw StoreError(.notFound, "no store file at this path", path: path)
    case .directory:
        throw StoreError(.notAStore, "is a directory, not an ObjectLog store", path: path)
    case .other: throw StoreError(.notAStore, "is not a regular file", path: path)
    case .regular: break
    }
}

/// Splits a path into its directory and last component.
package func directoryOf(_ path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    let directory = String(path[..<slash])
    return directory.isEmpty ? "/" : directory
}

// MARK: - POSIX

// `F_OFD_GETLK` and `F_OFD_SETLK` (Linux 3.15; the same on every architecture), which Glibc
// defines only with `_GNU_SOURCE`. See: man 2 fcntl, "Open file description locks".
private let openFileDescriptionGetLock: Int32 = 36
private let openFileDescriptionSetLock: Int32 = 37

/// The real file system, through POSIX calls.
///
/// `EINTR` is retried; short reads and writes are continued; `close` errors never mask the error
/// that caused a close.
package struct PosixFileSystem: FileSystem {
    package init() {}

    package func open(_ path: String, mode: FileOpenMode) throws -> any StoreFile {
        var flags: Int32 = mode.readOnly ? O_RDONLY : O_RDWR
        if mode.create { flags |= O_CREAT }
        if mode.exclusive { flags |= O_EXCL }
        flags |= O_CLOEXEC
        let descriptor = retryingInterrupts { Glibc.open(path, flags, mode_t(mode.permissions)) }
        guard descriptor >= 0 else {
            let code = Glibc.errno
            throw StoreError(
                code == ENOENT ? .notFound : .io,
                "cannot open: \(describeErrno(code))",
                path: path,
                errno: code
            )
        }
        return PosixFile(descriptor: descriptor, path: path)
    }

    package func kind(of path: String) -> FileKind {
        var info = stat()
        guard stat(path, &info) == 0 else { return .missing }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .regular
        case S_IFDIR: return .directory
        default: return .other
        }
    }

    package func identity(of path: String) -> FileIdentity? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    package func hasActiveWriter(lockPath: String) -> Bool {
        let descriptor = retryingInterrupts { Glibc.open(lockPath, O_RDONLY | O_CLOEXEC) }
        guard descriptor >= 0 else { return false }
        defer { _ = Glibc.close(descriptor) }
        // A writer holds an open-file-description lock on its lock file besides the flock
        // (see PosixFile.lockExclusive); F_OFD_GETLK sees it without taking any lock, so
        // looking never makes a writer's open fail.
        var query = flock()
        query.l_type = Int16(F_RDLCK)
        query.l_whence = Int16(SEEK_SET)
        guard fcntl(descriptor, openFileDescriptionGetLock, &query) == 0 else { return false }
        return query.l_type != Int16(F_UNLCK)
    }

    package func resolvingSymbolicLinks(_ path: String) -> String {
        var link = stat()
        guard lstat(path, &link) == 0, link.st_mode & S_IFMT == S_IFLNK,
            let resolved = realpath(path, nil)
        else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    package func rename(_ source: String, to destination: String) throws {
        guard Glibc.rename(source, destination) == 0 else {
            let code = Glibc.errno
            throw StoreError(
                .io,
                "cannot rename to \(destination): \(describeErrno(code))",
                path: source,
                errno: code
            )
        }
    }

    package func remove(_ path: String) throws {
        guard unlink(path) == 0 || Glibc.errno == ENOENT else {
            let code = Glibc.errno
            throw StoreError(.io, "cannot remove: \(describeErrno(code))", path: path, errno: code)
        }
    }

    package func removeDirectory(_ path: String) throws {
        guard rmdir(path) == 0 || Glibc.errno == ENOENT else {
            let code = Glibc.errno
            throw StoreError(.io, "cannot remove: \(describeErrno(code))", path: path, errno: code)
        }
    }

    package func syncDirectory(_ path: String) throws {
        let descriptor = retryingInterrupts { Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard descriptor >= 0 else {
            let code = Glibc.errno
            throw StoreError(
                .io,
                "cannot open directory to sync it: \(describeErrno(code))",
                path: path,
                errno: code
            )
        }
        defer { _ = Glibc.close(descriptor) }
        // See: man 2 fsync — a new or renamed entry is durable only once its directory is synced.
        guard retryingInterrupts({ fsync(descriptor) }) == 0 else {
            let code = Glibc.errno
            throw StoreError(
                .io,
                "cannot sync directory: \(describeErrno(code))",
                path: path,
                errno: code
            )
        }
    }

    package func makeDirectory(_ path: String, permissions: UInt32) throws {
        guard mkdir(path, mode_t(permissions)) == 0 || Glibc.errno == EEXIST else {
            let code = Glibc.errno
            throw StoreError(
                .io,
                "cannot create directory: \(describeErrno(code))",
                path: path,
                errno: code
            )
        }
    }

    package func contents(ofDirectory path: String) throws -> [String] {
        guard let directory = opendir(path) else {
            let code = Glibc.errno
            if code == ENOENT { return [] }
            throw StoreError(
                .io,
                "cannot list directory: \(describeErrno(code))",
                path: path,
                errno: code
            )
        }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}

/// Retries a system call while it fails with `EINTR`.
package func retryingInterrupts<T: FixedWidthInteger>(_ call: () -> T) -> T {
    while true {
        let result = call()
        if result == -1 && Glibc.errno == EINTR { continue }
        return result
    }
}

/// `strerror` as a Swift string, with the symbolic name for the common codes.
package func describeErrno(_ code: Int32) -> String {
    String(cString: strerror(code))
}

/// A file descriptor owned by the store.
final class PosixFile: StoreFile {
    private var descriptor: Int32
    private let path: String

    init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    var mappableDescriptor: Int32? { descriptor >= 0 ? descriptor : nil }

    deinit { close() }

    private func failure(_ what: String) -> StoreError {
        let code = Glibc.errno
        return StoreError(.io, "\(what) failed: \(describeErrno(code))", path: path, errno: code)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        var total = 0
        while total < buffer.count {
            let got = retryingInterrupts {
                pread(
                    descriptor,
                    buffer.baseAddress! + total,
                    buffer.count - total,
                    off_t(offset) + off_t(total)
                )
            }
            if got < 0 { throw failure("read") }
            if got == 0 { break }
            total += got
        }
        return total
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        var total = 0
        while total < bytes.count {
            let wrote = retryingInterrupts {
                pwrite(
                    descriptor,
                    bytes.baseAddress! + total,
                    bytes.count - total,
                    off_t(offset) + off_t(total)
                )
            }
            if wrote < 0 { throw failure("write") }
            // Safe: pwrite never reports more than it was given, so this cannot overrun.
            total += wrote
        }
    }

    func size() throws -> UInt64 {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw failure("stat") }
        return UInt64(info.st_size)
    }

    var identity: FileIdentity? {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    func truncate(to size: UInt64) throws {
        guard retryingInterrupts({ ftruncate(descriptor, off_t(size)) }) == 0 else {
            throw failure("truncate")
        }
    }

    func sync() throws {
        // See: man 2 fdatasync — flushes the data and the metadata needed to read it (the size).
        guard retryingInterrupts({ fdatasync(descriptor) }) == 0 else { throw failure("fdatasync") }
    }

    func lockExclusive() throws {
        // A child process that this process is starting holds a copy of every descriptor, and
        // so of the lock, from its fork until its exec closes them (O_CLOEXEC): a lock just
        // released can look held for a moment. Retry briefly before calling it taken; a real
        // writer holds it far longer.
        var attempts = 0
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let code = Glibc.errno
            guard code == EWOULDBLOCK || code == EINTR else { throw failure("lock") }
            attempts += 1
            if attempts > 50 {
                throw StoreError(
                    .locked,
                    "the store is open for writing in another process or handle",
                    path: path
                )
            }
            usleep(5_000)
        }
        // Also an open-file-description write lock over the whole file, which readers can test
        // for with F_OFD_GETLK without taking a lock (a flock can only be tested by taking it).
        // Where the kernel or file system lacks them, readers just cannot tell a writer is
        // there.
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        _ = fcntl(descriptor, openFileDescriptionSetLock, &lock)
    }

    func close() {
        if descriptor >= 0 {
            _ = Glibc.close(descriptor)
            descriptor = -1
        }
    }
}
