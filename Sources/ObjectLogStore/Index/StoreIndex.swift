import Foundation

/// Where a live object's latest put record is.
public struct RecordLocation: Sendable, Equatable {
    /// The object's entity tag.
    public var entity: EntityTag
    /// Offset of the put record's frame in the store file.
    public var offset: UInt64
    /// Length of the whole record: its frame and payload.
    public var length: UInt32
    /// Whether the record is a patch: new values of some of the object's properties, applied
    /// to the put its frame names.
    public var isPatch: Bool

    /// Creates a location.
    public init(entity: EntityTag, offset: UInt64, length: UInt32, isPatch: Bool = false) {
        self.entity = entity
        self.offset = offset
        self.length = length
        self.isPatch = isPatch
    }

    /// The bit of a packed length (in the key directory's slots) that marks a patch: no record
    /// is 2 GiB long.
    package static let patchBit: UInt32 = 1 << 31

    /// The length with ``patchBit`` set for a patch.
    @inline(__always)
    package var packedLength: UInt32 { isPatch ? length | Self.patchBit : length }

    /// The location whose packed length is `packedLength`.
    @inline(__always)
    package init(entity: EntityTag, offset: UInt64, packedLength: UInt32) {
        self.init(
            entity: entity,
            offset: offset,
            length: packedLength & ~Self.patchBit,
            isPatch: packedLength & Self.patchBit != 0
        )
    }
}

