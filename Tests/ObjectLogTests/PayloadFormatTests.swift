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

@Suite("Payload format as documented in FORMAT.md, section 10")
struct PayloadFormatTests {
    @Test("the documented example encodes to the documented bytes")
    func documentedExample() throws {
        let container = try PersistentContainer.inMemory(for: [
            DocConfiguration.self, DocSnapshot.self,
        ])
        let context = container.newContext()
        let configuration = DocConfiguration(context: context)
        #expect(configuration.objectID.key == 1)
        let snapshot = DocSnapshot(context: context)
        snapshot.step = 12
        snapshot.state = Data([0xAA, 0xBB, 0xCC])
        snapshot.configuration = configuration
        try context.save()
        let record = try #require(try container.coordinator.store.readObject(snapshot.objectID.key))
        #expect(record.payload == [0x03, 0x18, 0x00, 0x03, 0xAA, 0xBB, 0xCC, 0x01])
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

    @Test("the model hash is FNV-1a over the stored schema JSON")
    func hashDefinition() throws {
        let model = try ManagedObjectModel([DocConfiguration.self, DocSnapshot.self])
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in model.schema.canonicalJSON() { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        #expect(model.versionHash == String(format: "%016llx", hash))
        let container = try PersistentContainer.inMemory(for: [
            DocConfiguration.self, DocSnapshot.self,
        ])
        let stored = container.metadata[PersistentStoreCoordinator.modelKey]
        #expect(stored == .string(String(decoding: model.schema.canonicalJSON(), as: UTF8.self)))
    }
}
