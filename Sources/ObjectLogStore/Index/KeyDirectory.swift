import CObjectLogStoreSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A record's location or none in 16 bytes, where a `RecordLocation?` takes 24 (a flag of its
/// own, rounded up to the offset's alignment): a length of 0 stands for none, which no record
/// has (its frame alone takes several bytes).
///
/// A dense key directory's slots are these, and so is what a large commit keeps of each put's
/// old location while its flush runs.
package struct PackedLocation {
    package var offset: UInt64 = 0
    /// The record's length, with ``RecordLocation/patchBit`` set for a patch.
    package var length: UInt32 = 0
    package var entity: EntityTag = 0

    /// No location.
    package init() {}

    package init(_ location: RecordLocation?) {
        offset = location?.offset ?? 0
        length = location?.packedLength ?? 0
        entity = location?.entity ?? 0
    }

    /// Whether it holds a location.
    package var isLive: Bool { length != 0 }

    /// The location it holds, if any.
    package var location: RecordLocation? {
        isLive ? RecordLocation(entity: entity, offset: offset, packedLength: length) : nil
    }

    /// Puts `location` at `slot`; returns what was there.
    @inline(__always)
    static func exchange(
        _ slot: UnsafeMutablePointer<PackedLocation>,
        for location: RecordLocation
    ) -> PackedLocation {
        assert(location.length != 0, "a record location of no bytes")
        let old = slot.pointee
        slot.pointee = PackedLocation(location)
        return old
    }
}

