/// How the records of a store file are framed, fixed by the header's major version
/// (FORMAT.md, section 4).
///
/// Format 1 puts a fixed 24-byte frame before every payload. Format 2, which this code writes,
/// keeps the checksum, type and flags in front and follows them with varint fields chosen by
/// the type, so an object record's frame takes about 11 bytes instead of 26. Commit records
/// keep a fixed length in both, so the last commit can be found by its trailer.
package enum RecordLayout: Sendable, Equatable {
    /// Format 1.x: `crc32 u32 length, u8 type, u8 flags, u16 reserved, u32 entity, u64 key`.
    case fixed
    /// Format 2.x: `crc32, u8 type, u8 flags`, then fields by type (varints for object records).
    case compact

    /// The layout of files with format major version `major`; nil for a version not known.
    package init?(majorVersion major: UInt16) {
        switch major {
        case 1: self = .fixed
        case 2, 3: self = .compact
        default: return nil
        }
    }

    /// The newest format major version that uses this layout.
    package var majorVersion: UInt16 { self == .fixed ? 1 : LogFormat.majorVersion }

    /// Bytes of a whole commit record: a frame and the 56-byte commit payload.
    package var commitRecordLength: Int {
        (self == .fixed ? 24 : 14) + LogFormat.commitPayloadLength
    }

    /// The most bytes a put's frame (everything before the payload) can take.
    package var maximumFrameLength: Int {
        // Compact: crc 4, type 1, flags 1, entity ≤ 5, key ≤ 10, length ≤ 4 (64 MiB needs 4).
        self == .fixed ? 24 : 25
    }

    /// The most bytes any record's frame can take: a patch's, whose frame also names its base
    /// (offset ≤ 10 bytes, length ≤ 4).
    package var maximumAnyFrameLength: Int { self == .fixed ? 24 : 39 }

    /// The smallest padding record: its frame with an empty payload.
    package var minimumPaddingLength: Int { self == .fixed ? 24 : 10 }
}

/// Flags of a put record.
package enum PutFlags {
    /// The put inserts a new object (otherwise it updates one).
    package static let insert: UInt8 = 1
    /// Format 2: the payload starts with a blob list.
    ///
    /// The list is a varint count and that many digests. Format 1 puts always start with a
    /// 2-byte blob count.
    package static let hasBlobs: UInt8 = 2
}

/// Flags of a commit record.
package enum CommitFlags {
    /// The commit closes a compaction's copy of the live state; it is not a user transaction.
    package static let compaction: UInt8 = 1
}

