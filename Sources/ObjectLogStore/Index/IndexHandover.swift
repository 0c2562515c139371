import Foundation

/// Key directories of index files this process has just written, for the open of each one's
/// store to take instead of reading and decoding the file it was written to.
///
/// A rewriting migration writes its new store and that store's index, then opens the store:
/// decoding the index it had just encoded would read and check again every entry the process
/// already holds, work in proportion to the store (Benchmarks/README.md, workload 9). An open
/// takes a directory only when the index file there has the size and begins with the very
/// bytes that were written (its first bytes name the store, the generation and the commit the
/// index covers, and the number of its entries), and then checks the log against the index as
/// it does for any index read from disk. Each is taken once.
final class IndexHandover: Sendable {
    private struct Entry {
        let head: [UInt8]
        let size: Int
        let index: StoreIndex
        let directory: KeyDirectory
        let counts: EntityCounter
    }

    /// The one the store's writes and opens use.
    static let shared = IndexHandover()

    private let entries = LockedValue<[Entry]>([])
    /// Only the newest few are kept: a directory no open takes (a migration that failed after
    /// writing its copy) holds its memory until that many later copies have been written.
    private let limit: Int

    init(limit: Int = 2) {
        self.limit = limit
    }

    /// Keeps `directory` and `counts` for the store whose index was just written, `size`
    /// bytes beginning with `bytes` (`index` without its entries).
    func offer(
        _ directory: KeyDirectory,
        counts: EntityCounter,
        index: StoreIndex,
        fileHead bytes: [UInt8],
        size: Int
    ) {
        guard bytes.count >= StoreIndex.fixedLength else { return }
        var index = index
        index.entries = []
        let entry = Entry(
            head: Array(bytes[..<StoreIndex.fixedLength]),
            size: size,
            index: index,
            directory: directory,
            counts: counts
        )
        entries.withLock { entries in
            entries.append(entry)
            if entries.count > limit { entries.removeFirst(entries.count - limit) }
        }
    }

    func take(
        for file: any StoreFile,
        size: Int
    ) -> (StoreIndex, KeyDirectory, EntityCounter)? {
        guard size >= StoreIndex.fixedLength + 4,
            entries.withLock({ entries in entries.contains { $0.size == size } }),
            let head = try? file.read(at: 0, count: StoreIndex.fixedLength)
        else { return nil }
        return entries.withLock { entries in
            guard let found = entries.firstIndex(where: { $0.size == size && $0.head == head })
            else { return nil }
            let entry = entries.remove(at: found)
            return (entry.index, entry.directory, entry.counts)
        }
    }
}
