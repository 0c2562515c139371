/// The checksums of a dense directory's slots as an index file holds them, page by page,
/// checked on each page's first use (and, the same way, of a declared index's entries used in
/// place: ``DeclaredIndexEntries``).
///
/// A version 5 (or 4) index is used in place: its slots are mapped, not read, so an open
/// touches none of them. Checking all their checksums at the open would read every page, which
/// is what mapping them avoids; so each page is checked when the directory first reads or
/// writes one of its slots, and a page that fails leaves the directory ``damage`` for the store
/// to refuse to go on with. The smaller the page, the less a lookup reads to check the one slot
/// it wants: a version 5 index's pages are 512 bytes (32 slots), where 4 KiB (version 4) made
/// the first lookups after an open read eight times the memory.
///
/// Not thread-safe: a directory is used under its store's lock.
final class SlotPageChecks {
    /// The bytes of a page of checked memory.
    let pageSize: Int
    /// The slots of a page.
    private let slotsPerPage: Int

    /// Each page's CRC-32, as the index file records it.
    private let checksums: [UInt32]
    /// The bytes of slots the file holds: its last page may be partial.
    private let byteCount: Int
    /// One bit per page: checked.
    private var checked: [UInt64]
    /// How many pages are still unchecked.
    private var unchecked: Int
    /// The first page whose checksum did not match, if any.
    private(set) var damagedPage: Int?

    init(checksums: [UInt32], byteCount: Int, pageSize: Int) {
        precondition(pageSize % MemoryLayout<PackedLocation>.stride == 0, "pages of whole slots")
        self.pageSize = pageSize
        slotsPerPage = pageSize / MemoryLayout<PackedLocation>.stride
        self.checksums = checksums
        self.byteCount = byteCount
        checked = [UInt64](repeating: 0, count: (checksums.count + 63) / 64)
        unchecked = checksums.count
    }

    /// Whether every page has been checked and matched: the checks have nothing more to do.
    var isComplete: Bool { unchecked == 0 && damagedPage == nil }

    /// Checks the page of slot `index` of `slots` if it has not been checked yet.
    @inline(__always)
    func check(slot index: Int, of slots: UnsafeRawPointer) {
        check(page: index / slotsPerPage, of: slots)
    }

    /// Checks the page of byte `offset` of `bytes` if it has not been checked yet.
    @inline(__always)
    func check(byte offset: Int, of bytes: UnsafeRawPointer) {
        check(page: offset / pageSize, of: bytes)
    }

    @inline(__always)
    private func check(page: Int, of bytes: UnsafeRawPointer) {
        guard page < checksums.count, checked[page >> 6] & (1 << UInt64(page & 63)) == 0 else {
            return
        }
        checkPage(page, of: bytes)
    }

    /// Checks every page not checked yet.
    func checkAll(of slots: UnsafeRawPointer) {
        guard unchecked > 0 else { return }
        for page in 0..<checksums.count where checked[page >> 6] & (1 << UInt64(page & 63)) == 0 {
            checkPage(page, of: slots)
        }
    }

    @inline(never)
    private func checkPage(_ page: Int, of slots: UnsafeRawPointer) {
        let start = page * pageSize
        let bytes = UnsafeRawBufferPointer(
            start: slots + start,
            count: min(pageSize, byteCount - start)
        )
        if CRC32.checksum(bytes) != checksums[page], damagedPage == nil {
            damagedPage = page
        }
        checked[page >> 6] |= 1 << UInt64(page & 63)
        unchecked -= 1
    }
}
