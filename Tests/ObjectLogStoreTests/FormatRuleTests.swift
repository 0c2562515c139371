import Foundation
import Testing

@testable import ObjectLogStore

private let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("Fixtures")

/// The rules FORMAT.md states about varints, flags, unused fields, strings and nesting, checked
/// on stores whose bytes are edited (and their checksums recomputed, so only the rule is broken).
@Suite("Format rules: varints, flags, unused fields, strings, nesting")
struct FormatRuleTests {
    /// A store in memory whose file holds `bytes`.
    private static func store(_ bytes: [UInt8]) throws -> (MemoryFileSystem, String) {
        let fileSystem = MemoryFileSystem()
        let file = try fileSystem.open("/s.olog", mode: .create(permissions: 0o600))
        try file.write(bytes, at: 0)
        file.close()
        return (fileSystem, "/s.olog")
    }

    /// Recomputes the CRC of the record of `length` bytes at `offset`.
    private static func reseal(_ bytes: inout [UInt8], at offset: Int, length: Int) {
        let crc = bytes.withUnsafeBytes {
            RecordFrame.checksum(
                of: UnsafeRawBufferPointer(rebasing: $0[offset..<(offset + length)])
            )
        }
        withUnsafeBytes(of: crc.littleEndian) {
            bytes.replaceSubrange(offset..<(offset + 4), with: $0)
        }
    }

    private static func fixture(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: fixtures.appendingPathComponent(name)))
    }

    @Test("an unknown flag bit in a put or a commit is damage, even under a valid checksum")
    func unknownFlagBits() throws {
        // v2.0.olog: the first put (11 + 5 bytes) at 512; transaction 1's commit (70) at 954.
        for (offset, length, bit) in [(512, 14, UInt8(0x04)), (0x3BA, 70, UInt8(0x02))] {
            var bytes = try Self.fixture("v2.0.olog")
            bytes[offset + 5] |= bit
            Self.reseal(&bytes, at: offset, length: length)
            let (fileSystem, path) = try Self.store(bytes)
            let inspection = try StoreInspection(path: path, fileSystem: fileSystem)
            #expect(inspection.damage?.offset == UInt64(offset))
            #expect(inspection.damage?.reason.hasPrefix("unknown flag bits") == true)
            #expect(inspection.damage?.kind == .corrupt)
        }
    }

    @Test("a version 1 metadata record with a nonzero entity is damage")
    func versionOneUnusedFields() throws {
        var bytes = try Self.fixture("v1.0.olog")
        // The metadata record at 0x23B: 24-byte frame, 23-byte payload; its entity at +12.
        bytes[0x23B + 12] = 1
        Self.reseal(&bytes, at: 0x23B, length: 47)
        let (fileSystem, path) = try Self.store(bytes)
        let inspection = try StoreInspection(path: path, fileSystem: fileSystem)
        #expect(inspection.damage?.offset == 0x23B)
        #expect(inspection.damage?.reason == "nonzero entity or key in a metadata record")
    }

    @Test("a non-minimal varint within its width is read; one over its width is damage")
    func varintLengths() throws {
        // A one-transaction store, so growing its first record moves no later commit.
        let fileSystem = MemoryFileSystem()
        let store = try LogStore.open(
            path: "/s.olog",
            options: StoreOptions(fileSystem: fileSystem)
        )
        var transaction = Transaction()
        transaction.put(
            key: store.allocateKeys(1).lowerBound,
            entity: 1,
            payload: [7, 8],
            isInsert: true
        )
        try store.commit(transaction)
        try store.close()
        try fileSystem.remove("/s.olog-index")
        let original = try fileSystem.open("/s.olog", mode: .read).read(at: 0, count: 4096)
        // The put at 512: CRC, type, flags, entity 01, key 01, length 02, payload 07 08.
        #expect(Array(original[516..<523]) == [1, 1, 1, 1, 2, 7, 8])
        for (entity, readable) in [
            ([0x81, 0x00] as [UInt8], true), ([0x81, 0x80, 0x80, 0x80, 0x80, 0x00], false),
        ] {
            var bytes = original
            bytes.replaceSubrange(518..<519, with: entity)
            // The record is now longer; the commit's first-record offset and count still hold.
            Self.reseal(&bytes, at: 512, length: 11 + entity.count - 1)
            let (copy, path) = try Self.store(bytes)
            let inspection = try StoreInspection(path: path, fileSystem: copy)
            if readable {
                #expect(inspection.isClean, "\(inspection.problems)")
                let reopened = try LogStore.open(
                    path: path,
                    options: StoreOptions(fileSystem: copy)
                )
                #expect(try reopened.readObject(1)?.payload == [7, 8])
                #expect(reopened.location(of: 1)?.entity == 1)
            } else {
                #expect(inspection.damage?.reason == "malformed entity in a record frame")
            }
        }
    }

    @Test("an index with a nonzero reserved field is ignored and the log replayed")
    func indexReservedFields() throws {
        let fileSystem = MemoryFileSystem()
        let store = try LogStore.open(
            path: "/s.olog",
            options: StoreOptions(fileSystem: fileSystem)
        )
        var transaction = Transaction()
        transaction.put(
            key: store.allocateKeys(1).lowerBound,
            entity: 1,
            payload: [1],
            isInsert: true
        )
        try store.commit(transaction)
        try store.close()
        for field in [12, 52] {
            let file = try fileSystem.open("/s.olog-index", mode: .readWrite)
            var edited = try file.read(at: 0, count: 4096)
            edited[field] = 1
            let end = edited.count - 4
            let crc = edited.withUnsafeBytes {
                CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<end]))
            }
            withUnsafeBytes(of: crc.littleEndian) {
                edited.replaceSubrange(end..<(end + 4), with: $0)
            }
            try file.write(edited, at: 0)
            file.close()
            #expect(StoreIndex.decode(edited) == nil)
            let reopened = try LogStore.open(
                path: "/s.olog",
                options: StoreOptions(fileSystem: fileSystem)
            )
            #expect(reopened.indexState == .rebuilt, "field \(field)")
            #expect(try reopened.readObject(1)?.payload == [1])
            // Closing writes a valid index again.
            try reopened.close()
        }
    }

    @Test(
        "metadata: invalid UTF-8 is damage, and the top-level dictionary counts toward the 64 levels"
    )
    func metadataStringsAndNesting() throws {
        // {"k": "\u{FF}"}: tag 8, count 1, key "k", string of the one byte FF.
        let invalid: [UInt8] = [8, 1, 0, 0, 0, 1, 0, 0, 0, 0x6B, 1, 1, 0, 0, 0, 0xFF]
        #expect(throws: MetadataCoding.DecodingError.self) {
            try MetadataCoding.decodeDictionary(invalid)
        }
        func nested(_ depth: Int) -> Metadata {
            var value = MetadataValue.dictionary([:])
            for _ in 0..<(depth - 2) { value = .dictionary(["d": value]) }
            return ["d": value]
        }
        // 64 levels in all, the top-level dictionary included, decode; 65 do not.
        #expect(
            try MetadataCoding.decodeDictionary(MetadataCoding.encode(nested(64))) == nested(64)
        )
        #expect(throws: MetadataCoding.DecodingError.self) {
            try MetadataCoding.decodeDictionary(MetadataCoding.encode(nested(65)))
        }
    }
}
