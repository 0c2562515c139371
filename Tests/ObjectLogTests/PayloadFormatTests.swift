import Foundation
import ObjectLogStore
import Testing

@testable import ObjectLog

final class DocConfiguration: ManagedObject {
    @Attribute var name = ""
}

final class DocSnapshot: ManagedObject {
    @Attribute var step = 0
    @Attribute(.externalStorage) var state = Data()
    @Relationship var configuration: DocConfiguration?
}

final class AllScalars: ManagedObject {
    @Attribute var int = 0
    @Attribute var int64: Int64 = 0
    @Attribute var double = 0.0
    @Attribute var string = ""
    @Attribute var date = Date(timeIntervalSinceReferenceDate: 0)
    @Attribute var bool = false
    @Attribute var second = ""
}

@Suite("Payload format as documented in FORMAT.md, section 10")
struct PayloadFormatTests {
    @Test("the documented example encodes to the documented bytes")
    func documentedExample() throws {
        let container = try makeLogInMemoryContainer(for: [
            DocConfiguration.self, DocSnapshot.self,
        ])
        let context = container.newContext()
        let configuration = DocConfiguration(context: context)
        // Key 1 holds the store's first model version (its schema record).
        #expect(configuration.objectID.key == 2)
        let snapshot = DocSnapshot(context: context)
        snapshot.step = 12
        snapshot.state = Data([0xAA, 0xBB, 0xCC])
        snapshot.configuration = configuration
        try context.save()
        let store = container.coordinator.logStore!
        let record = try #require(try store.readObject(snapshot.objectID.key))
        #expect(record.payload == [0x03, 0x18, 0x00, 0x03, 0xAA, 0xBB, 0xCC, 0x02])

        // The documented patch: a batch update that sets the step to 13.
        #expect(PartialValue.encode([0: [0x1A]]) == [0x01, 0x00, 0x1A])
        _ = try context.execute(
            BatchUpdateRequest<DocSnapshot>(predicate: nil, updates: [.set(\.step, to: 13)])
        )
        #expect(store.location(of: snapshot.objectID.key)?.isPatch == true)
        let patched = try #require(try store.readObject(snapshot.objectID.key))
        #expect(patched.payload == [0x03, 0x1A, 0x00, 0x03, 0xAA, 0xBB, 0xCC, 0x02])
    }