/// A record's decoded frame: everything before its payload.
package struct RecordFrame: Sendable {
    /// The stored CRC-32 (the record's first four bytes).
    package var checksum: UInt32
    package var type: RecordType
    package var flags: UInt8
    /// The entity tag (object records) or 0.
    package var entity: UInt32
    /// The object key (object records), the transaction number (commits), or 0.
    package var key: UInt64
    /// Bytes of payload after the frame.
    package var payloadLength: UInt32
    /// Bytes of the frame before the payload.
    package var frameLength: Int
    /// A patch's base: the offset and whole length of the put it changes (0 for other types).
    package var baseOffset: UInt64 = 0
    package var baseLength: UInt32 = 0

    /// Bytes of the whole record.
    package var totalLength: Int { frameLength + Int(payloadLength) }

    /// The outcome of decoding a frame from bytes that may end early.
    package enum Decoding {
        case frame(RecordFrame)
        /// The bytes end inside the frame.
        case incomplete
        /// The frame is malformed: an unknown type, a reserved field set, a bad varint or a
        /// length over the format's limit.
        case invalid(String)
    }

    /// Decodes the frame at the start of `bytes`, which may hold fewer bytes than the record.
    package static func decode(_ bytes: UnsafeRawBufferPointer, layout: RecordLayout) -> Decoding {
        switch layout {
        case .fixed: decodeFixed(bytes)
        case .compact: decodeCompact(bytes)
        }
    }

    private static func decodeFixed(_ bytes: UnsafeRawBufferPointer) -> Decoding {
        guard bytes.count >= 24 else { return .incomplete }
        // Format 1 has no patches.
        guard let type = RecordType(rawValue: bytes[8]), type != .patch,
            UInt16(littleEndianBytesOf: bytes, at: 10) == 0
        else {
            return .invalid("unknown record type \(bytes[8]) or nonzero reserved bits")
        }
        let length = UInt32(littleEndianBytesOf: bytes, at: 4)
        guard Int(length) <= LogFormat.maximumPayloadLength else {
            return .invalid("record length \(length) exceeds the format's limit")
        }
        let frame = RecordFrame(
            checksum: UInt32(littleEndianBytesOf: bytes, at: 0),
            type: type,
            flags: bytes[9],
            entity: UInt32(littleEndianBytesOf: bytes, at: 12),
            key: UInt64(littleEndianBytesOf: bytes, at: 16),
            payloadLength: length,
            frameLength: 24
        )
        if let problem = unusedFieldProblem(frame, layout: .fixed) { return .invalid(problem) }
        return .frame(frame)
    }

    private static func decodeCompact(_ bytes: UnsafeRawBufferPointer) -> Decoding {
        guard bytes.count >= 6 else { return .incomplete }
        guard let type = RecordType(rawValue: bytes[4]) else {
            return .invalid("unknown record type \(bytes[4])")
        }
        if type == .put, let frame = decodeCompactPut(bytes) { return .frame(frame) }
        var frame = RecordFrame(
            checksum: UInt32(littleEndianBytesOf: bytes, at: 0),
            type: type,
            flags: bytes[5],
            entity: 0,
            key: 0,
            payloadLength: 0,
            frameLength: 6
        )
        // Reads the next varint of the frame into `value`; nil to go on, or the outcome.
        // Fields are at most 5 (entity), 10 (key) and 4 (length) bytes long, so the frame's
        // first 25 bytes always tell a complete frame from a malformed one.
        func field(
            _ limit: UInt64,
            _ name: String,
            _ maximumLength: Int,
            _ value: inout UInt64
        ) -> Decoding? {
            switch decodeVarint(bytes, at: frame.frameLength, maximumLength: maximumLength) {
            case .incomplete: return .incomplete
            case .malformed: return .invalid("malformed \(name) in a record frame")
            case .value(let decoded, let length):
                guard decoded <= limit else {
                    return .invalid("record \(name) \(decoded) exceeds the format's limit")
                }
                value = decoded
                frame.frameLength += length
                return nil
            }
        }
        var entity: UInt64 = 0
        var length: UInt64 = 0
        let maximumLength = UInt64(LogFormat.maximumPayloadLength)
        switch type {
        case .patch:
            if let outcome = field(UInt64(UInt32.max), "entity", 5, &entity) { return outcome }
            var key: UInt64 = 0
            if let outcome = field(UInt64.max, "key", 10, &key) { return outcome }
            var baseOffset: UInt64 = 0
            if let outcome = field(UInt64.max, "base offset", 10, &baseOffset) { return outcome }
            var baseLength: UInt64 = 0
            let longestRecord = maximumLength + UInt64(RecordLayout.compact.maximumFrameLength)
            if let outcome = field(longestRecord, "base length", 4, &baseLength) { return outcome }
            if let outcome = field(maximumLength, "length", 4, &length) { return outcome }
            frame.entity = UInt32(entity)
            frame.key = key
            frame.baseOffset = baseOffset
            frame.baseLength = UInt32(baseLength)
        case .put, .delete:
            if let outcome = field(UInt64(UInt32.max), "entity", 5, &entity) { return outcome }
            var key: UInt64 = 0
            if let outcome = field(UInt64.max, "key", 10, &key) { return outcome }
            frame.entity = UInt32(entity)
            frame.key = key
            if type == .put, let outcome = field(maximumLength, "length", 4, &length) {
                return outcome
            }
        case .metadata:
            if let outcome = field(maximumLength, "length", 4, &length) { return outcome }
        case .commit:
            guard bytes.count >= 14 else { return .incomplete }
            frame.key = UInt64(littleEndianBytesOf: bytes, at: 6)
            frame.frameLength = 14
            length = UInt64(LogFormat.commitPayloadLength)
        case .padding:
            guard bytes.count >= 10 else { return .incomplete }
            length = UInt64(UInt32(littleEndianBytesOf: bytes, at: 6))
            guard length <= maximumLength else {
                return .invalid("record length \(length) exceeds the format's limit")
            }
            frame.frameLength = 10
        }
        frame.payloadLength = UInt32(length)
        if let problem = unusedFieldProblem(frame, layout: .compact) { return .invalid(problem) }
        return .frame(frame)
    }

    /// The flag bits each record type may set (FORMAT.md, section 4): any other is damage.
    @inline(__always)
    package static func allowedFlags(_ type: RecordType, layout: RecordLayout) -> UInt8 {
        switch type {
        case .put: layout == .compact ? PutFlags.insert | PutFlags.hasBlobs : PutFlags.insert
        case .commit: CommitFlags.compaction
        case .delete, .metadata, .padding, .patch: 0
        }
    }

    /// What is wrong with a frame's flags or unused fields, or nil: unknown flag bits, and in
    /// version 1 frames an entity or key where the type has none, are damage.
    private static func unusedFieldProblem(_ frame: RecordFrame, layout: RecordLayout) -> String? {
        let unknown = frame.flags & ~allowedFlags(frame.type, layout: layout)
        if unknown != 0 {
            return "unknown flag bits \(String(unknown, radix: 16)) in a \(frame.type) record"
        }
        guard layout == .fixed else { return nil }
        switch frame.type {
        case .metadata, .padding:
            return frame.entity == 0 && frame.key == 0
                ? nil : "nonzero entity or key in a \(frame.type) record"
        case .commit:
            return frame.entity == 0 ? nil : "nonzero entity in a commit record"
        case .put, .delete, .patch:
            return nil
        }
    }

    /// The put frame at the start of `bytes`; nil if they do not start with a complete,
    /// well-formed put frame.
    ///
    /// The same frames as ``decode(_:layout:)`` with a `.put` type, without the `Decoding`
    /// value (and the error text it may carry) on the common path: loading one object decodes
    /// one of these.
    @_transparent
    package static func decodePut(
        _ bytes: UnsafeRawBufferPointer,
        layout: RecordLayout
    ) -> RecordFrame? {
        if layout == .compact, bytes.count >= 6, bytes[4] == RecordType.put.rawValue,
            let frame = decodeCompactPut(bytes)
        {
            return frame
        }
        guard case .frame(let frame) = decode(bytes, layout: layout), frame.type == .put else {
            return nil
        }
        return frame
    }

    /// The varint of at most `maximumLength` bytes at `position` of the `count` bytes at
    /// `base`, moving `position` past it; nil if it runs past them or is too long (the tenth
    /// byte of a 64-bit value may only carry its 64th bit).
    @inline(__always)
    private static func frameVarint(
        _ base: UnsafeRawPointer,
        _ count: Int,
        _ position: inout Int,
        _ maximumLength: Int
    ) -> UInt64? {
        guard position < count else { return nil }
        // Safe: position < count, the bytes' length (checked for every byte read).
        let first = base.load(fromByteOffset: position, as: UInt8.self)
        position += 1
        // Most fields (an entity tag, a small record's length) take one byte.
        if first < 0x80 { return UInt64(first) }
        var value = UInt64(first & 0x7F)
        var shift: UInt64 = 7
        for _ in 1..<maximumLength {
            guard position < count else { return nil }
            let byte = base.load(fromByteOffset: position, as: UInt8.self)
            position += 1
            if shift == 63 && byte > 1 { return nil }
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        return nil
    }

    /// A well-formed compact put frame, decoded without building an error description.
    ///
    /// Nil for anything else: the general path then says exactly what is wrong. Scans and
    /// fetches decode a million of these.
    @_transparent
    package static func decodeCompactPut(_ bytes: UnsafeRawBufferPointer) -> RecordFrame? {
        guard bytes.count >= 6, let base = bytes.baseAddress else { return nil }
        let count = bytes.count
        var position = 6
        // Called directly rather than through a local function that captures `position`: a
        // capture that is not inlined away is checked for exclusive access on every call.
        guard let entity = frameVarint(base, count, &position, 5),
            let key = frameVarint(base, count, &position, 10),
            let length = frameVarint(base, count, &position, 4)
        else { return nil }
        let fields = (entity, key, length)
        // Unknown flag bits make it damage: the general decoder then says so.
        guard fields.0 <= UInt64(UInt32.max), fields.2 <= UInt64(LogFormat.maximumPayloadLength),
            bytes[5] & ~(PutFlags.insert | PutFlags.hasBlobs) == 0
        else { return nil }
        return RecordFrame(
            checksum: UInt32(littleEndianBytesOf: bytes, at: 0),
            type: .put,
            flags: bytes[5],
            entity: UInt32(fields.0),
            key: fields.1,
            payloadLength: UInt32(fields.2),
            frameLength: position
        )
    }

    /// A well-formed compact patch frame, decoded straight from the bytes without building an
    /// error description (as ``decodeCompactPut(_:)`` does for puts); nil for anything else,
    /// which the general decoder then describes.
    ///
    /// A commit checks the base of each of a batch update's patches, and a read of many
    /// patched objects decodes each patch.
    @inline(__always)
    package static func decodeCompactPatch(_ bytes: UnsafeRawBufferPointer) -> RecordFrame? {
        guard bytes.count >= 6, bytes[4] == RecordType.patch.rawValue, bytes[5] == 0,
            let base = bytes.baseAddress
        else { return nil }
        let count = bytes.count
        var position = 6
        @inline(__always) func varint(_ maximumLength: Int) -> UInt64? {
            frameVarint(base, count, &position, maximumLength)
        }
        let maximumPayload = UInt64(LogFormat.maximumPayloadLength)
        guard let entity = varint(5), entity <= UInt64(UInt32.max), let key = varint(10),
            let baseOffset = varint(10), let baseLength = varint(4),
            baseLength <= maximumPayload + UInt64(RecordLayout.compact.maximumFrameLength),
            let length = varint(4), length <= maximumPayload
        else { return nil }
        return RecordFrame(
            checksum: UInt32(littleEndianBytesOf: bytes, at: 0),
            type: .patch,
            flags: 0,
            entity: UInt32(entity),
            key: key,
            payloadLength: UInt32(length),
            frameLength: position,
            baseOffset: baseOffset,
            baseLength: UInt32(baseLength)
        )
    }

    /// The CRC-32 a record must carry: of all its bytes after the stored checksum.
    ///
    /// `record` is the whole record, frame and payload.
    package static func checksum(of record: UnsafeRawBufferPointer) -> UInt32 {
        checksum(of: record, tables: CRC32.lookupTables)
    }

    /// The CRC-32 a record must carry, with tables a loop fetched once.
    @inline(__always)
    package static func checksum(
        of record: UnsafeRawBufferPointer,
        tables: CRC32.Tables
    ) -> UInt32 {
        CRC32.checksum(UnsafeRawBufferPointer(rebasing: record[4...]), tables: tables)
    }

    /// Why a record is damaged when its stored checksum differs from the computed one: every
    /// reader reports a mismatch in these words.
    ///
    /// Out of line, so that the readers' loops over records carry none of its code.
    @inline(never)
    package static func checksumMismatch(stored: UInt32, computed: UInt32) -> String {
        "record checksum mismatch (stored \(hex32(stored)), computed \(hex32(computed)))"
    }
}

/// Where a put's blob list and value lie in its payload.
package struct PutContents: Sendable {
    /// Number of blob digests.
    package var blobCount: Int
    /// Offset of the first digest in the payload.
    package var blobsStart: Int
    /// Offset of the object's value in the payload.
    package var valueStart: Int

    /// Locates the blob list and value of a put's payload; nil if the payload is too short
    /// for the blob list it declares.
    package init?(_ payload: UnsafeRawBufferPointer, flags: UInt8, layout: RecordLayout) {
        switch layout {
        case .fixed:
            guard payload.count >= 2 else { return nil }
            blobCount = Int(UInt16(littleEndianBytesOf: payload, at: 0))
            blobsStart = 2
        case .compact:
            guard flags & PutFlags.hasBlobs != 0 else {
                blobCount = 0
                blobsStart = 0
                valueStart = 0
                return
            }
            guard case .value(let count, let length) = decodeVarint(payload, at: 0),
                count <= UInt64(payload.count / LogFormat.blobIDLength)
            else { return nil }
            blobCount = Int(count)
            blobsStart = length
        }
        valueStart = blobsStart + blobCount * LogFormat.blobIDLength
        guard valueStart <= payload.count else { return nil }
    }

    /// The blob identifiers in `payload`.
    package func blobs(in payload: UnsafeRawBufferPointer) -> [BlobID] {
        (0..<blobCount).map { index in
            let from = blobsStart + index * LogFormat.blobIDLength
            return BlobID(bytes: Array(payload[from..<(from + LogFormat.blobIDLength)]))!
        }
    }
}

// MARK: - Writing records

extension RecordLayout {
    /// The payload length of a put with `blobCount` blobs and a value of `valueLength` bytes.
    package func putPayloadLength(blobCount: Int, valueLength: Int) -> Int {
        let blobList: Int
        switch self {
        case .fixed: blobList = 2 + blobCount * LogFormat.blobIDLength
        case .compact:
            blobList =
                blobCount == 0
                ? 0
                : ByteWriter.varintLength(UInt64(blobCount)) + blobCount * LogFormat.blobIDLength
        }
        return blobList + valueLength
    }

    /// The bytes of a whole put record with `blobCount` blobs and `valueLength` bytes of value.
    package func putRecordLength(
        key: ObjectKey,
        entity: EntityTag,
        blobCount: Int,
        valueLength: Int
    ) -> Int {
        let payload = putPayloadLength(blobCount: blobCount, valueLength: valueLength)
        switch self {
        case .fixed: return 24 + payload
        case .compact:
            return 6 + ByteWriter.varintLength(UInt64(entity)) + ByteWriter.varintLength(key)
                + ByteWriter.varintLength(UInt64(payload)) + payload
        }
    }

    /// Appends a put record: the blob list and the object's value form its payload.
    ///
    /// The caller has checked the payload against ``LogFormat/maximumPayloadLength``.
    package func appendPut(
        key: ObjectKey,
        entity: EntityTag,
        isInsert: Bool,
        blobs: [BlobID],
        value: UnsafeRawBufferPointer,
        into writer: inout ByteWriter
    ) {
        let length = putPayloadLength(blobCount: blobs.count, valueLength: value.count)
        var flags = isInsert ? PutFlags.insert : 0
        if self == .compact, blobs.isEmpty {
            // The common case (every object of a bulk save) in one append: frame, value and
            // checksum written in place.
            let total =
                6 + ByteWriter.varintLength(UInt64(entity)) + ByteWriter.varintLength(key)
                + ByteWriter.varintLength(UInt64(length)) + length
            writer.append(count: total) { record in
                record[4] = RecordType.put.rawValue
                record[5] = flags
                var offset = ByteWriter.storeVarint(UInt64(entity), at: 6, in: record)
                offset = ByteWriter.storeVarint(key, at: offset, in: record)
                offset = ByteWriter.storeVarint(UInt64(length), at: offset, in: record)
                if let source = value.baseAddress, let target = record.baseAddress {
                    (target + offset).copyMemory(from: source, byteCount: value.count)
                }
                let checksum = RecordFrame.checksum(of: UnsafeRawBufferPointer(record))
                record.storeBytes(of: checksum.littleEndian, toByteOffset: 0, as: UInt32.self)
            }
            return
        }
        let start = writer.count
        switch self {
        case .fixed:
            appendFixedFrame(.put, flags: flags, entity: entity, key: key, length: length, &writer)
            writer.append(UInt16(blobs.count))
        case .compact:
            if !blobs.isEmpty { flags |= PutFlags.hasBlobs }
            writer.append(UInt32(0))  // checksum, patched below
            writer.append(RecordType.put.rawValue)
            writer.append(flags)
            writer.appendVarint(UInt64(entity))
            writer.appendVarint(key)
            writer.appendVarint(UInt64(length))
            if !blobs.isEmpty { writer.appendVarint(UInt64(blobs.count)) }
        }
        for blob in blobs { writer.append(contentsOf: blob.bytes) }
        writer.append(contentsOf: value)
        sealRecord(at: start, &writer)
    }

    /// Appends a compact put record without blobs whose value, `valueCount` bytes, `fill`
    /// writes in place (zeroed first); the same record as
    /// ``appendPut(key:entity:isInsert:blobs:value:into:)`` with that value.
    package static func appendCompactPut(
        key: ObjectKey,
        entity: EntityTag,
        isInsert: Bool,
        valueCount: Int,
        into writer: inout ByteWriter,
        fill: (UnsafeMutableRawBufferPointer) -> Void
    ) {
        writer.append(
            count: compactPutLength(key: key, entity: entity, valueCount: valueCount)
        ) { record in
            storeCompactPut(
                key: key,
                entity: entity,
                isInsert: isInsert,
                valueCount: valueCount,
                in: record,
                tables: CRC32.lookupTables,
                fill: fill
            )
        }
    }

    /// The length of the record ``appendCompactPut(key:entity:isInsert:valueCount:into:fill:)``
    /// appends.
    @inline(__always)
    package static func compactPutLength(key: ObjectKey, entity: EntityTag, valueCount: Int) -> Int
    {
        let length = RecordLayout.compact.putPayloadLength(blobCount: 0, valueLength: valueCount)
        return 6 + ByteWriter.varintLength(UInt64(entity)) + ByteWriter.varintLength(key)
            + ByteWriter.varintLength(UInt64(length)) + length
    }

    /// Writes the record ``appendCompactPut(key:entity:isInsert:valueCount:into:fill:)``
    /// appends into `record`, which is exactly ``compactPutLength(key:entity:valueCount:)``
    /// bytes long and zeroed; its checksum computed with `tables`.
    @inline(__always)
    package static func storeCompactPut(
        key: ObjectKey,
        entity: EntityTag,
        isInsert: Bool,
        valueCount: Int,
        in record: UnsafeMutableRawBufferPointer,
        tables: CRC32.Tables,
        fill: (UnsafeMutableRawBufferPointer) -> Void
    ) {
        // Without blobs, the payload is the value alone.
        let length = RecordLayout.compact.putPayloadLength(blobCount: 0, valueLength: valueCount)
        record[4] = RecordType.put.rawValue
        record[5] = isInsert ? PutFlags.insert : 0
        var offset = ByteWriter.storeVarint(UInt64(entity), at: 6, in: record)
        offset = ByteWriter.storeVarint(key, at: offset, in: record)
        offset = ByteWriter.storeVarint(UInt64(length), at: offset, in: record)
        fill(UnsafeMutableRawBufferPointer(rebasing: record[offset...]))
        let checksum = RecordFrame.checksum(of: UnsafeRawBufferPointer(record), tables: tables)
        record.storeBytes(of: checksum.littleEndian, toByteOffset: 0, as: UInt32.self)
    }

    /// The length of a (compact) patch record of key `key` whose base is `base` and whose
    /// partial value is `valueCount` bytes.
    @inline(__always)
    package static func patchLength(
        key: ObjectKey,
        entity: EntityTag,
        base: RecordLocation,
        valueCount: Int
    ) -> Int {
        6 + ByteWriter.varintLength(UInt64(entity)) + ByteWriter.varintLength(key)
            + ByteWriter.varintLength(base.offset) + ByteWriter.varintLength(UInt64(base.length))
            + ByteWriter.varintLength(UInt64(valueCount)) + valueCount
    }

    /// Writes a patch record into `record`, exactly ``patchLength(key:entity:base:valueCount:)``
    /// bytes long: the frame naming `base`, then `value` (a partial value), its checksum
    /// computed with `tables`.
    @inline(__always)
    package static func storePatch(
        key: ObjectKey,
        entity: EntityTag,
        base: RecordLocation,
        value: UnsafeRawBufferPointer,
        in record: UnsafeMutableRawBufferPointer,
        tables: CRC32.Tables
    ) {
        record[4] = RecordType.patch.rawValue
        record[5] = 0
        var offset = ByteWriter.storeVarint(UInt64(entity), at: 6, in: record)
        offset = ByteWriter.storeVarint(key, at: offset, in: record)
        offset = ByteWriter.storeVarint(base.offset, at: offset, in: record)
        offset = ByteWriter.storeVarint(UInt64(base.length), at: offset, in: record)
        offset = ByteWriter.storeVarint(UInt64(value.count), at: offset, in: record)
        if let source = value.baseAddress, let target = record.baseAddress, !value.isEmpty {
            (target + offset).copyMemory(from: source, byteCount: value.count)
        }
        let checksum = RecordFrame.checksum(of: UnsafeRawBufferPointer(record), tables: tables)
        record.storeBytes(of: checksum.littleEndian, toByteOffset: 0, as: UInt32.self)
    }

    /// Appends a delete record.
    package func appendDelete(key: ObjectKey, entity: EntityTag, into writer: inout ByteWriter) {
        let start = writer.count
        switch self {
        case .fixed:
            appendFixedFrame(.delete, flags: 0, entity: entity, key: key, length: 0, &writer)
        case .compact:
            writer.append(UInt32(0))
            writer.append(RecordType.delete.rawValue)
            writer.append(UInt8(0))
            writer.appendVarint(UInt64(entity))
            writer.appendVarint(key)
        }
        sealRecord(at: start, &writer)
    }

    /// Appends a metadata record holding a whole encoded dictionary.
    package func appendMetadata(_ payload: UnsafeRawBufferPointer, into writer: inout ByteWriter) {
        let start = writer.count
        switch self {
        case .fixed:
            appendFixedFrame(.metadata, flags: 0, entity: 0, key: 0, length: payload.count, &writer)
        case .compact:
            writer.append(UInt32(0))
            writer.append(RecordType.metadata.rawValue)
            writer.append(UInt8(0))
            writer.appendVarint(UInt64(payload.count))
        }
        writer.append(contentsOf: payload)
        sealRecord(at: start, &writer)
    }

    /// Appends a commit record; returns its stored checksum.
    @discardableResult
    package func appendCommit(
        number: UInt64,
        flags: UInt8,
        _ commit: CommitPayload,
        into writer: inout ByteWriter
    ) -> UInt32 {
        let start = writer.count
        switch self {
        case .fixed:
            appendFixedFrame(
                .commit,
                flags: flags,
                entity: 0,
                key: number,
                length: LogFormat.commitPayloadLength,
                &writer
            )
        case .compact:
            writer.append(UInt32(0))
            writer.append(RecordType.commit.rawValue)
            writer.append(flags)
            writer.append(number)
        }
        writer.append(contentsOf: commit.encoded())
        return sealRecord(at: start, &writer)
    }

    /// Appends a padding record so that a commit record appended next ends on a sector boundary.
    ///
    /// `writer`'s bytes start at file offset `base`. Appends nothing when it already will,
    /// unless there is a `note` (a ``TransactionNote``'s bytes) to start the padding with.
    package func appendPaddingBeforeCommit(
        base: UInt64,
        into writer: inout ByteWriter,
        note: [UInt8] = []
    ) {
        let sector = LogFormat.sectorSize
        let end = Int((base + UInt64(writer.count) + UInt64(commitRecordLength)) % UInt64(sector))
        guard end != 0 || !note.isEmpty else { return }
        var gap = end == 0 ? 0 : sector - end
        // A padding record needs at least its frame, and room for the note.
        while gap < minimumPaddingLength + note.count { gap += sector }
        let start = writer.count
        let fillerLength = gap - minimumPaddingLength
        switch self {
        case .fixed:
            appendFixedFrame(.padding, flags: 0, entity: 0, key: 0, length: fillerLength, &writer)
        case .compact:
            writer.append(UInt32(0))
            writer.append(RecordType.padding.rawValue)
            writer.append(UInt8(0))
            writer.append(UInt32(fillerLength))
        }
        writer.append(contentsOf: note)
        writer.append(contentsOf: repeatElement(0, count: fillerLength - note.count))
        sealRecord(at: start, &writer)
    }

    private func appendFixedFrame(
        _ type: RecordType,
        flags: UInt8,
        entity: EntityTag,
        key: UInt64,
        length: Int,
        _ writer: inout ByteWriter
    ) {
        writer.append(UInt32(0))  // checksum, patched by `sealRecord`
        writer.append(UInt32(length))
        writer.append(type.rawValue)
        writer.append(flags)
        writer.append(UInt16(0))
        writer.append(entity)
        writer.append(key)
    }

    /// Computes and stores the checksum of the record that starts at `start` and runs to the
    /// writer's end.
    @discardableResult
    private func sealRecord(at start: Int, _ writer: inout ByteWriter) -> UInt32 {
        let checksum = writer.withUnsafeBytes {
            RecordFrame.checksum(of: UnsafeRawBufferPointer(rebasing: $0[start...]))
        }
        writer.patch(checksum, at: start)
        return checksum
    }
}
