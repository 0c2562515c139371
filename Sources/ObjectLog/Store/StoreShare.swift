import Foundation
import ObjectLogStore
import Synchronization

/// One ``PersistentContainer``'s share of a coordinator that every container of the process
/// opened on the same store file uses.
///
/// A store file has one writer at a time (the writer lock, see `LogStore`), and the lock is
/// per open file, so a second open in the same process would be refused as if another
/// process were writing. Containers therefore share one coordinator per file: the first open
/// makes it, later ones with the same model take a share, and the store closes when the last
/// share is closed with ``PersistentContainer/close()``. A container released without
/// `close()` gives up its share but closes nothing, as before sharing: the coordinator (and
/// its store) lives while its contexts and objects do, and a later container of the same
/// file takes a share of it again.
///
/// Only writable opens of real files are shared: a read-only open takes no lock, and each
/// in-memory store is its own.
final class StoreShare: Sendable {
    /// The coordinator shared.
    let coordinator: PersistentStoreCoordinator
    private let path: String
    private let isReleased = Mutex(false)

    private init(coordinator: PersistentStoreCoordinator, path: String) {
        self.coordinator = coordinator
        self.path = path
    }

    deinit { release(closing: false) }

    /// A share of the coordinator of the store at `path`, opened with `open` if no container
    /// of this process has it open.
    /// - Throws: ``ObjectLogError/Code/modelMismatch`` when the store is open in this process
    ///   for another model; what `open` throws.
    static func acquire(
        path: String,
        model: ManagedObjectModel,
        open: () throws(ObjectLogError) -> PersistentStoreCoordinator
    ) throws(ObjectLogError) -> StoreShare {
        let key = canonicalPath(path)
        // The open runs under the lock, so that two threads opening one file at once share
        // one coordinator instead of one of them meeting the other's writer lock.
        let coordinator = try registry.withLock {
            (entries) throws(ObjectLogError) -> PersistentStoreCoordinator in
            if let entry = entries[key], let shared = entry.coordinator {
                guard entry.versionHash == model.versionHash,
                    entry.classes == classes(of: model)
                else {
                    throw ObjectLogError(
                        .modelMismatch,
                        "the store '\(path)' is already open in this process for another model; "
                            + "close() that container before opening it with this one"
                    )
                }
                entries[key]?.shares += 1
                return shared
            }
            let opened = try open()
            entries[key] = Entry(
                coordinator: opened,
                versionHash: model.versionHash,
                classes: classes(of: model),
                shares: 1
            )
            return opened
        }
        return StoreShare(coordinator: coordinator, path: key)
    }

    /// Gives up the share (once; later calls do nothing); with `closing`, closes the store
    /// if it was the last share.
    @discardableResult
    func release(closing: Bool) -> (any Error)? {
        let wasReleased = isReleased.withLock { released in
            defer { released = true }
            return released
        }
        guard !wasReleased else { return nil }
        let isLast = Self.registry.withLock { entries -> Bool in
            guard var entry = entries[path], entry.coordinator === coordinator else { return false }
            entry.shares -= 1
            let last = entry.shares == 0
            // A share given up without `close()` leaves the entry: the coordinator may live on
            // in contexts, holding the lock, and the next container of the file must reuse it.
            if last && closing { entries[path] = nil } else { entries[path] = entry }
            return last
        }
        guard isLast && closing else { return nil }
        coordinator.checkpointDeclaredIndexes()
        do {
            try coordinator.store.close()
            return nil
        } catch {
            return error
        }
    }

    /// How many containers share the coordinator of the store at `path` (for tests).
    static func shareCount(path: String) -> Int {
        registry.withLock { $0[canonicalPath(path)]?.shares ?? 0 }
    }

    private struct Entry {
        weak var coordinator: PersistentStoreCoordinator?
        var versionHash: String
        var classes: Set<ObjectIdentifier>
        var shares: Int
    }

    private static let registry = Mutex<[String: Entry]>([:])

    private static func classes(of model: ManagedObjectModel) -> Set<ObjectIdentifier> {
        Set(model.entities.map { ObjectIdentifier($0.objectType) })
    }

    /// One spelling per file: absolute, without `.`, `..` or symbolic links (for a file that
    /// exists; a new file's directory is resolved).
    private static func canonicalPath(_ path: String) -> String {
        let url = URL(fileURLWithPath: path).standardizedFileURL
        let directory = url.deletingLastPathComponent().resolvingSymlinksInPath()
        let resolved = url.resolvingSymlinksInPath()
        return FileManager.default.fileExists(atPath: resolved.path)
            ? resolved.path : directory.appendingPathComponent(url.lastPathComponent).path
    }
}