    @Test("varints, zigzag and fixed-width values use the documented bytes")
    func primitives() throws {
        var writer = PayloadWriter()
        writer.write(varint: 300)
        writer.write(zigzag: -2)
        writer.write(zigzag: Int64.min)
        Float(1).encode(to: &writer)
        Optional<Int>.none.encode(to: &writer)
        Optional(-1).encode(to: &writer)
        #expect(
            writer.bytes == [
                0xAC, 0x02, 0x03, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01,
                0x00, 0x00, 0x80, 0x3F, 0x00, 0x01, 0x01,
            ]
        )
        let decoded = writer.bytes.withUnsafeBytes { buffer in
            Result { () throws(PayloadError) -> [String] in
                var reader = PayloadReader(buffer)
                var values: [String] = []
                values.append("\(try reader.readVarint())")
                values.append("\(try reader.readZigzag())")
                values.append("\(try reader.readZigzag())")
                values.append("\(try Float.decode(from: &reader))")
                values.append("\(try Int?.decode(from: &reader) as Any)")
                values.append("\(try Int?.decode(from: &reader) as Any)")
                values.append("\(reader.isAtEnd)")
                do {
                    _ = try reader.readByte()
                } catch {
                    values.append("\(error)")
                }
                return values
            }
        }
        #expect(
            try decoded.get() == [
                "300", "-2", "\(Int64.min)", "1.0", "nil", "Optional(-1)", "true",
                "payload truncated at byte 20",
            ]
        )
    }

    @Test("varints read and skip the same with and without room for the longest one after them")
    func varintsNearTheEnd() throws {
        var values: [UInt64] = [0, 127, 128, 300, UInt64.max, UInt64.max >> 1]
        for bits in 1...64 { values.append(UInt64.max >> (64 - bits)) }
        // Every 7-bit group set to a different pattern, so that a group moved to the wrong
        // place shows.
        for bytes in 1...10 { values.append(0x0123_4567_89AB_CDEF >> (64 - min(64, 7 * bytes))) }
        for value in values {
            var writer = PayloadWriter()
            writer.write(varint: value)
            let encoded = writer.bytes
            // Alone (the byte-by-byte path), then followed by bytes with their high bits set
            // (which must not count): enough for the eight-byte look at short varints, and
            // for the unrolled path at long ones.
            for padding in [0, 1, 3, 7, 12] {
                let bytes = encoded + [UInt8](repeating: 0xFF, count: padding)
                let read = bytes.withUnsafeBytes { buffer in
                    Result { () throws(PayloadError) -> (UInt64, Int, Int) in
                        var reader = PayloadReader(buffer)
                        let value = try reader.readVarint()
                        var skipper = PayloadReader(buffer)
                        try skipper.skipVarint()
                        return (value, reader.offset, skipper.offset)
                    }
                }
                let (decoded, offset, skipped) = try read.get()
                #expect(decoded == value && offset == encoded.count, "\(value) + \(padding)")
                #expect(skipped == encoded.count, "skip \(value) + \(padding)")
            }
        }
        // Too long, and cut short: the same errors whatever follows.
        let overlong = [UInt8](repeating: 0x80, count: 10) + [0x01]
        let cases: [([UInt8], PayloadError)] = [
            (overlong, .malformed(offset: 11, "varint too long")),
            (overlong + [0, 0, 0], .malformed(offset: 11, "varint too long")),
            ([UInt8](repeating: 0x80, count: 10), .truncated(offset: 10)),
            ([0x80, 0x80], .truncated(offset: 2)),
        ]
        for (bytes, expected) in cases {
            let read = bytes.withUnsafeBytes { buffer in
                Result { () throws(PayloadError) -> UInt64 in
                    var reader = PayloadReader(buffer)
                    return try reader.readVarint()
                }
            }
            #expect(throws: expected) { try read.get() }
            let skip = bytes.withUnsafeBytes { buffer in
                Result { () throws(PayloadError) in
                    var reader = PayloadReader(buffer)
                    try reader.skipVarint()
                }
            }
            #expect(throws: expected) { try skip.get() }
        }
    }

    @Test("the scalar layout's one-pass encoding writes each type's own bytes")
    func scalarLayoutMatchesValueEncodings() throws {
        let model = try ManagedObjectModel([AllScalars.self])
        let entity = try #require(model.entity(for: AllScalars.self))
        let layout = try #require(entity.scalarLayout)
        let strings = [
            "", "a", "fifteen bytes!!", "sixteen bytes!!!", "é→ñ",
            String(repeating: "x", count: 127),
            String(repeating: "y", count: 128), String(repeating: "é", count: 9000),
        ]
        let numbers: [Int] = [0, 1, -1, 63, -64, 64, Int.max, Int.min, 1 << 40]
        let doubles: [Double] = [0, -0.0, .nan, .infinity, 1.5e-300, 999.999]
        for (index, text) in strings.enumerated() {
            let object = AllScalars()
            object.int = numbers[index % numbers.count]
            object.int64 = Int64(numbers[(index + 3) % numbers.count])
            object.double = doubles[index % doubles.count]
            object.string = text
            object.date = Date(timeIntervalSinceReferenceDate: doubles[(index + 1) % doubles.count])
            object.bool = index % 2 == 1
            object.second = strings[strings.count - 1 - index]
            var expected = PayloadWriter()
            expected.write(varint: UInt64(entity.accessors.count))
            var sink = BlobSink(store: nil)
            for accessor in entity.accessors {
                try accessor.encode(object, to: &expected, blobs: &sink)
            }
            // After some bytes already in the writer, as in a save that reuses it.
            var writer = PayloadWriter()
            writer.write(byte: 0xEE)
            layout.encode(object, to: &writer)
            #expect(writer.bytes == [0xEE] + expected.bytes, "case \(index)")
        }
    }

    @Test("the model hash is FNV-1a over the stored schema JSON without defaults")
    func hashDefinition() throws {
        let model = try ManagedObjectModel([DocConfiguration.self, DocSnapshot.self])
        // The JSON with every "defaultValue" member taken out, as FORMAT.md defines the hash.
        let json = try #require(
            try JSONSerialization.jsonObject(with: model.schema.canonicalJSON()) as? [String: Any]
        )
        var stripped = json
        stripped["entities"] = (json["entities"] as? [[String: Any]])?.map { entity in
            var entity = entity
            entity["properties"] = (entity["properties"] as? [[String: Any]])?.map {
                $0.filter { $0.key != "defaultValue" }
            }
            return entity
        }
        let canonical = try JSONSerialization.data(
            withJSONObject: stripped,
            options: [.sortedKeys, .withoutEscapingSlashes]
        )
        #expect(!canonical.isEmpty)
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in canonical { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        #expect(model.versionHash == String(format: "%016llx", hash))
        let container = try makeLogInMemoryContainer(for: [
            DocConfiguration.self, DocSnapshot.self,
        ])
        #expect(container.metadata[PersistentStoreCoordinator.modelKey] == nil)
        #expect(
            container.metadata[PersistentStoreCoordinator.modelHashKey]
                == .string(model.versionHash)
        )
        let history = try #require(try ModelHistory.read(from: container.coordinator.logStore!))
        #expect(history.versions.map(\.schema) == [model.schema])
    }
}
