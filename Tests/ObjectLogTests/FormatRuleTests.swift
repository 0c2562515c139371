import Foundation
import ObjectLogStore
import Testing

@testable import ObjectLog

/// FORMAT.md, section 10: what the engine's payloads hold where the schema could suggest more.
@Suite("Payload rules: relationships without presence bytes, UTF-8 strings")
struct PayloadRuleTests {
    @Test("an optional to-one relationship without a destination is key 0, with no presence byte")
    func relationshipHasNoPresenceByte() throws {
        let container = try makeLogInMemoryContainer(for: [
            DocConfiguration.self, DocSnapshot.self,
        ])
        let stored = try #require(
            container.model.schema.entities.first { $0.name == "DocSnapshot" }?.properties.first {
                $0.name == "configuration"
            }
        )
        #expect(stored.kind == .relationship)
        let context = container.newContext()
        let snapshot = DocSnapshot(context: context)
        snapshot.step = 1
        snapshot.state = Data([0xAA])
        try context.save()
        let record = try #require(
            try container.coordinator.logStore!.readObject(snapshot.objectID.key)
        )
        // count 3, step zigzag(1), state inline (mode 0, length 1, AA), configuration key 0.
        #expect(record.payload == [0x03, 0x02, 0x00, 0x01, 0xAA, 0x00])
    }

    @Test("a string that is not valid UTF-8 is malformed, not repaired")
    func invalidUTF8() throws {
        let bytes: [UInt8] = [0x02, 0xC3, 0x28]
        bytes.withUnsafeBytes { buffer in
            var reader = PayloadReader(buffer)
            #expect(throws: PayloadError.malformed(offset: 0, "string is not valid UTF-8")) {
                try reader.readString()
            }
        }
        let valid: [UInt8] = [0x02, 0xC3, 0xA9]
        valid.withUnsafeBytes { buffer in
            var reader = PayloadReader(buffer)
            #expect((try? reader.readString()) == "é")
        }
        // ASCII takes its own path: lengths across several eight-byte words, and a stray
        // continuation byte at each place of each length, which must still be refused.
        for length in 0...20 {
            let ascii = (0..<length).map { UInt8(0x7F - $0) }
            let text = [UInt8(length)] + ascii
            text.withUnsafeBytes { buffer in
                var reader = PayloadReader(buffer)
                #expect((try? reader.readString()) == String(decoding: ascii, as: UTF8.self))
            }
            for place in 0..<length {
                var damaged = text
                damaged[1 + place] = 0x80
                damaged.withUnsafeBytes { buffer in
                    var reader = PayloadReader(buffer)
                    #expect(throws: PayloadError.self, "\(length) \(place)") {
                        try reader.readString()
                    }
                }
            }
        }
    }
}
