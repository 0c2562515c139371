import Foundation

/// Constants and fixed layouts of the store file format, version 3.0 (FORMAT.md); version 1.0
/// and 2.0 files are read and written too.
package enum LogFormat {
    /// The first eight bytes of every store file: `OBJLOG\r\n`.
    package static let magic: [UInt8] = [0x4F, 0x42, 0x4A, 0x4C, 0x4F, 0x47, 0x0D, 0x0A]
    /// The format major version this code creates; files with a higher major are refused, files
    /// of major 1 are read and appended to in their own layout (see ``RecordLayout``), and files
    /// of major 2 without patch records.
    package static let majorVersion: UInt16 = 3
    /// The first major version whose files may hold patch records.
    package static let firstMajorVersionWithPatches: UInt16 = 3
    /// The format minor version this code writes; higher minors of the same major are readable.
    package static let minorVersion: UInt16 = 0
    /// Bytes of the header before the metadata dictionary.
    package static let headerFixedLength = 60
    /// The largest metadata dictionary encoding accepted (16 MiB).
    package static let maximumMetadataLength = 16 << 20
    /// The largest generation, next key or transaction number a valid store holds (2^62).
    ///
    /// Counters grow by one per compaction, object or save, so no real store comes near it; a
    /// larger value is damage, and refusing it means no counter can overflow when incremented.
    package static let maximumCounter: UInt64 = 1 << 62
    /// The largest record payload accepted (64 MiB); larger values belong in external blobs.
    package static let maximumPayloadLength = 64 << 20
    /// Bytes of a commit record's payload.
    package static let commitPayloadLength = 56
    /// The last eight bytes of every commit record: `OLCOMMIT`, so the last commit can be found
    /// by scanning backwards from the end of the file.
    package static let commitTrailer: [UInt8] = Array("OLCOMMIT".utf8)
    /// Bytes of a blob identifier (a SHA-256 digest).
    package static let blobIDLength = 32
    /// The sector size writes are aligned to.
    ///
    /// Every transaction (and the header) ends on a multiple of it, so appending never rewrites a sector that holds committed data: a power
    /// cut that garbles the sectors of an unfinished write cannot damage earlier transactions.
    package static let sectorSize = 512

    /// Suffix of the lock file beside a store.
    package static let lockSuffix = "-lock"
    /// Suffix of the index checkpoint file beside a store.
    package static let indexSuffix = "-index"
    /// Suffix of the external blob directory beside a store.
    package static let blobsSuffix = "-blobs"
    /// Suffix of a compaction's output before it is renamed over the store.
    package static let compactionSuffix = "-compact"
    /// Suffix of a new store's file before it is renamed into place.
    package static let creationSuffix = "-new"
}

/// The kinds of record in the log.
package enum RecordType: UInt8, Sendable {
    /// The full new value of an object (key = object key, entity = its entity tag).
    case put = 1
    /// The removal of an object.
    case delete = 2
    /// A full replacement of the metadata dictionary.
    case metadata = 3
    /// The end of a transaction; nothing before it since the previous commit counts without it.
    case commit = 4
    /// Filler that makes a transaction end on a sector boundary; its payload means nothing.
    case padding = 5
    /// New values of some of an object's properties, applied to the put the frame names (its
    /// base); format 3 only.
    case patch = 6
}

