import Foundation
import TestSupport
import Testing

@testable import ObjectLogStore

/// Everything an open derives from replaying the log, for comparing two opens.
private struct ReplayedState: Equatable {
    var locations: [ObjectKey: RecordLocation]
    var counts: [EntityTag: Int]
    var liveBytes: UInt64
    var metadata: Metadata
    var transactionCount: UInt64
    var fileBytes: UInt64

    init(_ store: LogStore) {
        locations = Dictionary(
            uniqueKeysWithValues: store.liveKeys(entity: nil).map { ($0, store.location(of: $0)!) }
        )
        counts = store.liveCounts
        liveBytes = store.liveBytes
        metadata = store.metadata
        transactionCount = store.transactionCount
        fileBytes = store.fileBytes
    }
}

/// A store in memory holding the first `count` bytes of `bytes`.
private func memoryStore(_ bytes: [UInt8], count: Int) throws -> MemoryFileSystem {
    let fileSystem = MemoryFileSystem()
    let file = try fileSystem.open("/s.olog", mode: .create(permissions: 0o600))
    try file.write(Array(bytes[0..<count]), at: 0)
    file.close()
    return fileSystem
}

/// Opens `/s.olog` of `fileSystem` read-only by replaying its whole log.
private func replayed(_ fileSystem: MemoryFileSystem, salvage: Bool = false) throws -> LogStore {
    var options = StoreOptions(fileSystem: fileSystem)
    options.readOnly = true
    options.usesIndex = false
    options.salvage = salvage
    return try LogStore.open(path: "/s.olog", options: options)
}

@Suite("Log replay")
struct LogReplayTests {
    /// Two committed transactions, then a third that changes every kind of thing a replay
    /// tracks, and a fourth; returns the file and where the second and third commits end.
    private func makeLog() throws -> (bytes: [UInt8], secondEnd: Int, thirdEnd: Int) {
        let fileSystem = MemoryFileSystem()
        let store = try LogStore.open(
            path: "/s.olog",
            options: StoreOptions(fileSystem: fileSystem)
        )
        let keys = store.allocateKeys(40)
        var first = Transaction()
        for key in keys {
            let payload = [UInt8](repeating: UInt8(key & 0xFF), count: Int(key % 7))
            first.put(key: key, entity: EntityTag(key % 3 + 1), payload: payload, isInsert: true)
        }
        try store.commit(first)
        var second = Transaction()
        second.put(key: keys.lowerBound + 1, entity: 2, payload: [9, 9], isInsert: false)
        second.delete(key: keys.lowerBound + 2, entity: 3)
        second.metadata = ["step": .integer(2)]
        try store.commit(second)
        let secondEnd = Int(store.fileBytes)

        let fresh = store.allocateKeys(3)
        var third = Transaction()
        // An update that changes the entity and the record's length.
        third.put(
            key: keys.lowerBound + 3,
            entity: 5,
            payload: [1, 2, 3, 4, 5, 6, 7, 8],
            isInsert: false
        )
        third.delete(key: keys.lowerBound + 4, entity: 2)
        third.put(key: fresh.lowerBound, entity: 1, payload: [7], isInsert: true)
        third.put(key: keys.lowerBound + 5, entity: 3, payload: [], isInsert: false)
        third.delete(key: fresh.lowerBound + 1, entity: 1)
        third.put(key: fresh.lowerBound + 2, entity: 4, payload: [3, 3], isInsert: true)
        third.metadata = ["step": .integer(3)]
        try store.commit(third)
        let thirdEnd = Int(store.fileBytes)
        var fourth = Transaction()
        fourth.put(key: keys.lowerBound + 6, entity: 1, payload: [4], isInsert: false)
        try store.commit(fourth)
        try store.close()

        let file = try fileSystem.open("/s.olog", mode: .read)
        defer { file.close() }
        return (try file.read(at: 0, count: Int(try file.size())), secondEnd, thirdEnd)
    }

    @Test(
        "records applied before a missing commit are undone: every cut of the last transaction opens as its last commit"
    )
    func unfinishedTransactionIsUndone() throws {
        let (bytes, secondEnd, thirdEnd) = try makeLog()
        let expected = ReplayedState(try replayed(try memoryStore(bytes, count: secondEnd)))
        let complete = ReplayedState(try replayed(try memoryStore(bytes, count: thirdEnd)))
        // The third transaction really changes what the comparison looks at.
        #expect(complete.locations != expected.locations)
        #expect(complete.counts != expected.counts)
        #expect(complete.liveBytes != expected.liveBytes)
        #expect(complete.metadata != expected.metadata)
        for cut in (secondEnd + 1)..<thirdEnd {
            let store = try replayed(try memoryStore(bytes, count: cut))
            #expect(ReplayedState(store) == expected, "cut at \(cut)")
            #expect(store.damageAtOpen?.kind == .tornTail, "cut at \(cut)")
        }
    }

