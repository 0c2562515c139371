import Foundation
import TestSupport
import Testing

@testable import ObjectLogStore

@Suite("An index written for a copy hands its directory to the copy's open")
struct IndexHandoverTests {
    /// A store of `count` objects of entities 1 and 2, and a compacted copy of it beside it.
    func storeAndCopy(in directory: TemporaryDirectory, count: Int) throws -> (String, String) {
        let path = directory.file("store.olog")
        let store = try LogStore.open(path: path)
        var transaction = Transaction()
        for key in store.allocateKeys(count) {
            transaction.put(
                key: key,
                entity: key % 3 == 0 ? 2 : 1,
                payload: [UInt8(key % 251), 7],
                isInsert: true
            )
        }
        try store.commit(transaction)
        let copy = directory.file("copy.olog")
        _ = try store.writeCompactedCopy(
            to: copy,
            folding: Transaction(),
            progress: nil,
            rewriting: [{ _, _, _, _, _ in false }]
        )
        try store.close()
        return (path, copy)
    }

    @Test("the open of a copy finds what the copy holds, with or without the directory")
    func openOfCopy() throws {
        let directory = TemporaryDirectory()
        let (path, copy) = try storeAndCopy(in: directory, count: 500)
        let original = try LogStore.open(path: path)
        let expected = try snapshot(original)
        try original.close()
        // The first open may take the directory written with the copy (unless another test's
        // copies pushed it out); the second decodes the index. Both see the same.
        for _ in 0..<2 {
            let opened = try LogStore.open(path: copy)
            #expect(try snapshot(opened) == expected)
            #expect(opened.liveCount(entity: 1) == 334)
            #expect(opened.liveCount(entity: 2) == 166)
            // It takes saves, and its directory is its own.
            var transaction = Transaction()
            transaction.delete(key: 3, entity: 2)
            try opened.commit(transaction)
            #expect(opened.liveCount(entity: 2) == 165)
            try opened.close()
            let again = try LogStore.open(path: copy)
            #expect(again.liveKeys(entity: nil).count == 499)
            var undo = Transaction()
            undo.put(key: 3, entity: 2, payload: [3, 7], isInsert: false)
            try again.commit(undo)
            try again.close()
        }
    }

    @Test("a directory is taken once, and only for the bytes it was written with")
    func takenForItsBytesOnly() throws {
        let directory = TemporaryDirectory()
        let (path, _) = try storeAndCopy(in: directory, count: 200)
        let store = try LogStore.open(path: path)
        let bytes = readBytes(path + LogFormat.indexSuffix)
        let decoded = try #require(StoreIndex.decode(bytes))
        var live = KeyDirectory()
        var counts = EntityCounter()
        for (key, location) in decoded.entries {
            live.insertUnique(key, location)
            counts.add(location.entity, 1)
        }
        try store.close()
        let handover = IndexHandover(limit: 2)
        handover.offer(live, counts: counts, index: decoded, fileHead: bytes, size: bytes.count)
        let file = directory.file("index")
        func take(_ contents: [UInt8]) throws -> (StoreIndex, KeyDirectory, EntityCounter)? {
            writeBytes(contents, to: file)
            let opened = try PosixFileSystem().open(file, mode: .read)
            defer { opened.close() }
            return handover.take(for: opened, size: contents.count)
        }
        // Another size, a changed covered length or count of entries: not the index written.
        #expect(try take(Array(bytes.dropLast())) == nil)
        var header = bytes
        header[40] ^= 1
        #expect(try take(header) == nil)
        var count = bytes
        count[56] ^= 1
        #expect(try take(count) == nil)
        // The bytes written: the directory, with the index's fields and no entries kept.
        let taken = try #require(try take(bytes))
        #expect(taken.0.coveredLength == decoded.coveredLength && taken.0.entries.isEmpty)
        #expect(taken.1.sortedEntries().map(\.key) == decoded.entries.map(\.key))
        #expect(taken.2[1] == counts[1] && taken.2[2] == counts[2])
        // Once.
        #expect(try take(bytes) == nil)
        // The newest `limit` are kept.
        for _ in 0..<3 {
            handover.offer(live, counts: counts, index: decoded, fileHead: bytes, size: bytes.count)
        }
        #expect(try take(bytes) != nil)
        #expect(try take(bytes) != nil)
        #expect(try take(bytes) == nil)
    }
}
