import Foundation
import TestSupport
import Testing

@testable import ObjectLogStore

@Suite("An index of version 5 (or 4): the directory's slots used in place")
struct MappedIndexTests {
    /// A closed store of `count` objects with keys from 1, every third one updated, and its
    /// path.
    static func store(in directory: TemporaryDirectory, count: Int) throws -> String {
        let path = directory.file("m.olog")
        let store = try LogStore.open(path: path)
        var transaction = Transaction()
        let keys = store.allocateKeys(count)
        for key in keys {
            transaction.put(
                key: key,
                entity: EntityTag(key % 3 + 1),
                payload: Array(repeating: UInt8(truncatingIfNeeded: key), count: 8),
                isInsert: true
            )
        }
        try store.commit(transaction)
        var updates = Transaction()
        for key in keys where key % 3 == 0 {
            updates.put(key: key, entity: 1, payload: [9, 9], isInsert: false)
        }
        try store.commit(updates)
        try store.close()
        return path
    }

    @Test("a dense store's index is version 5 and opens to the directory a replay builds")
    func sameAsReplay() throws {
        let directory = TemporaryDirectory()
        let path = try Self.store(in: directory, count: 5_000)
        let bytes = readBytes(path + LogFormat.indexSuffix)
        #expect(bytes.withUnsafeBytes { UInt16(littleEndianBytesOf: $0, at: 8) } == 5)
        // The slots start at a page boundary, 16 bytes for each key, checked in pages of 512
        // bytes.
        #expect((bytes.count - 5_000 * 16) % DenseIndexFile.alignment == 0)
        #expect(
            bytes.withUnsafeBytes { UInt32(littleEndianBytesOf: $0, at: 116) }
                == UInt32((5_000 * 16 + 511) / 512)
        )
        let mapped = try LogStore.open(path: path)
        var options = StoreOptions()
        options.usesIndex = false
        options.readOnly = true
        let replayed = try LogStore.open(path: path, options: options)
        #expect(mapped.indexState == .loaded)
        let keys = replayed.liveKeys(entity: nil)
        #expect(mapped.liveKeys(entity: nil) == keys)
        #expect(keys.map { mapped.location(of: $0) } == keys.map { replayed.location(of: $0) })
        #expect(mapped.liveCounts == replayed.liveCounts)
        #expect(mapped.liveBytes == replayed.liveBytes)
        #expect(try mapped.readObject(3)?.payload == [9, 9])
        try mapped.close()
        try replayed.close()
        #expect(StoreIndex.decode(bytes)?.entries.count == 5_000)
    }

    /// The bytes of a version 4 index with the slots of the version 5 index `bytes`: the
    /// same header but for its version, its page count and checksums (one per 4 KiB of
    /// slots) and its own checksum, then the slots.
    static func versionFour(of bytes: [UInt8]) -> [UInt8] {
        func field32(_ offset: Int) -> Int {
            Int(bytes.withUnsafeBytes { UInt32(littleEndianBytesOf: $0, at: offset) })
        }
        func field64(_ offset: Int) -> Int {
            Int(bytes.withUnsafeBytes { UInt64(littleEndianBytesOf: $0, at: offset) })
        }
        let slots = Array(bytes[field64(104)...])
        let pages = (slots.count + 4_095) / 4_096
        var header = Array(bytes[..<(120 + 16 * field32(112))])
        header[8] = 4
        withUnsafeBytes(of: UInt32(pages).littleEndian) {
            header.replaceSubrange(116..<120, with: $0)
        }
        for page in 0..<pages {
            let checksum = CRC32.checksum(
                Array(slots[(page * 4_096)..<min(slots.count, page * 4_096 + 4_096)])
            )
            withUnsafeBytes(of: checksum.littleEndian) { header.append(contentsOf: $0) }
        }
        withUnsafeBytes(of: CRC32.checksum(header).littleEndian) { header.append(contentsOf: $0) }
        let offset = (header.count + 4_095) / 4_096 * 4_096
        header += [UInt8](repeating: 0, count: offset - header.count)
        withUnsafeBytes(of: UInt64(offset).littleEndian) {
            header.replaceSubrange(104..<112, with: $0)
        }
        // The header's checksum covers the slots' offset: computed again over the final bytes.
        let end = 120 + 16 * field32(112) + 4 * pages
        withUnsafeBytes(of: CRC32.checksum(Array(header[..<end])).littleEndian) {
            header.replaceSubrange(end..<(end + 4), with: $0)
        }
        return header + slots
    }

    @Test("a version 4 index, written before version 5, still opens in place, checked by 4 KiB")
    func versionFourStillOpens() throws {
        let directory = TemporaryDirectory()
        let path = try Self.store(in: directory, count: 5_000)
        let older = Self.versionFour(of: readBytes(path + LogFormat.indexSuffix))
        #expect(StoreIndex.decode(older)?.entries.count == 5_000)
        writeBytes(older, to: path + LogFormat.indexSuffix)
        let mapped = try LogStore.open(path: path)
        #expect(mapped.indexState == .loaded)
        #expect(mapped.liveKeys(entity: nil).count == 5_000)
        #expect(try mapped.readObject(3)?.payload == [9, 9])
        #expect(try mapped.readObject(4_999)?.payload.count == 8)
        try mapped.close()
        // Damage in a version 4 page is found as in version 5.
        var damaged = older
        damaged[damaged.count - 5_000 * 16 + 2_000 * 16] ^= 0x40
        #expect(StoreIndex.decode(damaged) == nil)
    }

    @Test("commits after a mapped open change the directory, never the index file")
    func commitsLeaveTheFile() throws {
        let directory = TemporaryDirectory()
        let path = try Self.store(in: directory, count: 3_000)
        let before = readBytes(path + LogFormat.indexSuffix)
        let store = try LogStore.open(path: path)
        var transaction = Transaction()
        transaction.delete(key: 10, entity: 2)
        transaction.put(key: 11, entity: 3, payload: [7], isInsert: false)
        let new = store.allocateKeys(1).lowerBound
        transaction.put(key: new, entity: 1, payload: [5], isInsert: true)
        try store.commit(transaction)
        #expect(readBytes(path + LogFormat.indexSuffix) == before)
        // Another handle reads the file's index, then the commit from the log.
        var options = StoreOptions()
        options.readOnly = true
        let reader = try LogStore.open(path: path, options: options)
        #expect(reader.location(of: 10) == nil)
        #expect(try reader.readObject(11)?.payload == [7])
        #expect(try reader.readObject(new)?.payload == [5])
        #expect(reader.liveKeys(entity: nil).count == 3_000)
        try reader.close()
        try store.close()
        let reopened = try LogStore.open(path: path)
        #expect(reopened.location(of: 10) == nil)
        #expect(try reopened.readObject(new)?.payload == [5])
        try reopened.close()
    }

    @Test("a damaged page of slots stops the store at its first use, and loses nothing")
    func damagedPage() throws {
        let directory = TemporaryDirectory()
        let path = try Self.store(in: directory, count: 3_000)
        var bytes = readBytes(path + LogFormat.indexSuffix)
        let slotsOffset = bytes.count - 3_000 * 16
        // Key 1000's slot: its length cleared, as if the object were gone.
        for byte in 0..<4 { bytes[slotsOffset + 999 * 16 + 8 + byte] = 0 }
        writeBytes(bytes, to: path + LogFormat.indexSuffix)
        let store = try LogStore.open(path: path)
        #expect(store.indexState == .loaded)
        // Keys of other pages read as they are.
        #expect(try store.readObject(1)?.payload.count == 8)
        _ = store.location(of: 1000)
        #expect(throws: StoreError.self) { try store.readObject(2) }
        #expect(throws: StoreError.self) { try store.compact() }
        do {
            try store.close()
        } catch {
            #expect((error as? StoreError)?.code == .corrupt)
        }
        // The log is whole: without the index, every object is there.
        try FileManager.default.removeItem(atPath: path + LogFormat.indexSuffix)
        let rebuilt = try LogStore.open(path: path)
        #expect(rebuilt.indexState == .rebuilt)
        #expect(rebuilt.liveKeys(entity: nil).count == 3_000)
        #expect(try rebuilt.readObject(1000)?.payload.count == 8)
        try rebuilt.close()
    }

    @Test("a compaction checks every page before it copies")
    func compactionChecksEveryPage() throws {
        let directory = TemporaryDirectory()
        let path = try Self.store(in: directory, count: 3_000)
        var bytes = readBytes(path + LogFormat.indexSuffix)
        let slotsOffset = bytes.count - 3_000 * 16
        bytes[slotsOffset + 2_900 * 16] ^= 0x40
        writeBytes(bytes, to: path + LogFormat.indexSuffix)
        let store = try LogStore.open(path: path)
        do {
            try store.compact()
            Issue.record("a compaction copied through a damaged index")
        } catch {
            #expect((error as? StoreError)?.code == .corrupt)
        }
        try? store.close()
        #expect(readBytes(path + LogFormat.indexSuffix) == bytes, "no index written over it")
    }

    @Test("a directory of sparse keys is written as version 3")
    func sparseIsVersion3() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("s.olog")
        let store = try LogStore.open(path: path)
        var transaction = Transaction()
        let first = store.allocateKeys(1).lowerBound
        transaction.put(key: first, entity: 1, payload: [1], isInsert: true)
        let far = store.allocateKeys(100_000).upperBound
        transaction.put(key: far, entity: 1, payload: [2], isInsert: true)
        try store.commit(transaction)
        try store.close()
        let bytes = readBytes(path + LogFormat.indexSuffix)
        #expect(bytes.withUnsafeBytes { UInt16(littleEndianBytesOf: $0, at: 8) } == 3)
        let reopened = try LogStore.open(path: path)
        #expect(reopened.indexState == .loaded)
        #expect(try reopened.readObject(far)?.payload == [2])
        try reopened.close()
    }
}