/// The payload of a commit record.
package struct CommitPayload: Sendable, Equatable {
    /// When the transaction was committed, in microseconds since 1970-01-01 UTC.
    package var timestampMicroseconds: Int64
    /// Offset of the transaction's first record (the commit's own offset for an empty one).
    package var firstRecordOffset: UInt64
    /// How many records precede the commit in this transaction.
    package var recordCount: UInt32
    package var inserted: UInt32
    package var updated: UInt32
    package var deleted: UInt32
    /// Offset of the latest metadata record in this file as of this commit; 0 when the header's
    /// dictionary is still the latest.
    package var metadataOffset: UInt64
    /// The first key never handed out, as of this commit.
    package var nextKey: UInt64

    package func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: LogFormat.commitPayloadLength)
        writer.append(timestampMicroseconds)
        writer.append(firstRecordOffset)
        writer.append(recordCount)
        writer.append(inserted)
        writer.append(updated)
        writer.append(deleted)
        writer.append(metadataOffset)
        writer.append(nextKey)
        writer.append(contentsOf: LogFormat.commitTrailer)
        return writer.bytes
    }

    /// Decodes a commit payload; nil unless it is exactly the right length with the trailer.
    package init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count == LogFormat.commitPayloadLength,
            bytes[48..<56].elementsEqual(LogFormat.commitTrailer)
        else { return nil }
        timestampMicroseconds = Int64(bitPattern: UInt64(littleEndianBytesOf: bytes, at: 0))
        firstRecordOffset = UInt64(littleEndianBytesOf: bytes, at: 8)
        recordCount = UInt32(littleEndianBytesOf: bytes, at: 16)
        inserted = UInt32(littleEndianBytesOf: bytes, at: 20)
        updated = UInt32(littleEndianBytesOf: bytes, at: 24)
        deleted = UInt32(littleEndianBytesOf: bytes, at: 28)
        metadataOffset = UInt64(littleEndianBytesOf: bytes, at: 32)
        nextKey = UInt64(littleEndianBytesOf: bytes, at: 40)
    }

    package init(
        timestampMicroseconds: Int64,
        firstRecordOffset: UInt64,
        recordCount: UInt32,
        inserted: UInt32,
        updated: UInt32,
        deleted: UInt32,
        metadataOffset: UInt64,
        nextKey: UInt64
    ) {
        self.timestampMicroseconds = timestampMicroseconds
        self.firstRecordOffset = firstRecordOffset
        self.recordCount = recordCount
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.metadataOffset = metadataOffset
        self.nextKey = nextKey
    }

    package var date: Date {
        Date(timeIntervalSince1970: Double(timestampMicroseconds) / 1_000_000)
    }

    package static func now() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1_000_000).rounded())
    }
}

// MARK: - Header

