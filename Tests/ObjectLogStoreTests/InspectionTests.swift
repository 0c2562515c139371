import Foundation
import TestSupport
import Testing

@testable import ObjectLogStore

@Suite("Inspection and recovery")
struct InspectionTests {
    private func makeStore(_ path: String, transactions: Int) throws -> [UInt64] {
        let store = try LogStore.open(path: path)
        var ends: [UInt64] = []
        for number in 0..<transactions {
            var transaction = Transaction()
            transaction.put(
                key: store.allocateKeys(1).lowerBound,
                entity: UInt32(number % 2 + 1),
                payload: [UInt8(number)],
                isInsert: true
            )
            if number == 1 { transaction.metadata = ["owner": .string("lab")] }
            try store.commit(transaction)
            ends.append(store.fileBytes)
        }
        try store.close()
        return ends
    }

    @Test("a clean store inspects clean, with its transactions, counts and index")
    func clean() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("s.olog")
        _ = try makeStore(path, transactions: 5)
        let inspection = try StoreInspection(path: path)
        #expect(inspection.isClean)
        #expect(inspection.transactions.map(\.number) == [1, 2, 3, 4, 5])
        #expect(inspection.transactions[1].changedMetadata)
        #expect(inspection.liveCounts == [1: 3, 2: 2])
        #expect(inspection.indexStatus == .current)
        #expect(inspection.metadata == ["owner": .string("lab")])
        #expect(inspection.fileBytes == inspection.validBytes)
    }

    @Test("inspection reports a torn tail as such, and corruption with its offset")
    func damage() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("d.olog")
        let ends = try makeStore(path, transactions: 6)
        let bytes = readBytes(path)
        writeBytes(Array(bytes[0..<(Int(ends[4]) + 10)]), to: path)
        let torn = try StoreInspection(path: path)
        #expect(torn.damage?.kind == .tornTail)
        #expect(torn.problems.first?.area == .tornTail)
        #expect(torn.transactions.count == 5)
        var flipped = bytes
        let position = Int(ends[1]) + 30
        flipped[position] ^= 0x04
        writeBytes(flipped, to: path)
        let corrupt = try StoreInspection(path: path)
        #expect(corrupt.damage?.kind == .corrupt)
        // The damaged record is named: it starts at or after the transaction and not after the flip.
        #expect(
            corrupt.damage.map { $0.offset >= ends[1] && $0.offset <= UInt64(position) } == true
        )
        #expect(corrupt.problems.first?.area == .log)
        // The file was only read.
        #expect(readBytes(path) == flipped)
    }

    @Test("recover salvages every intact transaction into a new valid store")
    func recover() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("r.olog")
        let ends = try makeStore(path, transactions: 6)
        var bytes = readBytes(path)
        bytes[Int(ends[2]) + 5] ^= 0x80
        writeBytes(bytes, to: path)
        // With the index checkpoint the prefix is trusted (damage there shows when the record is
        // read); a full replay finds it.
        try FileManager.default.removeItem(atPath: path + "-index")
        let error = #expect(throws: StoreError.self) { try LogStore.open(path: path) }
        #expect(error?.code == .corrupt)
        #expect(error?.offset == ends[2])
        let output = directory.file("saved.olog")
        let result = try LogStore.recover(path: path, to: output)
        #expect(result.damage?.kind == .corrupt)
        #expect(result.damage?.laterCommits == 3)
        // Only transaction 4 (object 4) is lost: the two intact ones after it are kept.
        #expect(result.objects == 5)
        let saved = try LogStore.open(path: output)
        #expect(saved.liveKeys(entity: nil) == [1, 2, 3, 5, 6])
        #expect(saved.metadata == ["owner": .string("lab")])
        #expect(try saved.readObject(4) == nil)
        #expect(try saved.readObject(6)?.payload == [5])
        #expect(saved.transactionCount == 6)
        #expect(readBytes(path) == bytes)
    }
}
