import Foundation

/// Writes one full buffer to a file on another thread while the caller fills the next.
///
/// Compaction writes its output a few MiB at a time. Writing into the page cache is not free
/// (the kernel allocates and fills a page per 4 KiB): a window's write is work of the same
/// order as checking and copying its records, and on one thread the two would run one after
/// the other. Here they overlap. Writes still reach the file in order and one at a time: each
/// waits for the one before, and so does ``finish()``, which the caller calls before it syncs,
/// closes or removes the file.
struct WriteBehind: ~Copyable {
    /// The buffer being written (emptied once written: the caller's next spare) and the
    /// write's error.
    private final class Slot: @unchecked Sendable {
        // Touched by the writing thread only between `async` and the group's wait, and by the
        // caller only after that wait.
        var buffer = ByteWriter()
        var error: (any Error)?
    }

    private let file: any StoreFile
    private let group = DispatchGroup()
    private let slot = Slot()
    private let queue = DispatchQueue(label: "ObjectLogStore.WriteBehind")

    init(_ file: any StoreFile) {
        self.file = file
    }

    deinit {
        // Never leave a write running into a file the caller may close next.
        group.wait()
    }

    /// Starts writing `buffer` at `offset` and gives the caller an empty buffer to fill
    /// meanwhile (the one written before, its storage reused).
    ///
    /// - Throws: The error of the write before, which the caller has not seen yet.
    func write(_ buffer: inout ByteWriter, at offset: UInt64) throws {
        try finish()
        let slot = slot
        // The caller gets the spare, the slot the full buffer: no copy of the bytes, and the
        // storage stays uniquely referenced (no copy on the next write into it).
        swap(&buffer, &slot.buffer)
        // The file is written by one thread at a time: the caller touches it again only after
        // `finish`.
        nonisolated(unsafe) let file = file
        queue.async(group: group) {
            do {
                try slot.buffer.withUnsafeBytes { try file.write($0, at: offset) }
            } catch {
                slot.error = error
            }
            slot.buffer.removeAll()
        }
    }

    /// Waits for the write in flight, if any.
    ///
    /// - Throws: Its error.
    func finish() throws {
        group.wait()
        if let error = slot.error {
            slot.error = nil
            throw error
        }
    }
}
