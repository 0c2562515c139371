import Foundation

/// Where a live object's latest put record is.
public struct RecordLocation: Sendable, Equatable {
    /// The object's entity tag.
    public var entity: EntityTag
    /// Offset of the put record's frame in the store file.
    public var offset: UInt64
    /// Length of the whole put record: its frame and payload.
    public var length: UInt32

    /// Creates a location.
    public init(entity: EntityTag, offset: UInt64, length: UInt32) {
        self.entity = entity
        self.offset = offset
        self.length = length
    }
}

/// The index checkpoint file (`NAME.olog-index`): every live key's location as of a commit,
/// so opening need not replay the log (FORMAT.md, "Index file").
///
/// The index is a hint: when it is missing, damaged, from another store or generation, or does
/// not match the log, it is ignored and the log is replayed.
package struct StoreIndex {
    package static let magic: [UInt8] = Array("OLINDEX\n".utf8)
    package static let fixedLength = 96
    package static let entryLength = 24
    /// The index file's own version: 2 since entries hold whole record lengths (version 1
    /// indexes held payload lengths and are ignored).
    package static let version: UInt16 = 2

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
    package var entries: [(key: ObjectKey, location: RecordLocation)]

    package func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: Self.fixedLength + entries.count * Self.entryLength + 4)
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
        for (key, location) in entries {
            writer.append(key)
            writer.append(location.offset)
            writer.append(location.length)
            writer.append(location.entity)
        }
        writer.append(CRC32.checksum(writer.bytes))
        return writer.bytes
    }

    /// Decodes an index file's bytes; nil if they are not a valid index.
    package static func decode(_ bytes: [UInt8]) -> StoreIndex? {
        var entries: [(key: ObjectKey, location: RecordLocation)] = []
        guard var index = decode(bytes, visit: { entries.append(($0, $1)) }) else { return nil }
        index.entries = entries
        return index
    }

    /// Decodes an index file's bytes, handing each entry to `visit` instead of keeping them;
    /// nil if they are not a valid index (in which case `visit` has not been called).
    package static func decode(
        _ bytes: [UInt8],
        visit: (ObjectKey, RecordLocation) -> Void
    ) -> StoreIndex? {
        guard bytes.count >= fixedLength + 4 else { return nil }
        return bytes.withUnsafeBytes { buffer -> StoreIndex? in
            guard buffer[0..<8].elementsEqual(magic),
                UInt16(littleEndianBytesOf: buffer, at: 8) == version
            else { return nil }
            let count = UInt64(littleEndianBytesOf: buffer, at: 56)
            // The count must agree with the bytes present before anything is allocated for it.
            guard count <= UInt64(bytes.count / entryLength),
                bytes.count == fixedLength + Int(count) * entryLength + 4
            else { return nil }
            let stored = UInt32(littleEndianBytesOf: buffer, at: bytes.count - 4)
            let computed = CRC32.checksum(
                UnsafeRawBufferPointer(rebasing: buffer[0..<(bytes.count - 4)])
            )
            guard checksumsMatch(stored, computed) else {
                return nil
            }
            var position = fixedLength
            for _ in 0..<Int(count) {
                visit(
                    UInt64(littleEndianBytesOf: buffer, at: position),
                    RecordLocation(
                        entity: UInt32(littleEndianBytesOf: buffer, at: position + 20),
                        offset: UInt64(littleEndianBytesOf: buffer, at: position + 8),
                        length: UInt32(littleEndianBytesOf: buffer, at: position + 16)
                    )
                )
                position += entryLength
            }
            return StoreIndex(
                storeUUID: uuidFrom(UnsafeRawBufferPointer(rebasing: buffer[16..<32])),
                generation: UInt64(littleEndianBytesOf: buffer, at: 32),
                coveredLength: UInt64(littleEndianBytesOf: buffer, at: 40),
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
