import Foundation

/// The changes of one save, applied atomically by ``LogStore/commit(_:)``.
///
/// A transaction holds the full new value of every inserted or updated object (a *put*), the
/// keys of deleted objects, and optionally a new metadata dictionary. Either all of it becomes
/// visible, or none of it.
///
/// ```swift
/// var transaction = Transaction()
/// let key = store.allocateKeys(1).lowerBound
/// transaction.put(key: key, entity: 1, payload: bytes, isInsert: true)
/// transaction.metadata = ["author": .string("Ada")]
/// try store.commit(transaction)
/// ```
///
/// The values of all puts are kept packed in one buffer, so adding a put from a reused encoding
/// buffer (``put(key:entity:bytes:blobs:isInsert:)``) allocates nothing per object.
public struct Transaction: Sendable {
    /// One put or delete.
    public struct Change: Sendable {
        /// The object's key.
        public var key: ObjectKey
        /// The object's entity tag.
        public var entity: EntityTag
        /// The object's encoded value (empty for a delete).
        public var payload: [UInt8]
        /// External blobs the value refers to.
        public var blobs: [BlobID]
        /// Whether the put inserts a new object.
        public var isInsert: Bool
        /// Whether this is a delete.
        public var isDelete: Bool
        /// For a patch, the put it changes: ``payload`` then holds the engine's partial value
        /// (FORMAT.md, section 10), not the whole value; nil for a put or delete.
        public var patchBase: RecordLocation?
    }

    /// One put or delete; a put's record is a range of ``records``.
    ///
    /// 32 bytes with no reference: a bulk save makes one per object, so the blob lists, which
    /// few puts have, are kept apart in ``blobLists`` (an array in every entry made each one
    /// 48 bytes, and copying or freeing it retained or released the list).
    package struct Entry: Sendable {
        package var key: ObjectKey
        /// Where the put's record starts in ``records``.
        package var recordStart: Int
        package var recordLength: UInt32
        /// The length of the value, which ends the record.
        package var valueCount: UInt32
        package var entity: EntityTag
        private var flags: UInt8

        init(
            key: ObjectKey,
            recordStart: Int,
            recordLength: UInt32,
            valueCount: UInt32,
            entity: EntityTag,
            isInsert: Bool,
            isDelete: Bool,
            hasBlobs: Bool,
            isPatch: Bool = false
        ) {
            self.key = key
            self.recordStart = recordStart
            self.recordLength = recordLength
            self.valueCount = valueCount
            self.entity = entity
            flags = (isInsert ? 1 : 0) | (isDelete ? 2 : 0) | (hasBlobs ? 4 : 0) | (isPatch ? 8 : 0)
        }

        /// The entry of a patch of `key` whose record, `length` bytes from `recordStart`, ends
        /// with a partial value of `valueCount` bytes.
        init(
            patch key: ObjectKey,
            entity: EntityTag,
            recordStart: Int,
            length: Int,
            valueCount: Int
        ) {
            self.init(
                key: key,
                recordStart: recordStart,
                recordLength: UInt32(clamping: length),
                valueCount: UInt32(clamping: valueCount),
                entity: entity,
                isInsert: false,
                isDelete: false,
                hasBlobs: false,
                isPatch: true
            )
        }

        package var isInsert: Bool { flags & 1 != 0 }
        package var isDelete: Bool { flags & 2 != 0 }
        /// Whether the record is a patch (its value a partial value).
        package var isPatch: Bool { flags & 8 != 0 }
        /// Whether the put has a list in ``Transaction/blobLists``.
        package var hasBlobs: Bool { flags & 4 != 0 }

        /// The range of the value in ``records``.
        package var valueRange: Range<Int> {
            let end = recordStart + Int(recordLength)
            return end - Int(valueCount)..<end
        }
    }

    /// The puts and deletes, in the order they were added.
    package private(set) var entries: [Entry] = []
    /// The blobs of the puts that refer to some, by index in ``entries``.
    package private(set) var blobLists: [Int: [BlobID]] = [:]

    /// The blobs the put at `index` in ``entries`` refers to.
    package func blobs(ofEntry index: Int) -> [BlobID] {
        entries[index].hasBlobs ? blobLists[index] ?? [] : []
    }
    /// Every put as a whole record in the compact layout (FORMAT.md section 4), back to back
    /// but for ``holes``.
    ///
    /// A store in that layout writes them as they are; one in the older fixed layout frames
    /// the values again.
    package private(set) var records = ByteWriter()
    /// The runs of ``records`` that hold no record, in ascending order.
    ///
    /// They are room that the parts of a transaction built on several threads left unused (see
    /// ``buildingInParallel(rooms:_:)``). Nothing reads them, and the store writes the records
    /// around them.
    package private(set) var holes: [Hole] = []
    /// Whether some put comes after a delete (the records then cannot be written ahead of the
    /// deletes as one block).
    package private(set) var hasPutAfterDelete = false

    /// The puts and deletes, in the order they were added.
    ///
    /// Each change's payload is copied out of the transaction's packed buffer.
    public var changes: [Change] {
        records.withUnsafeBytes { records in
            entries.indices.map { change(at: $0, in: records) }
        }
    }

