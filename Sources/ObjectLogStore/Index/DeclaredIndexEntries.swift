/// A declared index's sorted entries, as 8-byte words: built in memory, or used in place in
/// the declared index file (``DeclaredIndexFile``), whose pages are each checked against their
/// CRC-32 when first read.
///
/// In place, an index costs an open nothing: a lookup's binary search reads a page or two per
/// step, and the run of entries it finds, so the first fetch after an open reads kilobytes of
/// the file instead of all of it. A page that fails its check marks the entries ``isDamaged``;
/// the engine then builds the index from the log instead, since it must never leave out an
/// object that can match.
///
/// Not thread-safe: the engine uses an index under its coordinator's lock.
package final class DeclaredIndexEntries {
    private enum Storage {
        case memory([UInt64])
        /// Little-endian words in a file's region, with the checks of their pages.
        case file(FileRegion, words: UnsafePointer<UInt64>, checks: SlotPageChecks)
    }

    private let storage: Storage
    /// The number of words.
    package let count: Int

    /// Entries built in memory.
    package init(_ words: [UInt64]) {
        storage = .memory(words)
        count = words.count
    }

    /// `count` words at byte `offset` of `region` (a multiple of 8), in pages of `pageSize`
    /// bytes whose CRC-32s are `checksums`; the last page is padded to its full size in the
    /// region.
    init(region: FileRegion, offset: Int, count: Int, pageSize: Int, checksums: [UInt32]) {
        storage = .file(
            region,
            words: (region.bytes + offset).assumingMemoryBound(to: UInt64.self),
            checks: SlotPageChecks(
                checksums: checksums,
                byteCount: checksums.count * pageSize,
                pageSize: pageSize
            )
        )
        self.count = count
    }

    /// The word at `index`, its page checked first if it is in a file.
    package subscript(index: Int) -> UInt64 {
        switch storage {
        case .memory(let words):
            return words[index]
        case .file(_, let words, let checks):
            precondition(index >= 0 && index < count, "entry word out of range")
            checks.check(byte: index &* 8, of: UnsafeRawPointer(words))
            return UInt64(littleEndian: words[index])
        }
    }

    /// Whether a page read so far failed its check: the entries cannot be trusted.
    package var isDamaged: Bool {
        if case .file(_, _, let checks) = storage { return checks.damagedPage != nil }
        return false
    }

    /// Calls `body` with every word, each page checked first; nil, without calling it, when
    /// a page fails its check.
    package func withWords<Result>(
        _ body: (UnsafeBufferPointer<UInt64>) throws -> Result
    ) rethrows -> Result? {
        switch storage {
        case .memory(let words):
            return try words.withUnsafeBufferPointer(body)
        case .file(_, let words, let checks):
            checks.checkAll(of: UnsafeRawPointer(words))
            guard checks.damagedPage == nil else { return nil }
            #if _endian(big)
            let native = (0..<count).map { UInt64(littleEndian: words[$0]) }
            return try native.withUnsafeBufferPointer(body)
            #else
            return try body(UnsafeBufferPointer(start: words, count: count))
            #endif
        }
    }
}
