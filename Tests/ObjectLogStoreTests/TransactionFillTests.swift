import Foundation
import TestSupport
import Testing

@testable import ObjectLogStore

@Suite("Puts whose value is written in place")
struct TransactionFillTests {
    @Test("a put filled in place adds the record a put of the same bytes adds")
    func filledPutEqualsCopiedPut() throws {
        var random = SeededGenerator(seed: 0xF111)
        let blob = try #require(BlobID(bytes: Array(repeating: 7, count: LogFormat.blobIDLength)))
        var copied = Transaction()
        var filled = Transaction()
        for length in [0, 1, 2, 54, 127, 128, 129, 300, 16_384, 20_000] {
            for blobs in [[], [blob], [blob, blob]] {
                for isInsert in [false, true] {
                    let value = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
                    let key = ObjectKey.random(in: 1...(1 << 40), using: &random)
                    let entity = EntityTag.random(in: 1...300, using: &random)
                    copied.put(
                        key: key,
                        entity: entity,
                        payload: value,
                        blobs: blobs,
                        isInsert: isInsert
                    )
                    filled.put(
                        key: key,
                        entity: entity,
                        valueCount: length,
                        blobs: blobs,
                        isInsert: isInsert
                    ) { target in
                        #expect(target.count == length)
                        #expect(target.allSatisfy { $0 == 0 })
                        value.withUnsafeBytes { target.copyMemory(from: $0) }
                    }
                }
            }
        }
        #expect(filled.records.bytes == copied.records.bytes)
        #expect(filled.entries.count == copied.entries.count)
        for (index, (left, right)) in zip(filled.entries, copied.entries).enumerated() {
            #expect(left.key == right.key)
            #expect(left.recordStart == right.recordStart)
            #expect(left.recordLength == right.recordLength)
            #expect(left.valueCount == right.valueCount)
            #expect(left.isInsert == right.isInsert)
            #expect(filled.blobs(ofEntry: index) == copied.blobs(ofEntry: index))
        }
    }
}