    /// The change at `index` in ``entries``, its payload copied out of the packed buffer.
    package func change(at index: Int) -> Change {
        records.withUnsafeBytes { change(at: index, in: $0) }
    }

    private func change(at index: Int, in records: UnsafeRawBufferPointer) -> Change {
        let entry = entries[index]
        return Change(
            key: entry.key,
            entity: entry.entity,
            payload: entry.isDelete ? [] : Array(records[entry.valueRange]),
            blobs: blobs(ofEntry: index),
            isInsert: entry.isInsert,
            isDelete: entry.isDelete,
            patchBase: entry.isPatch ? Self.patchBase(of: entry, in: records) : nil
        )
    }

    /// The number of puts and deletes.
    public var count: Int { entries.count }

    /// A full replacement of the store's metadata dictionary, or nil to keep it.
    public var metadata: Metadata?
    /// Who made the changes (the saving context's author), kept with the transaction for its
    /// history (FORMAT.md, section 4, "Transaction notes").
    public var author: String?
    /// The name of the context that saved it, kept likewise.
    public var contextName: String?

    /// Creates an empty transaction.
    public init() {}

    /// A transaction of the puts whose records are `records`, back to back but for `holes`, as
    /// `entries` locate them (see ``buildingInParallel(rooms:_:)``).
    init(records: ByteWriter, holes: [Hole], entries: [Entry], blobLists: [Int: [BlobID]]) {
        self.records = records
        self.holes = holes
        self.entries = entries
        self.blobLists = blobLists
        hasPatch = entries.contains { $0.isPatch }
    }

    /// Reserves room for `changes` puts and deletes whose values total `valueBytes` bytes.
    public mutating func reserveCapacity(changes: Int, valueBytes: Int) {
        entries.reserveCapacity(changes)
        records.reserveCapacity(valueBytes + changes * RecordLayout.compact.maximumFrameLength)
    }

    /// Reserves room for `count` more deletes (which take no record bytes until the commit
    /// frames them).
    package mutating func reserveCapacity(deletes count: Int) {
        entries.reserveCapacity(entries.count + count)
    }

    /// Adds the full new value of an object.
    ///
    /// - Parameters:
    ///   - key: The object's key, from ``LogStore/allocateKeys(_:)`` for a new object.
    ///   - entity: The object's entity tag.
    ///   - payload: The engine's encoding of the object (at most 64 MiB).
    ///   - blobs: External blobs written with ``LogStore/writeBlob(_:)`` that the value refers to.
    ///   - isInsert: Whether this creates the object.
    public mutating func put(
        key: ObjectKey,
        entity: EntityTag,
        payload: [UInt8],
        blobs: [BlobID] = [],
        isInsert: Bool
    ) {
        payload.withUnsafeBytes {
            put(key: key, entity: entity, bytes: $0, blobs: blobs, isInsert: isInsert)
        }
    }

    /// Adds the full new value of an object, copying its encoding from `bytes`.
    ///
    /// The same as ``put(key:entity:payload:blobs:isInsert:)`` for a value in a buffer the
    /// caller reuses.
    public mutating func put(
        key: ObjectKey,
        entity: EntityTag,
        bytes: UnsafeRawBufferPointer,
        blobs: [BlobID] = [],
        isInsert: Bool
    ) {
        let start = records.count
        RecordLayout.compact.appendPut(
            key: key,
            entity: entity,
            isInsert: isInsert,
            blobs: blobs,
            value: bytes,
            into: &records
        )
        if hasDelete { hasPutAfterDelete = true }
        if !blobs.isEmpty { blobLists[entries.count] = blobs }
        entries.append(
            Entry(
                key: key,
                recordStart: start,
                recordLength: UInt32(clamping: records.count - start),
                // A longer value is refused by the commit; keep its length visible to it.
                valueCount: UInt32(clamping: bytes.count),
                entity: entity,
                isInsert: isInsert,
                isDelete: false,
                hasBlobs: !blobs.isEmpty
            )
        )
    }

    /// Adds the full new value of an object, `valueCount` bytes that `fill` writes in place
    /// (they start zeroed and `fill` must write all of them): for a value assembled from pieces,
    /// which then needs no buffer of its own.
    ///
    /// The record is the one ``put(key:entity:bytes:blobs:isInsert:)`` adds for the same value.
    package mutating func put(
        key: ObjectKey,
        entity: EntityTag,
        valueCount: Int,
        blobs: [BlobID] = [],
        isInsert: Bool,
        fill: (UnsafeMutableRawBufferPointer) -> Void
    ) {
        guard blobs.isEmpty else {
            // Rare (external data kept in blobs): through a value of its own.
            let value = Self.filledValue(count: valueCount, fill)
            put(key: key, entity: entity, payload: value, blobs: blobs, isInsert: isInsert)
            return
        }
        let start = records.count
        RecordLayout.appendCompactPut(
            key: key,
            entity: entity,
            isInsert: isInsert,
            valueCount: valueCount,
            into: &records,
            fill: fill
        )
        if hasDelete { hasPutAfterDelete = true }
        entries.append(
            Entry(
                key: key,
                recordStart: start,
                recordLength: UInt32(clamping: records.count - start),
                valueCount: UInt32(clamping: valueCount),
                entity: entity,
                isInsert: isInsert,
                isDelete: false,
                hasBlobs: false
            )
        )
    }

