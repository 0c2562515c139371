import Foundation
import TestSupport
import Testing

@testable import Thumbnails

@Suite("PNG decoding of mutated files")
struct PNGFuzzTests {
    /// The chunks of a PNG as (offset of the length field, data length).
    static func chunks(_ bytes: [UInt8]) -> [(offset: Int, length: Int)] {
        var result: [(Int, Int)] = []
        var offset = 8
        while offset + 12 <= bytes.count {
            let length = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            result.append((offset, length))
            offset += 12 + length
        }
        return result
    }

    /// Rewrites the CRC of the chunk at `offset` so libpng looks past it into the data.
    static func fixCRC(_ bytes: inout [UInt8], chunkAt offset: Int, length: Int) {
        let crc = HandmadePNG.crc32(Array(bytes[offset + 4..<offset + 8 + length]))
        bytes.replaceSubrange(
            offset + 8 + length..<offset + 12 + length,
            with: HandmadePNG.bigEndian(crc)
        )
    }

    /// 2,000 by default; set THUMBNAILS_FUZZ_ITERATIONS for a longer run.
    static let iterations =
        ProcessInfo.processInfo.environment["THUMBNAILS_FUZZ_ITERATIONS"].flatMap { Int($0) }
        ?? 2_000

    @Test(
        "random byte changes with repaired CRCs decode to a consistent image or throw, never crash"
    )
    func mutations() throws {
        let seed: UInt64 = 0x5EED
        var generator = SeededGenerator(seed: seed)
        let field = makeSpotField(width: 24, height: 20)
        let original = try Image(
            rendering: .twoChemical,
            fields: [field.u, field.v],
            width: 24,
            height: 20
        )
        .pngBytes()
        let chunks = Self.chunks(original)
        #expect(chunks.count >= 3)
        var decoded = 0
        var failed = 0
        for _ in 0..<Self.iterations {
            var bytes = original
            let (offset, length) = chunks[Int.random(in: 0..<chunks.count, using: &generator)]
            guard length > 0 else { continue }
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let position = offset + 8 + Int.random(in: 0..<length, using: &generator)
                bytes[position] = UInt8.random(in: 0...255, using: &generator)
            }
            Self.fixCRC(&bytes, chunkAt: offset, length: length)
            do {
                let image = try Image(pngBytes: bytes)
                #expect(
                    image.pixels.count == image.width * image.height * image.format.channelCount
                )
                decoded += 1
            } catch {
                #expect(!error.message.isEmpty, "seed \(seed)")
                failed += 1
            }
        }
        // Both outcomes occur, so the mutations reach past the CRC checks.
        #expect(decoded > 0 && failed > 0, "decoded \(decoded), failed \(failed), seed \(seed)")
    }
}