    @Test(
        "a salvage open meeting corruption inside a transaction undoes that transaction's records and keeps the next"
    )
    func salvageUndoesDamagedTransaction() throws {
        let (bytes, secondEnd, thirdEnd) = try makeLog()
        let expected = ReplayedState(try replayed(try memoryStore(bytes, count: secondEnd)))
        // The last byte before the third commit record: the scan has applied every object
        // record of the third transaction when it meets the damage.
        var damaged = bytes
        let offset = thirdEnd - RecordLayout.compact.commitRecordLength - 1
        damaged[offset] ^= 0x40
        let fileSystem = try memoryStore(damaged, count: damaged.count)
        #expect {
            try replayed(fileSystem)
        } throws: { error in
            (error as? StoreError)?.code == .corrupt
        }
        let store = try replayed(fileSystem, salvage: true)
        #expect(store.damageAtOpen?.kind == .corrupt)
        // The third transaction is undone and the fourth, intact, is kept: the second
        // transaction's state with object 7 updated to [4] (and moved to entity 1).
        let second = try replayed(try memoryStore(bytes, count: secondEnd))
        var objects = try snapshot(second)
        objects[7] = [4]
        #expect(try snapshot(store) == objects)
        var counts = expected.counts
        counts[second.location(of: 7)!.entity]! -= 1
        counts[1, default: 0] += 1
        #expect(ReplayedState(store).counts == counts)
        #expect(store.metadata == expected.metadata)
        #expect(store.salvageReport?.lostTransactionNumbers == [3])
    }

    @Test(
        "a multi-megabyte log with updates in random key order replays as its index and model say, and its torn tail is undone"
    )
    func largeLogReadAhead() throws {
        let fileSystem = MemoryFileSystem()
        let store = try LogStore.open(
            path: "/s.olog",
            options: StoreOptions(fileSystem: fileSystem)
        )
        let keys = store.allocateKeys(40_000)
        var model: [ObjectKey: [UInt8]] = [:]
        var first = Transaction()
        for key in keys {
            let payload = [UInt8](repeating: UInt8(key & 0xFF), count: 100 + Int(key % 16))
            first.put(key: key, entity: EntityTag(key % 2 + 1), payload: payload, isInsert: true)
            model[key] = payload
        }
        try store.commit(first)
        var second = Transaction()
        for key in keys where key % 7 == 0 {
            second.delete(key: key, entity: EntityTag(key % 2 + 1))
            model[key] = nil
        }
        // Updates in random key order, as a compacted log lists objects updated since (the
        // replay reads ahead for these in batches).
        var generator = SeededGenerator(seed: 5)
        for key in keys.shuffled(using: &generator) where key % 11 == 0 && model[key] != nil {
            second.put(key: key, entity: EntityTag(key % 2 + 1), payload: [1], isInsert: false)
            model[key] = [1]
        }
        try store.commit(second)
        let committedEnd = Int(store.fileBytes)
        var third = Transaction()
        for key in keys.shuffled(using: &generator) where key % 3 == 0 && model[key] != nil {
            third.put(key: key, entity: 3, payload: [2, 2], isInsert: false)
        }
        try store.commit(third)
        try store.close()
        let file = try fileSystem.open("/s.olog", mode: .read)
        let bytes = try file.read(at: 0, count: Int(try file.size()))
        file.close()
        // Larger than the scanner's window many times over.
        #expect(committedEnd > 4 << 20)

        // The whole log: the replay agrees with the index checkpoint written at close.
        var indexed = StoreOptions(fileSystem: fileSystem)
        indexed.readOnly = true
        let fromIndex = try LogStore.open(path: "/s.olog", options: indexed)
        #expect(fromIndex.indexState == .loaded)
        let fromLog = try replayed(fileSystem)
        #expect(fromLog.indexState == .rebuilt)
        #expect(ReplayedState(fromLog) == ReplayedState(fromIndex))

        // Cut inside the third transaction: the state of the second commit, as the model has it.
        let cut = committedEnd + (bytes.count - committedEnd) / 2
        let torn = try replayed(try memoryStore(bytes, count: cut))
        #expect(torn.damageAtOpen?.kind == .tornTail)
        #expect(torn.fileBytes == UInt64(committedEnd))
        #expect(torn.transactionCount == 2)
        #expect(try snapshot(torn) == model)
        #expect(torn.liveCounts[3] == nil)
        #expect(torn.liveCount(entity: nil) == model.count)
    }
}