/// The store file's header: identity, generation and the metadata dictionary as of the file's
/// creation or last compaction.
package struct StoreHeader: Sendable, Equatable {
    package var majorVersion: UInt16 = LogFormat.majorVersion
    package var minorVersion: UInt16 = LogFormat.minorVersion
    package var storeUUID: UUID
    /// Incremented by every compaction.
    package var generation: UInt64
    /// The first key never handed out when the file was written.
    package var nextKey: UInt64
    /// Transactions committed in earlier generations (folded away by compaction).
    package var baseTransactionCount: UInt64
    package var metadata: Metadata
    /// Total header bytes; records start here.
    package var length: Int = 0

    /// How the file's records are framed (the header's major version is checked when read).
    package var layout: RecordLayout { RecordLayout(majorVersion: majorVersion) ?? .compact }

    /// Whether the file may hold patch records: a reader of an older major would take them for
    /// damage, so they are written only into files whose header says so.
    package var allowsPatches: Bool { majorVersion >= LogFormat.firstMajorVersionWithPatches }

    package init(
        storeUUID: UUID,
        generation: UInt64,
        nextKey: UInt64,
        baseTransactionCount: UInt64,
        metadata: Metadata
    ) {
        self.storeUUID = storeUUID
        self.generation = generation
        self.nextKey = nextKey
        self.baseTransactionCount = baseTransactionCount
        self.metadata = metadata
    }

    /// The header's bytes; also sets `length`.
    package mutating func encoded() -> [UInt8] {
        let metadataBytes = MetadataCoding.encode(metadata)
        var writer = ByteWriter(capacity: LogFormat.headerFixedLength + metadataBytes.count + 4)
        writer.append(contentsOf: LogFormat.magic)
        writer.append(majorVersion)
        writer.append(minorVersion)
        // Zero padding between the metadata and the CRC fills the header to a sector boundary,
        // so the first transaction never shares the header's sector.
        let unpadded = LogFormat.headerFixedLength + metadataBytes.count + 4
        let padded =
            (unpadded + LogFormat.sectorSize - 1) / LogFormat.sectorSize * LogFormat.sectorSize
        writer.append(UInt32(padded))
        writer.append(contentsOf: uuidBytes(storeUUID))
        writer.append(generation)
        writer.append(nextKey)
        writer.append(baseTransactionCount)
        writer.append(UInt32(metadataBytes.count))
        writer.append(contentsOf: metadataBytes)
        writer.append(contentsOf: repeatElement(0, count: padded - 4 - writer.count))
        writer.append(CRC32.checksum(writer.bytes))
        length = writer.count
        return writer.bytes
    }

    /// Reads and validates the header at the start of `file`.
    package static func read(
        from file: any StoreFile,
        path: String,
        fileSize: UInt64
    ) throws -> StoreHeader {
        guard fileSize > 0 else {
            throw StoreError(.notAStore, "is empty, not an ObjectLog store", path: path)
        }
        let fixed = try file.read(at: 0, count: LogFormat.headerFixedLength)
        guard fixed.count >= LogFormat.magic.count, Array(fixed[0..<8]) == LogFormat.magic else {
            throw StoreError(
                .notAStore,
                "not an ObjectLog store (no OBJLOG magic at offset 0)",
                path: path,
                offset: 0
            )
        }
        guard fixed.count == LogFormat.headerFixedLength else {
            throw StoreError(
                .corrupt,
                "the header is cut short",
                path: path,
                offset: UInt64(fixed.count)
            )
        }
        return try fixed.withUnsafeBytes { buffer in
            let major = UInt16(littleEndianBytesOf: buffer, at: 8)
            let minor = UInt16(littleEndianBytesOf: buffer, at: 10)
            guard major >= 1, major <= LogFormat.majorVersion else {
                throw StoreError(
                    .unsupportedVersion,
                    "format version \(major).\(minor) is newer than this library reads (\(LogFormat.majorVersion).x)",
                    path: path,
                    offset: 8
                )
            }
            let length = Int(UInt32(littleEndianBytesOf: buffer, at: 12))
            let metadataLength = Int(UInt32(littleEndianBytesOf: buffer, at: 56))
            guard metadataLength <= LogFormat.maximumMetadataLength,
                length >= LogFormat.headerFixedLength + metadataLength + 4,
                length <= LogFormat.headerFixedLength + metadataLength + 4 + LogFormat.sectorSize
            else {
                throw StoreError(
                    .corrupt,
                    "header length fields are inconsistent",
                    path: path,
                    offset: 12
                )
            }
            guard UInt64(length) <= fileSize else {
                throw StoreError(
                    .corrupt,
                    "the header runs past the end of the file",
                    path: path,
                    offset: 12
                )
            }
            for (offset, name) in [(32, "generation"), (40, "next key"), (48, "transaction count")]
            where UInt64(littleEndianBytesOf: buffer, at: offset) > LogFormat.maximumCounter {
                throw StoreError(
                    .corrupt,
                    "the header's \(name) is out of range",
                    path: path,
                    offset: UInt64(offset)
                )
            }
            let restLength = length - LogFormat.headerFixedLength
            let rest = try file.read(
                at: UInt64(LogFormat.headerFixedLength),
                count: restLength
            )
            guard rest.count == restLength else {
                throw StoreError(
                    .corrupt,
                    "the header is cut short",
                    path: path,
                    offset: UInt64(LogFormat.headerFixedLength)
                )
            }
            var crc = CRC32.checksum(buffer)
            crc = rest.withUnsafeBytes {
                CRC32.checksum(
                    UnsafeRawBufferPointer(rebasing: $0[0..<(restLength - 4)]),
                    continuing: crc
                )
            }
            let stored = rest.withUnsafeBytes {
                UInt32(littleEndianBytesOf: $0, at: restLength - 4)
            }
            guard checksumsMatch(stored, crc) else {
                throw StoreError(
                    .corrupt,
                    "header checksum mismatch (stored \(hex32(stored)), computed \(hex32(crc)))",
                    path: path,
                    offset: UInt64(length - 4)
                )
            }
            let metadata: Metadata
            do {
                metadata = try MetadataCoding.decodeDictionary(Array(rest[0..<metadataLength]))
            } catch let error as MetadataCoding.DecodingError {
                throw StoreError(
                    .corrupt,
                    "header metadata: \(error.reason)",
                    path: path,
                    offset: UInt64(LogFormat.headerFixedLength + error.position)
                )
            }
            var header = StoreHeader(
                storeUUID: uuidFrom(UnsafeRawBufferPointer(rebasing: buffer[16..<32])),
                generation: UInt64(littleEndianBytesOf: buffer, at: 32),
                nextKey: UInt64(littleEndianBytesOf: buffer, at: 40),
                baseTransactionCount: UInt64(littleEndianBytesOf: buffer, at: 48),
                metadata: metadata
            )
            header.majorVersion = major
            header.minorVersion = minor
            header.length = length
            return header
        }
    }
}

package func uuidBytes(_ uuid: UUID) -> [UInt8] {
    withUnsafeBytes(of: uuid.uuid) { Array($0) }
}

package func uuidFrom(_ bytes: UnsafeRawBufferPointer) -> UUID {
    var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    withUnsafeMutableBytes(of: &value) { $0.copyMemory(from: bytes) }
    return UUID(uuid: value)
}

package func hex32(_ value: UInt32) -> String {
    let digits = String(value, radix: 16)
    return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
}
