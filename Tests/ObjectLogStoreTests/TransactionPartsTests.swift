import Foundation
import TestSupport
import Testing

@testable import ObjectLogStore

@Suite("Transactions written in parts on several threads")
struct TransactionPartsTests {
    /// One put to add: its key, entity, value, blobs and insert flag.
    typealias Put = (
        key: ObjectKey, entity: EntityTag, value: [UInt8], blobs: [BlobID], isInsert: Bool
    )

    /// `count` puts of random values (some with blobs, some long).
    func randomPuts(_ count: Int, seed: UInt64) throws -> [Put] {
        var random = SeededGenerator(seed: seed)
        let blob = try #require(BlobID(bytes: Array(repeating: 9, count: LogFormat.blobIDLength)))
        return (0..<count).map { index in
            let length =
                index % 17 == 0
                ? Int.random(in: 200...3000, using: &random)
                : Int.random(in: 0...90, using: &random)
            return (
                ObjectKey.random(in: 1...(1 << 40), using: &random),
                EntityTag.random(in: 1...300, using: &random),
                (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) },
                index % 11 == 0 ? [blob] : index % 23 == 0 ? [blob, blob] : [],
                index % 3 == 0
            )
        }
    }

    @Test(
        "the parts make the transaction their puts make one after the other",
        arguments: [1, 2, 3, 7]
    )
    func partsEqualSequentialPuts(parts: Int) throws {
        let puts = try randomPuts(500, seed: 0x9A27 + UInt64(parts))
        var sequential = Transaction()
        for put in puts {
            sequential.put(
                key: put.key,
                entity: put.entity,
                payload: put.value,
                blobs: put.blobs,
                isInsert: put.isInsert
            )
        }
        // Uneven parts, the last one empty when there are several; each part's room is its
        // worst case, which leaves gaps to close.
        let cuts = (0...parts).map { min(puts.count, $0 * puts.count / max(parts - 1, 1)) }
        let rooms = (0..<parts).map { part in
            let slice = puts[cuts[part]..<cuts[part + 1]]
            return (
                changes: slice.count,
                recordBytes: slice.reduce(0) {
                    $0 + $1.value.count + RecordLayout.compact.maximumFrameLength
                        + $1.blobs.count * LogFormat.blobIDLength + 10
                }
            )
        }
        let made = try Transaction.buildingInParallel(rooms: rooms) { part, writer in
            for put in puts[cuts[part]..<cuts[part + 1]] {
                writer.put(
                    key: put.key,
                    entity: put.entity,
                    valueCount: put.value.count,
                    blobs: put.blobs,
                    isInsert: put.isInsert
                ) { target in
                    #expect(target.allSatisfy { $0 == 0 })
                    put.value.withUnsafeBytes { target.copyMemory(from: $0) }
                }
            }
        }
        let built = try #require(made)
        // The records stay where their parts wrote them: the room a part left unused is a hole,
        // and without the holes the records are those of the puts one after the other.
        #expect(built.recordBytes == sequential.records.bytes)
        #expect(built.recordByteCount == sequential.records.count)
        // A hole after each part that has records after it (with two parts, the second is the
        // empty one).
        #expect(built.holes.count == max(0, parts - 2))
        for (hole, next) in zip(built.holes, built.holes.dropFirst()) {
            #expect(hole.count > 0)
            #expect(hole.start + hole.count < next.start)
        }
        #expect(built.entries.count == sequential.entries.count)
        for (index, (left, right)) in zip(built.entries, sequential.entries).enumerated() {
            #expect(left.key == right.key)
            #expect(left.entity == right.entity)
            // Where the record lies once the holes before it are left out.
            let skipped = built.holes.filter { $0.start <= left.recordStart }.reduce(0) {
                $0 + $1.count
            }
            #expect(left.recordStart - skipped == right.recordStart)
            built.records.withUnsafeBytes { builtBytes in
                sequential.records.withUnsafeBytes { sequentialBytes in
                    #expect(
                        Array(builtBytes[left.valueRange])
                            == Array(sequentialBytes[right.valueRange])
                    )
                }
            }
            #expect(left.recordLength == right.recordLength)
            #expect(left.valueCount == right.valueCount)
            #expect(left.isInsert == right.isInsert)
            #expect(built.blobs(ofEntry: index) == sequential.blobs(ofEntry: index))
        }
    }

    @Test("puts that outgrow their part's room make no transaction", arguments: [false, true])
    func outgrownRoomMakesNothing(tooManyPuts: Bool) throws {
        let rooms = [(changes: 3, recordBytes: 1000), tooManyPuts ? (2, 1000) : (3, 40)]
        let made = try Transaction.buildingInParallel(rooms: rooms) { _, writer in
            for key in ObjectKey(1)...3 {
                writer.put(key: key, entity: 1, valueCount: 20, blobs: [], isInsert: true) {
                    target in for index in target.indices { target[index] = 1 }
                }
            }
        }
        #expect(made == nil)
    }

    /// What a part throws.
    struct PartFailure: Error, Equatable { let part: Int }

    @Test("a part that throws makes the whole build throw its error")
    func failingPartThrows() throws {
        #expect(throws: PartFailure(part: 1)) {
            let rooms = Array(repeating: (changes: 4, recordBytes: 400), count: 3)
            _ = try Transaction.buildingInParallel(rooms: rooms) {
                part,
                writer in
                writer.put(key: 1, entity: 1, valueCount: 3, blobs: [], isInsert: false) { target in
                    for index in target.indices { target[index] = UInt8(index) }
                }
                if part == 1 { throw PartFailure(part: 1) }
            }
        }
    }

    @Test(
        "a transaction built in parts commits around its holes and reads back, with an index",
        arguments: [false, true]
    )
    func builtTransactionCommits(firstPartEmpty: Bool) throws {
        let directory = TemporaryDirectory()
        let store = try LogStore.open(path: directory.file("parts.olog"))
        let keys = store.allocateKeys(40)
        // More room than the records take, so that each part leaves a hole; a first part that
        // writes nothing leaves one at the start.
        let rooms =
            (firstPartEmpty ? [(changes: 0, recordBytes: 300)] : [])
            + Array(repeating: (changes: 20, recordBytes: 20 * 64), count: 2)
        let made = try Transaction.buildingInParallel(rooms: rooms) {
            part,
            writer in
            guard !firstPartEmpty || part > 0 else { return }
            let part = firstPartEmpty ? part - 1 : part
            for index in 0..<20 {
                let key = keys.lowerBound + ObjectKey(part * 20 + index)
                let value = Array("object \(key)".utf8)
                writer.put(key: key, entity: 5, valueCount: value.count, blobs: [], isInsert: true)
                {
                    target in value.withUnsafeBytes { target.copyMemory(from: $0) }
                }
            }
        }
        let transaction = try #require(made)
        #expect(transaction.holes.count == (firstPartEmpty ? 2 : 1))
        #expect(transaction.holes.first?.start == 0 || !firstPartEmpty)
        try store.commit(transaction)
        // Read back through the directory the commit updated, then from the file alone (by
        // log rebuild) and through the index the close writes.
        for key in keys {
            #expect(try store.readObject(key)?.payload == Array("object \(key)".utf8))
        }
        try store.close()
        for usesIndex in [false, true] {
            var options = StoreOptions()
            options.usesIndex = usesIndex
            let reopened = try LogStore.open(path: directory.file("parts.olog"), options: options)
            for key in keys {
                #expect(try reopened.readObject(key)?.payload == Array("object \(key)".utf8))
            }
            try reopened.close()
        }
    }

    @Test("appending a transaction with holes keeps them, and the whole commits and reads back")
    func appendedHolesCommit() throws {
        let directory = TemporaryDirectory()
        let store = try LogStore.open(path: directory.file("appended.olog"))
        let keys = Array(store.allocateKeys(60))
        func built(_ keys: ArraySlice<ObjectKey>) throws -> Transaction {
            let rooms = Array(repeating: (changes: 10, recordBytes: 10 * 64), count: 3)
            return try #require(
                try Transaction.buildingInParallel(rooms: rooms) { part, writer in
                    for key in keys.dropFirst(part * 10).prefix(10) {
                        let value = Array("appended \(key)".utf8)
                        writer.put(
                            key: key,
                            entity: 3,
                            valueCount: value.count,
                            blobs: [],
                            isInsert: true
                        ) { target in value.withUnsafeBytes { target.copyMemory(from: $0) } }
                    }
                }
            )
        }
        var first = try built(keys[..<30])
        let second = try built(keys[30...])
        let firstBytes = first.recordBytes
        let base = first.records.count
        first.append(putsOf: second)
        #expect(
            first.holes == first.holes.prefix(2)
                + second.holes.map {
                    Transaction.Hole(start: base + $0.start, count: $0.count)
                }
        )
        #expect(first.recordBytes == firstBytes + second.recordBytes)
        try store.commit(first)
        try store.close()
        let reopened = try LogStore.open(path: directory.file("appended.olog"))
        for key in keys {
            #expect(try reopened.readObject(key)?.payload == Array("appended \(key)".utf8))
        }
        try reopened.close()
    }
}