/// The index checkpoint file (`NAME.olog-index`): every live key's location as of a commit,
/// so opening need not replay the log (FORMAT.md, "Index file").
///
/// The index is a hint: when it is missing, damaged, from another store or generation, or does
/// not match the log, it is ignored and the log is replayed. Entries are sorted by key and
/// delta-encoded as varints (about 5 bytes each instead of 24), so there is less to read and
/// checksum on open.
package struct StoreIndex {
    package static let magic: [UInt8] = Array("OLINDEX\n".utf8)
    package static let fixedLength = 96
    /// The fewest bytes an entry takes (four one-byte varints).
    package static let minimumEntryLength = 4
    /// The index file's own version: 3 since entries carry a patch bit beside the entity tag;
    /// version 2 entries (delta-encoded varints holding whole record lengths, with no patch bit)
    /// are read too, and version 1 indexes (fixed-width payload lengths) are ignored.
    package static let version: UInt16 = 3

    package var storeUUID: UUID
    package var generation: UInt64
    /// The store file offset just past the last commit the index covers.
    package var coveredLength: UInt64
    /// The stored CRC of that commit record.
    package var lastCommitChecksum: UInt32
    package var lastNumber: UInt64
    package var nextKey: UInt64
    package var metadataOffset: UInt64
    package var liveBytes: UInt64
    /// The entries, sorted by key.
    package var entries: [(key: ObjectKey, location: RecordLocation)]

    package func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: Self.fixedLength + entries.count * 6 + 4)
        writer.append(contentsOf: Self.magic)
        writer.append(Self.version)
        writer.append(UInt16(0))
        writer.append(UInt32(0))
        writer.append(contentsOf: uuidBytes(storeUUID))
        writer.append(generation)
        writer.append(coveredLength)
        writer.append(lastCommitChecksum)
        writer.append(UInt32(0))
        writer.append(UInt64(entries.count))
        writer.append(lastNumber)
        writer.append(nextKey)
        writer.append(metadataOffset)
        writer.append(liveBytes)
        // The entries are written in one append, sized by a first pass: an append per varint
        // would check the buffer's room and uniqueness four times for every key.
        entries.withUnsafeBufferPointer { entries in
            var byteCount = 0
            Self.forEachEntryVarints(entries) { key, offset, length, entity in
                byteCount +=
                    ByteWriter.varintLength(key) + ByteWriter.varintLength(offset)
                    + ByteWriter.varintLength(length) + ByteWriter.varintLength(entity)
            }
            writer.append(count: byteCount) { buffer in
                var position = 0
                Self.forEachEntryVarints(entries) { key, offset, length, entity in
                    position = ByteWriter.storeVarint(key, at: position, in: buffer)
                    position = ByteWriter.storeVarint(offset, at: position, in: buffer)
                    position = ByteWriter.storeVarint(length, at: position, in: buffer)
                    position = ByteWriter.storeVarint(entity, at: position, in: buffer)
                }
            }
        }
        let checksum = writer.withUnsafeBytes { CRC32.checksum($0) }
        writer.append(checksum)
        return writer.bytes
    }

    /// Calls `body` with the four varint values of each entry: the key's delta from the
    /// previous key, the zigzag-coded delta of the record offset from the previous one
    /// (offsets mostly grow with keys, but not always), the record length and the entity.
    @inline(__always)
    private static func forEachEntryVarints(
        _ entries: UnsafeBufferPointer<(key: ObjectKey, location: RecordLocation)>,
        _ body: (UInt64, UInt64, UInt64, UInt64) -> Void
    ) {
        var previousKey: ObjectKey = 0
        var previousOffset: UInt64 = 0
        for (key, location) in entries {
            let delta = Int64(bitPattern: location.offset &- previousOffset)
            body(
                key &- previousKey,
                UInt64(bitPattern: (delta << 1) ^ (delta >> 63)),
                UInt64(location.length),
                UInt64(location.entity) << 1 | (location.isPatch ? 1 : 0)
            )
            previousKey = key
            previousOffset = location.offset
        }
    }

    /// Decodes an index file's bytes, of either version a writer writes (3, or the dense
    /// version 5 or 4 of ``DenseIndexFile``); nil if they are not a valid index.
    package static func decode(_ bytes: [UInt8]) -> StoreIndex? {
        if bytes.count >= 10,
            [4, DenseIndexFile.version].contains(
                bytes.withUnsafeBytes { UInt16(littleEndianBytesOf: $0, at: 8) }
            )
        {
            return DenseIndexFile.decode(bytes)
        }
        var entries: [(key: ObjectKey, location: RecordLocation)] = []
        guard var index = decode(bytes, visit: { entries.append(($0, $1.location!)) }) else {
            return nil
        }
        index.entries = entries
        return index
    }

    /// Decodes an index file's bytes, handing each entry to `visit` in ascending key order
    /// instead of keeping them; nil if they are not a valid index.
    ///
    /// The checksum is checked before any entry is visited. Keys are checked to be strictly
    /// ascending and every record to lie within the covered length, so a visitor may insert
    /// keys without looking for an existing entry; but `visit` may have been called for a
    /// prefix of the entries when nil is returned for a malformed entry list. Each location is
    /// handed over packed (16 bytes, the length with its patch bit), as the key directory
    /// keeps it: through `RecordLocation`, every entry's patch bit would be split off here only
    /// to be put back there.
    package static func decode(
        _ bytes: [UInt8],
        visit: (ObjectKey, PackedLocation) -> Void
    ) -> StoreIndex? {
        guard bytes.count >= fixedLength + 4 else { return nil }
        return bytes.withUnsafeBytes { buffer -> StoreIndex? in
            // Reserved fields must be zero (FORMAT.md, section 7): an index with them set is
            // not one this reader understands, so it is ignored.
            let fileVersion = UInt16(littleEndianBytesOf: buffer, at: 8)
            guard buffer[0..<8].elementsEqual(magic), fileVersion == 2 || fileVersion == 3,
                UInt32(littleEndianBytesOf: buffer, at: 12) == 0,
                UInt32(littleEndianBytesOf: buffer, at: 52) == 0
            else { return nil }
            let count = UInt64(littleEndianBytesOf: buffer, at: 56)
            // The count must agree with the bytes present before anything is allocated for it.
            guard count <= UInt64((bytes.count - fixedLength - 4) / minimumEntryLength) else {
                return nil
            }
            let end = bytes.count - 4
            let stored = UInt32(littleEndianBytesOf: buffer, at: end)
            let computed = CRC32.checksum(UnsafeRawBufferPointer(rebasing: buffer[0..<end]))
            guard checksumsMatch(stored, computed) else {
                return nil
            }
            let coveredLength = UInt64(littleEndianBytesOf: buffer, at: 40)
            let entries = UnsafeRawBufferPointer(rebasing: buffer[0..<end])
            // Version 3 keeps a patch bit below the entity tag.
            let tagShift: UInt64 = fileVersion >= 3 ? 1 : 0
            var position = fixedLength
            var key: ObjectKey = 0
            var offset: UInt64 = 0
            @inline(__always) func next(_ maximumLength: Int) -> UInt64? {
                guard
                    case .value(let value, let length) = decodeVarint(
                        entries,
                        at: position,
                        maximumLength: maximumLength
                    )
                else { return nil }
                position += length
                return value
            }
            for _ in 0..<Int(count) {
                let keyDelta: UInt64
                let offsetCode: UInt64
                let length: UInt64
                let entity: UInt64
                // Most entries are four one-byte varints (consecutive keys, records of under
                // 128 bytes one after the other, few entities): read them as one word.
                let word =
                    end - position >= 4
                    ? UInt32(
                        littleEndian: entries.loadUnaligned(
                            fromByteOffset: position,
                            as: UInt32.self
                        )
                    )
                    : 0x8080_8080
                if word & 0x8080_8080 == 0 {
                    keyDelta = UInt64(word & 0xFF)
                    offsetCode = UInt64(word >> 8 & 0xFF)
                    length = UInt64(word >> 16 & 0xFF)
                    entity = UInt64(word >> 24)
                    position += 4
                } else {
                    guard let first = next(10), let second = next(10), let third = next(5),
                        let fourth = next(5)
                    else { return nil }
                    (keyDelta, offsetCode, length, entity) = (first, second, third, fourth)
                }
                let tag = entity >> tagShift
                guard keyDelta > 0, length > 0, length < UInt64(RecordLocation.patchBit),
                    tag <= UInt64(UInt32.max)
                else { return nil }
                let (nextKey, keyOverflow) = key.addingReportingOverflow(keyDelta)
                let delta = Int64(bitPattern: offsetCode >> 1) ^ -Int64(bitPattern: offsetCode & 1)
                offset = offset &+ UInt64(bitPattern: delta)
                guard !keyOverflow, nextKey <= LogFormat.maximumCounter, offset < coveredLength,
                    length <= coveredLength - offset
                else {
                    return nil
                }
                key = nextKey
                var location = PackedLocation()
                location.offset = offset
                location.length =
                    UInt32(length) | (entity & tagShift != 0 ? RecordLocation.patchBit : 0)
                location.entity = EntityTag(tag)
                visit(key, location)
            }
            guard position == end,
                UInt64(littleEndianBytesOf: buffer, at: 64) <= LogFormat.maximumCounter,
                UInt64(littleEndianBytesOf: buffer, at: 72) <= LogFormat.maximumCounter
            else { return nil }
            return StoreIndex(
                storeUUID: uuidFrom(UnsafeRawBufferPointer(rebasing: buffer[16..<32])),
                generation: UInt64(littleEndianBytesOf: buffer, at: 32),
                coveredLength: coveredLength,
                lastCommitChecksum: UInt32(littleEndianBytesOf: buffer, at: 48),
                lastNumber: UInt64(littleEndianBytesOf: buffer, at: 64),
                nextKey: UInt64(littleEndianBytesOf: buffer, at: 72),
                metadataOffset: UInt64(littleEndianBytesOf: buffer, at: 80),
                liveBytes: UInt64(littleEndianBytesOf: buffer, at: 88),
                entries: []
            )
        }
    }
}
