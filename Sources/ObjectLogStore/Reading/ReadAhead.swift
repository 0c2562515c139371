/// What single-object loads read ahead (see ``LogStore/withObject(_:_:)``).
///
/// One window of the file, and where the previous load was. The store's lock guards it.
struct ReadAhead {
    /// How much a forward load reads.
    static let size = 64 << 10

    enum Plan: Equatable {
        /// The window holds the record, from this index of its bytes on.
        case served(at: Int)
        /// Read the record alone.
        case readExactly
        /// Read `size` bytes from the record on (up to the committed end), and keep them.
        case readAhead
    }

    /// The window's storage: `size` bytes once allocated, of which the first `count` are the
    /// file's from `start` on.
    private var window: [UInt8] = []
    private var count = 0
    private var start: UInt64 = 0
    private var generation: UInt64 = .max
    /// The offset of the previous load's record, in `lastGeneration`.
    private var lastOffset: UInt64 = .max
    private var lastGeneration: UInt64 = .max

    /// Says where the window holds the record at `offset` (`length` bytes), handing the window
    /// out in `found`, or how to read the record: ahead if this load is a little after the
    /// previous one, in which case `found` is the window's storage to read into.
    ///
    /// A served caller reads the record from `found` after releasing the lock. The bytes it
    /// reads are never written while it holds `found`: a later refill takes the storage out of
    /// this state first and writes through `withUnsafeMutableBytes`, which copies the array
    /// instead if anyone else still holds it.
    mutating func plan(
        _ offset: UInt64,
        length: Int,
        generation: UInt64,
        window found: inout [UInt8]
    ) -> Plan {
        defer {
            lastOffset = offset
            lastGeneration = generation
        }
        if generation == self.generation, offset >= start,
            offset - start <= UInt64(count),
            UInt64(length) <= UInt64(count) - (offset - start)
        {
            found = window
            return .served(at: Int(offset - start))
        }
        let forward =
            generation == lastGeneration && offset > lastOffset
            && offset - lastOffset < UInt64(Self.size / 4) && length <= Self.size / 16
        guard forward else { return .readExactly }
        // The refill reuses the storage: a new 64 KiB array per window cost the kernel a page
        // fault (and a page to clear) for every 4 KiB the read wrote.
        swap(&found, &window)
        count = 0
        self.generation = .max
        return .readAhead
    }

    /// Keeps the first `count` bytes of `storage`, read at `offset`, as the window.
    mutating func keep(_ storage: [UInt8], count: Int, at offset: UInt64, generation: UInt64) {
        window = storage
        self.count = count
        start = offset
        self.generation = generation
    }
}