    /// Adds new values of some of an object's properties: a patch of the put at `base`, which
    /// must be the key's record when the transaction commits (the commit refuses it otherwise),
    /// in a store whose format holds patches (``LogStore/allowsPatches``).
    ///
    /// - Parameters:
    ///   - key: The object's key.
    ///   - entity: The object's entity tag.
    ///   - base: Where the put the patch changes is.
    ///   - value: The engine's partial value (FORMAT.md, section 10); it refers to no blobs.
    package mutating func patch(
        key: ObjectKey,
        entity: EntityTag,
        base: RecordLocation,
        value: UnsafeRawBufferPointer
    ) {
        let start = records.count
        let length = RecordLayout.patchLength(
            key: key,
            entity: entity,
            base: base,
            valueCount: value.count
        )
        records.append(count: length) { record in
            RecordLayout.storePatch(
                key: key,
                entity: entity,
                base: base,
                value: value,
                in: record,
                tables: CRC32.lookupTables
            )
        }
        if hasDelete { hasPutAfterDelete = true }
        hasPatch = true
        entries.append(
            Entry(
                patch: key,
                entity: entity,
                recordStart: start,
                length: length,
                valueCount: value.count
            )
        )
    }

    /// Whether the transaction holds a patch.
    package private(set) var hasPatch = false

    /// The base a patch entry's record names.
    static func patchBase(of entry: Entry, in records: UnsafeRawBufferPointer) -> RecordLocation {
        let record = UnsafeRawBufferPointer(
            rebasing: records[entry.recordStart..<entry.recordStart + Int(entry.recordLength)]
        )
        // Safe: the transaction framed the record itself.
        guard let base = RecordFrame.decodeCompactPatch(record) else {
            preconditionFailure("a transaction's patch record does not decode")
        }
        return RecordLocation(
            entity: entry.entity,
            offset: base.baseOffset,
            length: base.baseLength
        )
    }

    /// A value of `count` bytes that `fill` writes, zeroed first.
    static func filledValue(
        count: Int,
        _ fill: (UnsafeMutableRawBufferPointer) -> Void
    ) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            let bytes = UnsafeMutableRawBufferPointer(buffer)
            bytes.initializeMemory(as: UInt8.self, repeating: 0)
            fill(bytes)
            initialized = count
        }
    }

    /// Appends the puts of `other`, in order, after this transaction's (for puts encoded in
    /// parts, on several threads).
    ///
    /// - Precondition: neither transaction deletes anything, and `other` has no metadata.
    package mutating func append(putsOf other: Transaction) {
        precondition(!hasDelete && !other.hasDelete && other.metadata == nil)
        if other.hasPatch { hasPatch = true }
        let base = records.count
        let firstIndex = entries.count
        other.records.withUnsafeBytes { records.append(contentsOf: $0) }
        holes += other.holes.map { Hole(start: base + $0.start, count: $0.count) }
        entries.reserveCapacity(entries.count + other.entries.count)
        for var entry in other.entries {
            entry.recordStart += base
            entries.append(entry)
        }
        for (index, blobs) in other.blobLists { blobLists[firstIndex + index] = blobs }
    }

    /// Adds the deletion of an object.
    public mutating func delete(key: ObjectKey, entity: EntityTag) {
        hasDelete = true
        entries.append(
            Entry(
                key: key,
                recordStart: records.count,
                recordLength: 0,
                valueCount: 0,
                entity: entity,
                isInsert: false,
                isDelete: true,
                hasBlobs: false
            )
        )
    }

    /// Whether the transaction deletes something.
    package private(set) var hasDelete = false

    /// The transaction without the changes of keys that `isIncluded` rejects (same metadata).
    public func filter(_ isIncluded: (ObjectKey) -> Bool) -> Transaction {
        var kept = Transaction()
        kept.metadata = metadata
        records.withUnsafeBytes { records in
            for (index, entry) in entries.enumerated() where isIncluded(entry.key) {
                if entry.isDelete {
                    kept.delete(key: entry.key, entity: entry.entity)
                } else if entry.isPatch {
                    kept.patch(
                        key: entry.key,
                        entity: entry.entity,
                        base: Self.patchBase(of: entry, in: records),
                        value: UnsafeRawBufferPointer(rebasing: records[entry.valueRange])
                    )
                } else {
                    kept.put(
                        key: entry.key,
                        entity: entry.entity,
                        bytes: UnsafeRawBufferPointer(rebasing: records[entry.valueRange]),
                        blobs: blobs(ofEntry: index),
                        isInsert: entry.isInsert
                    )
                }
            }
        }
        return kept
    }

    /// Whether the transaction changes nothing.
    public var isEmpty: Bool { entries.isEmpty && metadata == nil }
}