/// The in-memory map from live object keys to their record locations (Bitcask's "keydir").
///
/// Stores hand out keys in ascending runs from 1, so the live keys of most stores fill most of
/// the range from 1 to the highest. While they fill at least about half of it, the directory
/// is *dense*: an array of 16-byte locations indexed by key, with no keys stored and no
/// hashing, which is half the memory of the hash table for a million keys and reads in key
/// order. A key far beyond the range (or deletions that leave fewer than one key in eight of
/// it live, in a range of more than 4,096) turns it into the hash table for good.
///
/// The hash table uses open addressing with linear probing and backward-shift deletion over
/// one flat buffer, hashed with a Fibonacci multiply: keys are small consecutive integers, so
/// the general `Dictionary` (SipHash, per-access exclusivity checks) costs several times more
/// per operation on the open and bulk-save paths. Key 0 marks an empty slot (0 is never a
/// valid key).
package struct KeyDirectory {
    package struct Slot {
        package var key: ObjectKey
        package var offset: UInt64
        /// The record's length, with ``RecordLocation/patchBit`` set for a patch.
        package var length: UInt32
        package var entity: EntityTag
    }

    /// The location of key `index + 1` in a dense directory; a length of 0 for no key.
    ///
    /// 16 bytes, four to a cache line: the large commits and read plans that visit scattered
    /// slots of a big directory, a cache miss each, move every line they touch through memory.
    fileprivate typealias DenseSlot = PackedLocation

    /// `capacity` slots in zeroed memory, which is all slots empty for both kinds of slot
    /// (key 0 in the hash table, a length of 0 in the dense array).
    private final class ZeroedSlots<Element> {
        let capacity: Int
        let slots: UnsafeMutablePointer<Element>
        /// Whether `slots` was mapped with `mmap` (else it came from `calloc`).
        private let isMapped: Bool

        /// Tables of at least this many bytes are mapped with their pages populated.
        static var mappedByteCount: Int { 1 << 20 }

        init(capacity: Int) {
            self.capacity = capacity
            let byteCount = capacity * MemoryLayout<Element>.stride
            // A large table gets its zeroed pages from the kernel all at once (MAP_POPULATE):
            // left to page faults, each page faults twice, once mapping the shared zero page
            // when a lookup first reads it and again when an insert writes it. A table that
            // large fills at least three eighths of its slots, spread over all its pages, so
            // populating touches no page that would have stayed untouched. (Not transparent
            // huge pages: the kernel zeroes each 2 MiB page whole at its first touch, which
            // costs a replay more than the faults it saves; Benchmarks/README.md lists them
            // among what was tried.)
            // See: man 2 mmap
            if byteCount >= Self.mappedByteCount,
                let memory = mmap(
                    nil,
                    byteCount,
                    PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                    -1,
                    0
                ),
                memory != UnsafeMutableRawPointer(bitPattern: -1)  // MAP_FAILED
            {
                slots = memory.bindMemory(to: Element.self, capacity: capacity)
                isMapped = true
                return
            }
            // `calloc` gets large tables from the kernel already zeroed, so a table is not
            // written twice (once to clear, once to fill).
            guard let memory = calloc(capacity, MemoryLayout<Element>.stride) else {
                fatalError("out of memory for a key directory of \(capacity) slots")
            }
            slots = memory.bindMemory(to: Element.self, capacity: capacity)
            isMapped = false
        }

        /// Maps the `slotCount` slots that `file` holds at `offset` as the first of `capacity`.
        ///
        /// `offset` is a multiple of the page size. The mapping is private: a slot written is
        /// this directory's, and the file never changes. Pages of the file are read when first used;
        /// the slots beyond them are zeroed pages, as in `init(capacity:)`. Nil when the file
        /// cannot be mapped.
        init?(capacity: Int, mapping file: Int32, at offset: UInt64, slotCount: Int) {
            self.capacity = capacity
            let byteCount = capacity * MemoryLayout<Element>.stride
            let mappedCount = slotCount * MemoryLayout<Element>.stride
            guard mappedCount <= byteCount, offset <= UInt64(Int.max),
                let region = mmap(
                    nil,
                    byteCount,
                    PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                    -1,
                    0
                ),
                region != UnsafeMutableRawPointer(bitPattern: -1)  // MAP_FAILED
            else { return nil }
            // The file's slots go over the start of the reserved region. Past the file's end,
            // its last page reads as zeros: no slot.
            if mappedCount > 0 {
                let mapped = mmap(
                    region,
                    mappedCount,
                    PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_FIXED,
                    file,
                    off_t(offset)
                )
                guard mapped == region else {
                    munmap(region, byteCount)
                    return nil
                }
            }
            slots = region.bindMemory(to: Element.self, capacity: capacity)
            isMapped = true
        }

        /// The checks of the slots mapped from an index file, until every page has passed.
        var pageChecks: SlotPageChecks?

        deinit {
            if isMapped {
                munmap(slots, capacity * MemoryLayout<Element>.stride)
            } else {
                free(slots)
            }
        }
    }

    private typealias Storage = ZeroedSlots<Slot>
    /// A dense directory's slots, for keys 1 through `capacity`.
    private typealias DenseStorage = ZeroedSlots<DenseSlot>

    /// The bytes a dense directory takes for each key of its range: the stride of its slots.
    package static var denseBytesPerKey: Int { MemoryLayout<DenseSlot>.stride }

    /// The hash table; a small unused one while the directory is dense.
    private var storage: Storage
    /// The dense array, or nil once the directory is a hash table.
    private var dense: DenseStorage?
    /// The highest key ever added while dense (removals do not lower it).
    private var highestKey: ObjectKey = 0
    /// Number of live keys.
    package private(set) var count = 0

    /// Whether the directory is an array indexed by key (for tests and for listing keys in
    /// order without sorting them).
    package var isDense: Bool { dense != nil }

    /// Whether a dense directory may cover keys 1 through `span` while holding `count` keys:
    /// at least about one in two of them live (16-byte slots then cost no more than the hash
    /// table's 24-byte ones at three quarters full).
    @inline(__always)
    private static func denseAllows(span: UInt64, count: Int) -> Bool {
        span <= UInt64(count) * 2 + 1024
    }

    /// Creates an empty directory with room for `minimumCapacity` keys before it grows.
    ///
    /// The directory starts dense, covering keys 1 through `minimumCapacity` (at least 64), or
    /// through `keysBelow - 1` when all the keys to come are known to lie below `keysBelow`
    /// (an index's next key). When those would be too few for that range, it starts as a hash
    /// table.
    package init(minimumCapacity: Int = 16, keysBelow bound: ObjectKey? = nil) {
        storage = Storage(capacity: 64)
        let span = max(bound ?? 1, 1) - 1
        guard Self.denseAllows(span: span, count: minimumCapacity) else {
            storage = Storage(capacity: Self.capacity(for: minimumCapacity))
            return
        }
        // Room beyond the known keys for the next saves' new ones: without it the first insert
        // after opening a large store would copy the whole array into a larger one. Slots are
        // zeroed pages, so room never written costs no memory.
        let room = bound == nil ? 0 : Int(span) / 32 + 1024
        dense = DenseStorage(capacity: max(64, minimumCapacity, Int(span) + room))
    }

    /// A dense directory whose slots are those an index file holds, mapped in place.
    ///
    /// The file (FORMAT.md, section 7) that `descriptor` opens holds the slots of keys 1
    /// through `slotCount` at `offset`, `count` of them live; the directory has room beyond
    /// them for new keys. Pages of slots are read from the
    /// file when first used, and checked against `checksums`, one for each `pageSize` bytes of
    /// slots, then (see ``damagedPage``).
    ///
    /// Nil when the file cannot be mapped.
    package init?(
        mapping descriptor: Int32,
        at offset: UInt64,
        slotCount: Int,
        count: Int,
        checksums: [UInt32],
        pageSize: Int
    ) {
        // Room for the next saves' new keys, as `init(minimumCapacity:keysBelow:)` leaves.
        let capacity = max(64, slotCount + slotCount / 32 + 1024)
        guard
            let slots = DenseStorage(
                capacity: capacity,
                mapping: descriptor,
                at: offset,
                slotCount: slotCount
            )
        else { return nil }
        slots.pageChecks = SlotPageChecks(
            checksums: checksums,
            byteCount: slotCount * Self.denseBytesPerKey,
            pageSize: pageSize
        )
        storage = Storage(capacity: 64)
        dense = slots
        highestKey = ObjectKey(slotCount)
        self.count = count
    }

    /// The first page of mapped slots found damaged (its checksum does not match the index
    /// file's), if any: the directory's locations cannot be trusted, and the store stops using
    /// it.
    package var damagedPage: Int? { (dense?.pageChecks ?? storage.pageChecks)?.damagedPage }

    /// Checks the page of slot `index` of a mapped dense directory before it is used.
    @inline(__always)
    private static func checkSlot(_ index: Int, in dense: DenseStorage) {
        if let checks = dense.pageChecks { checks.check(slot: index, of: dense.slots) }
    }

    /// Checks every page of a mapped dense directory not checked yet, and drops the checks
    /// once every page has passed.
    private static func checkAllSlots(in dense: DenseStorage) {
        guard let checks = dense.pageChecks else { return }
        checks.checkAll(of: dense.slots)
        if checks.isComplete { dense.pageChecks = nil }
    }

    /// Checks the mapped pages of `keys`' slots not checked yet: lookups made afterwards on
    /// several threads at once then only read the checks.
    package func checkPages(of keys: [[ObjectKey]]) {
        guard let dense, dense.pageChecks != nil else { return }
        for part in keys {
            for key in part where key &- 1 < UInt64(dense.capacity) {
                Self.checkSlot(Int(key &- 1), in: dense)
            }
        }
    }

    /// Checks every mapped page of a dense directory (the pages a scan or a compaction is
    /// about to read all of); returns the first damaged one, if any.
    package func checkAllPages() -> Int? {
        if let dense { Self.checkAllSlots(in: dense) }
        return damagedPage
    }

    /// The slots that hold `count` keys at a load of at most three quarters.
    ///
    /// Any number of slots, not only a power of two: a directory sized for a known number of
    /// keys (a replay's or an index's) is then up to a third smaller, and the kernel has fewer
    /// pages to zero (a power of two gave a million keys 48 MB instead of 32).
    private static func capacity(for count: Int) -> Int {
        // At least 64, the span of a block (see `home`).
        max(64, (max(count, 0) * 4 + 4 + 2) / 3)
    }

    /// A key's home slot.
    ///
    /// Blocks of 64 consecutive keys are scattered by a Fibonacci hash, and the keys of a block
    /// sit side by side. Keys are handed out consecutively, so this keeps
    /// most neighbours in the same cache lines and pages (a fully scattered hash made every
    /// insert of a bulk load a cache miss), while any stride still spreads over the table.
    ///
    /// The block's hash is mapped onto the slots by a multiply-high (Lemire's range reduction),
    /// which needs no power-of-two count.
    @inline(__always)
    private func home(_ key: ObjectKey) -> Int {
        let capacity = storage.capacity
        let hash = (key >> 6) &* 0x9E37_79B9_7F4A_7C15
        let block = Int(truncatingIfNeeded: hash.multipliedFullWidth(by: UInt64(capacity)).high)
        // Safe: block < capacity and key & 63 < 64 <= capacity, so one subtraction wraps it.
        let index = block &+ Int(truncatingIfNeeded: key & 63)
        return index >= capacity ? index &- capacity : index
    }

    /// The slot after `index`, wrapping at the end of the table.
    @inline(__always)
    private func following(_ index: Int) -> Int {
        let next = index &+ 1
        return next == storage.capacity ? 0 : next
    }

    /// How many slots `index` lies after `start`, going forward with wrap-around.
    @inline(__always)
    private func distance(from start: Int, to index: Int) -> Int {
        index >= start ? index - start : index + storage.capacity - start
    }

    /// Asks the processor for the memory of `key`'s entry ahead of a lookup or an update of
    /// it, when the directory is dense (a hash table's slot depends on the probe).
    ///
    /// A large commit or read plan visits its keys' entries in file order, scattered over a
    /// directory far larger than the caches, and each visit would wait for its entry's cache
    /// line in turn. Asking a few keys ahead overlaps those waits.
    @inline(__always)
    package func prefetch(_ key: ObjectKey) {
        guard let dense, key &- 1 < UInt64(dense.capacity) else { return }
        objectlog_prefetch_for_write(dense.slots + Int(key &- 1))
    }

    /// The location of `key`, if it is live.
    @inline(__always)
    package subscript(key: ObjectKey) -> RecordLocation? {
        if let dense {
            guard key &- 1 < UInt64(dense.capacity) else { return nil }
            Self.checkSlot(Int(key &- 1), in: dense)
            return dense.slots[Int(key &- 1)].location
        }
        let slots = storage.slots
        var index = home(key)
        while true {
            let slot = slots[index]
            if slot.key == key {
                return RecordLocation(
                    entity: slot.entity,
                    offset: slot.offset,
                    packedLength: slot.length
                )
            }
            if slot.key == 0 { return nil }
            index = following(index)
        }
    }

    /// Makes room for `minimumCount` keys without growing again.
    ///
    /// A directory that must grow at least doubles, as one that fills up does: a store whose
    /// keydir was sized exactly (by its index) and then took one insert per save would
    /// otherwise copy all its keys into a table one slot larger on every save.
    ///
    /// A dense directory expects the new keys to follow the highest one, and makes room for
    /// them if they would fill at least about half of its range; otherwise it becomes a hash
    /// table with that room.
    package mutating func reserveCapacity(_ minimumCount: Int) {
        if let dense {
            let span = highestKey + UInt64(max(0, minimumCount - count))
            guard span > UInt64(dense.capacity) else { return }
            if Self.denseAllows(span: span, count: minimumCount) {
                copyDense(toCapacity: max(Int(span), dense.capacity * 2))
            } else {
                makeHashed(capacity: minimumCount)
            }
            return
        }
        let capacity = Self.capacity(for: minimumCount)
        if capacity > storage.capacity {
            copy(toCapacity: max(capacity, storage.capacity * 2))
        }
    }

    /// The number of slots (for tests).
    package var capacity: Int { dense?.capacity ?? storage.capacity }

    /// Copies a dense directory into a new array of `capacity` slots.
    @inline(never)
    private mutating func copyDense(toCapacity capacity: Int) {
        guard let old = dense else { return }
        Self.checkAllSlots(in: old)
        let new = DenseStorage(capacity: capacity)
        new.slots.update(from: old.slots, count: min(old.capacity, capacity))
        // A damage found stays known.
        new.pageChecks = old.pageChecks
        dense = new
    }

    /// Turns a dense directory into a hash table with room for `capacity` keys.
    @inline(never)
    private mutating func makeHashed(capacity: Int) {
        guard let old = dense else { return }
        Self.checkAllSlots(in: old)
        dense = nil
        storage = Storage(capacity: Self.capacity(for: max(capacity, count)))
        storage.pageChecks = old.pageChecks
        count = 0
        for index in 0..<old.capacity where old.slots[index].isLive {
            let slot = old.slots[index]
            insertNew(
                Slot(
                    key: ObjectKey(index + 1),
                    offset: slot.offset,
                    length: slot.length,
                    entity: slot.entity
                )
            )
        }
    }

    /// Makes a dense directory's array its own, with a slot for `key`; false when `key` lies
    /// too far beyond the range and the directory became a hash table instead.
    @inline(__always)
    private mutating func makeDenseUniqueAndRoomy(for key: ObjectKey) -> Bool {
        // No local reference to the array here: it would make the array look shared.
        if _slowPath(
            key &- 1 >= UInt64(dense?.capacity ?? 0) || !isKnownUniquelyReferenced(&dense)
        ) {
            return makeDenseUniqueAndRoomySlowly(for: key)
        }
        return true
    }

    @inline(never)
    private mutating func makeDenseUniqueAndRoomySlowly(for key: ObjectKey) -> Bool {
        let capacity = dense?.capacity ?? 0
        if key &- 1 < UInt64(capacity) {
            copyDense(toCapacity: capacity)
            return true
        }
        guard key != 0, Self.denseAllows(span: key, count: count + 1) else {
            makeHashed(capacity: count + 1)
            return false
        }
        copyDense(toCapacity: max(Int(key), capacity * 2))
        return true
    }

    /// Sets a dense directory's slot for `key` (which it has room for); returns the previous
    /// location.
    @discardableResult
    @inline(__always)
    private mutating func setDense(
        _ location: RecordLocation,
        forKey key: ObjectKey
    ) -> RecordLocation? {
        guard let dense else { return nil }
        Self.checkSlot(Int(key - 1), in: dense)
        let old = DenseSlot.exchange(dense.slots + Int(key - 1), for: location)
        if key > highestKey { highestKey = key }
        if !old.isLive { count += 1 }
        return old.location
    }

    /// Makes the storage this directory's own, with room for one more key.
    ///
    /// Inlined, with the copies out of line: it runs before every insert.
    @inline(__always)
    private mutating func makeUniqueAndRoomy() {
        if _slowPath(!isKnownUniquelyReferenced(&storage) || (count + 1) * 4 > storage.capacity * 3)
        {
            makeUniqueAndRoomySlowly()
        }
    }

    @inline(never)
    private mutating func makeUniqueAndRoomySlowly() {
        if !isKnownUniquelyReferenced(&storage) {
            copy(toCapacity: storage.capacity)
        }
        if (count + 1) * 4 > storage.capacity * 3 {
            copy(toCapacity: storage.capacity * 2)
        }
    }

    private mutating func copy(toCapacity capacity: Int) {
        let old = storage
        storage = Storage(capacity: capacity)
        count = 0
        for index in 0..<old.capacity where old.slots[index].key != 0 {
            insertNew(old.slots[index])
        }
    }

    @inline(__always)
    private mutating func insertNew(_ slot: Slot) {
        let slots = storage.slots
        var index = home(slot.key)
        while slots[index].key != 0 { index = following(index) }
        slots[index] = slot
        count += 1
    }

    /// Adds a key known not to be in the directory yet (an index checkpoint's keys, which are
    /// checked to be strictly ascending), skipping the lookup of an existing entry.
    package mutating func insertUnique(_ key: ObjectKey, _ location: RecordLocation) {
        insertUnique(key, PackedLocation(location))
    }

    /// ``insertUnique(_:_:)`` of a location as the directory keeps it.
    package mutating func insertUnique(_ key: ObjectKey, _ location: PackedLocation) {
        // (`dense` is read after the call, which may replace it.)
        if dense != nil, makeDenseUniqueAndRoomy(for: key), let dense {
            Self.checkSlot(Int(key - 1), in: dense)
            (dense.slots + Int(key - 1)).pointee = location
            if key > highestKey { highestKey = key }
            count += 1
            return
        }
        makeUniqueAndRoomy()
        insertNew(
            Slot(
                key: key,
                offset: location.offset,
                length: location.length,
                entity: location.entity
            )
        )
    }

    /// Reads the home slot of `key` and returns the key found there (0 for an empty slot).
    ///
    /// For loading slots into the cache ahead of updating them: the replay reads the home
    /// slots of a batch of records before applying them, so that the reads, independent of
    /// each other, wait for memory together instead of one update after another (a log whose
    /// updates come in random key order missed the cache on almost every one).
    @inline(__always)
    package func keyAtHome(of key: ObjectKey) -> ObjectKey {
        if let dense {
            guard key &- 1 < UInt64(dense.capacity) else { return 0 }
            Self.checkSlot(Int(key &- 1), in: dense)
            return dense.slots[Int(key &- 1)].isLive ? key : 0
        }
        return storage.slots[home(key)].key
    }

    /// A dense directory's slots, for a run of updates of keys it has room for.
    package struct DenseUpdate {
        fileprivate let slots: UnsafeMutablePointer<DenseSlot>
        fileprivate let capacity: Int
        fileprivate let checks: SlotPageChecks?
        fileprivate var added = 0
        fileprivate var highest: ObjectKey = 0

        /// Asks the processor for the memory of `key`'s slot (see ``KeyDirectory/prefetch(_:)``).
        @inline(__always)
        package func prefetch(_ key: ObjectKey) {
            guard key &- 1 < UInt64(capacity) else { return }
            objectlog_prefetch_for_write(slots + Int(key &- 1))
        }

        /// Sets `key`'s location; returns the previous one.
        ///
        /// - Precondition: `key` is one of those the update was made for.
        @inline(__always)
        package mutating func updateValue(
            _ location: RecordLocation,
            forKey key: ObjectKey
        ) -> RecordLocation? {
            precondition(key &- 1 < UInt64(capacity), "key \(key) is beyond the dense update")
            checks?.check(slot: Int(key &- 1), of: slots)
            let old = DenseSlot.exchange(slots + Int(key &- 1), for: location)
            if key > highest { highest = key }
            if !old.isLive { added += 1 }
            return old.location
        }
    }

    /// Runs `body` with the slots of a dense directory that has room for keys 1 through
    /// `highest`, made this directory's own.
    ///
    /// A commit's updates then skip the checks ``updateValue(_:forKey:)`` makes for each key.
    /// - Returns: False, without running `body`, for a hash table or a dense directory without
    ///   that room.
    @inline(__always)
    package mutating func updatingDense(
        through highest: ObjectKey,
        _ body: (inout DenseUpdate) -> Void
    ) -> Bool {
        guard highest > 0, let capacity = dense?.capacity, highest <= UInt64(capacity) else {
            return false
        }
        // No local reference to the array here: it would make the array look shared.
        if !isKnownUniquelyReferenced(&dense) { copyDense(toCapacity: capacity) }
        guard let slots = dense?.slots else { return false }
        var update = DenseUpdate(
            slots: slots,
            capacity: Int(highest),
            checks: dense?.pageChecks
        )
        body(&update)
        count += update.added
        highestKey = max(highestKey, update.highest)
        return true
    }

    /// Sets `key`'s location; returns the previous one.
    @discardableResult
    @inline(__always)
    package mutating func updateValue(
        _ location: RecordLocation,
        forKey key: ObjectKey
    ) -> RecordLocation? {
        if dense != nil, makeDenseUniqueAndRoomy(for: key) {
            return setDense(location, forKey: key)
        }
        makeUniqueAndRoomy()
        let slots = storage.slots
        var index = home(key)
        while true {
            let slot = slots[index]
            if slot.key == key {
                slots[index] = Slot(
                    key: key,
                    offset: location.offset,
                    length: location.packedLength,
                    entity: location.entity
                )
                return RecordLocation(
                    entity: slot.entity,
                    offset: slot.offset,
                    packedLength: slot.length
                )
            }
            if slot.key == 0 {
                slots[index] = Slot(
                    key: key,
                    offset: location.offset,
                    length: location.packedLength,
                    entity: location.entity
                )
                count += 1
                return nil
            }
            index = following(index)
        }
    }

    /// Removes `key`; returns its location if it was live.
    @discardableResult
    package mutating func removeValue(forKey key: ObjectKey) -> RecordLocation? {
        if dense != nil {
            guard let removed = self[key] else { return nil }
            // As above, no local reference to the array while checking it is unshared.
            if !isKnownUniquelyReferenced(&dense) { copyDense(toCapacity: capacity) }
            guard let dense else { return nil }
            dense.slots[Int(key - 1)] = DenseSlot()
            count -= 1
            // Mostly empty now: a hash table holds the rest in less memory.
            if highestKey > 4096, UInt64(count) * 8 < highestKey {
                makeHashed(capacity: count)
            }
            return removed
        }
        if !isKnownUniquelyReferenced(&storage) { copy(toCapacity: storage.capacity) }
        let slots = storage.slots
        var index = home(key)
        while true {
            let slot = slots[index]
            if slot.key == 0 { return nil }
            if slot.key == key { break }
            index = following(index)
        }
        let removed = slots[index]
        // Backward-shift deletion: move later members of the probe run into the hole, so no
        // tombstones are needed and lookups stay short.
        var hole = index
        var next = following(hole)
        while slots[next].key != 0 {
            let wanted = home(slots[next].key)
            // The entry at `next` may move into `hole` if its home is not in (hole, next].
            let distanceToNext = distance(from: wanted, to: next)
            let distanceToHole = distance(from: wanted, to: hole)
            if distanceToHole < distanceToNext {
                slots[hole] = slots[next]
                hole = next
            }
            next = following(next)
        }
        slots[hole] = Slot(key: 0, offset: 0, length: 0, entity: 0)
        count -= 1
        return RecordLocation(
            entity: removed.entity,
            offset: removed.offset,
            packedLength: removed.length
        )
    }

    /// Calls `body` with every live key and location, in no particular order (in ascending
    /// key order when the directory ``isDense``).
    package func forEachEntry(_ body: (ObjectKey, RecordLocation) throws -> Void) rethrows {
        if let dense {
            Self.checkAllSlots(in: dense)
            let slots = dense.slots
            for index in 0..<dense.capacity where slots[index].isLive {
                let slot = slots[index]
                try body(
                    ObjectKey(index + 1),
                    RecordLocation(
                        entity: slot.entity,
                        offset: slot.offset,
                        packedLength: slot.length
                    )
                )
            }
            return
        }
        let slots = storage.slots
        for index in 0..<storage.capacity where slots[index].key != 0 {
            let slot = slots[index]
            try body(
                slot.key,
                RecordLocation(entity: slot.entity, offset: slot.offset, packedLength: slot.length)
            )
        }
    }

    /// Runs `body` with the bytes of a dense directory's slots for keys 1 through the highest
    /// it has held, as a version 5 index file holds them (each slot's offset, packed length
    /// and entity tag, little-endian); nil, without running `body`, for a hash table, or for a
    /// mapped directory with a damaged page (every page is checked first: its bytes are about
    /// to be given new checksums).
    package func withDenseSlotBytes<Result>(
        _ body: (UnsafeRawBufferPointer) -> Result
    ) -> Result? {
        #if _endian(little)
        guard let dense, checkAllPages() == nil else { return nil }
        let count = Int(min(highestKey, UInt64(dense.capacity)))
        return body(
            UnsafeRawBufferPointer(start: dense.slots, count: count * Self.denseBytesPerKey)
        )
        #else
        return nil
        #endif
    }

    /// Every live key with its location, sorted by key.
    package func sortedEntries() -> [(key: ObjectKey, location: RecordLocation)] {
        var entries: [(key: ObjectKey, location: RecordLocation)] = []
        entries.reserveCapacity(count)
        forEachEntry { entries.append(($0, $1)) }
        if !isDense { RadixSort.sort(&entries) { $0.key } }
        return entries
    }
}

/// Live-object counts per entity tag: an array for the small tags engines use, a dictionary
/// beyond.
package struct EntityCounter {
    private var small: [Int] = []
    private var large: [EntityTag: Int] = [:]

    package init() {}

    @inline(__always)
    package mutating func add(_ entity: EntityTag, _ delta: Int) {
        if entity < 4096 {
            let index = Int(entity)
            if index >= small.count {
                small.append(contentsOf: repeatElement(0, count: index + 1 - small.count))
            }
            small[index] += delta
        } else {
            large[entity, default: 0] += delta
        }
    }

    package subscript(entity: EntityTag) -> Int {
        if entity < 4096 { return Int(entity) < small.count ? small[Int(entity)] : 0 }
        return large[entity] ?? 0
    }

    /// Every entity with a non-zero count.
    package var nonZero: [EntityTag: Int] {
        var result: [EntityTag: Int] = [:]
        for (index, value) in small.enumerated() where value != 0 {
            result[EntityTag(index)] = value
        }
        for (entity, value) in large where value != 0 { result[entity] = value }
        return result
    }
}
