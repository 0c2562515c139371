import Foundation
import TestSupport
import Testing

@testable import ObjectLogStore

private let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("Fixtures")
private let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent()
    .deletingLastPathComponent()

@Suite("Format")
struct FormatTests {
    @Test("index entries round-trip whether their varints take one byte or several")
    func indexEntriesRoundTrip() throws {
        // One-byte entries (the word-at-a-time path) mixed with entries whose key gap, offset
        // step (forward or back), length or entity needs a longer varint.
        var entries: [(key: ObjectKey, location: RecordLocation)] = []
        var key: ObjectKey = 0
        var offset: UInt64 = 64
        for step in 0..<400 {
            key += step % 7 == 3 ? 200 + UInt64(step) * 1_000 : 1
            let length: UInt32 = step % 11 == 5 ? 70_000 : 40 + UInt32(step % 9)
            let entity: EntityTag = step % 13 == 6 ? 300 : EntityTag(step % 3)
            if step % 17 == 8 { offset -= 30 } else { offset += UInt64(length) }
            entries.append(
                (key, RecordLocation(entity: entity, offset: offset, length: length))
            )
        }
        let index = StoreIndex(
            storeUUID: UUID(),
            generation: 3,
            coveredLength: offset + 200_000,
            lastCommitChecksum: 0xDEAD_BEEF,
            lastNumber: 9,
            nextKey: key + 1,
            metadataOffset: 0,
            liveBytes: 1234,
            entries: entries
        )
        let bytes = index.encoded()
        let decoded = try #require(StoreIndex.decode(bytes))
        #expect(decoded.entries.count == entries.count)
        for (found, expected) in zip(decoded.entries, entries) {
            #expect(found.key == expected.key && found.location == expected.location)
        }
        // A last entry cut short is refused (count and checksum made to agree with the cut).
        var cut = Array(bytes[..<(bytes.count - 4 - 1)])
        let checksum = cut.withUnsafeBytes { CRC32.checksum($0) }
        withUnsafeBytes(of: checksum.littleEndian) { cut.append(contentsOf: $0) }
        #expect(StoreIndex.decode(cut) == nil)
    }

    @Test("the committed version 1.0 fixture reads as FORMAT.md describes it")
    func fixtureV1() throws {
        let directory = TemporaryDirectory()
        let path = try copyFixture("v1.0.olog", to: directory)
        let store = try openReadOnly(path)
        #expect(store.formatVersion == "1.0")
        #expect(store.storeUUID == UUID(uuidString: "D26DCCAF-58C5-420E-B31B-DCA742884C9A"))
        #expect(store.transactionCount == 2)
        #expect(store.metadata == ["author": .string("Ada")])
        #expect(store.liveKeys(entity: nil) == [1])
        #expect(try store.readObject(1)?.payload == Array("world".utf8))
        #expect(store.location(of: 1)?.entity == 1)
        #expect(try LogStore.readMetadata(path: path) == ["author": .string("Ada")])
        let inspection = try StoreInspection(path: path)
        #expect(inspection.transactions.map(\.offset) == [512, 1024])
        #expect(inspection.transactions.map(\.inserted) == [2, 0])
        #expect(inspection.transactions.map(\.deleted) == [0, 1])
        let json = try independentRead(path)
        let live = json["live"] as? [String: [String: Any]]
        #expect(live?.keys.sorted() == ["1"])
        #expect(live?["1"]?["value"] as? String == "776f726c64")  // "world"
    }

    @Test("the committed version 2.0 fixture reads as FORMAT.md describes it")
    func fixtureV2() throws {
        let directory = TemporaryDirectory()
        let path = try copyFixture("v2.0.olog", to: directory)
        let store = try openReadOnly(path)
        #expect(store.formatVersion == "2.0")
        #expect(store.transactionCount == 2)
        #expect(store.metadata == ["author": .string("Ada")])
        #expect(store.liveKeys(entity: nil) == [1])
        #expect(try store.readObject(1)?.payload == Array("world".utf8))
        #expect(try LogStore.readMetadata(path: path) == ["author": .string("Ada")])
        let inspection = try StoreInspection(path: path)
        #expect(inspection.transactions.map(\.offset) == [512, 1024])
        #expect(inspection.transactions.map(\.inserted) == [2, 0])
        #expect(inspection.transactions.map(\.deleted) == [0, 1])
        // The first put's frame: CRC, type 1, flags 1 (insert), entity 1, key 1, L = 5.
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(Array(bytes[516..<521]) == [1, 1, 1, 1, 5])
        #expect(Array(bytes[521..<526]) == Array("hello".utf8))
        let json = try independentRead(path)
        let live = json["live"] as? [String: [String: Any]]
        #expect(live?.keys.sorted() == ["1"])
        #expect(live?["1"]?["value"] as? String == "776f726c64")  // "world"
    }

    @Test("the committed version 3.0 fixture reads as FORMAT.md describes it")
    func fixtureV3() throws {
        let directory = TemporaryDirectory()
        let path = try copyFixture("v3.0.olog", to: directory)
        let store = try openReadOnly(path)
        #expect(store.formatVersion == "3.0")
        #expect(store.transactionCount == 2)
        #expect(store.metadata == ["author": .string("Ada")])
        #expect(store.liveKeys(entity: nil) == [1])
        let location = try #require(store.location(of: 1))
        #expect(location == RecordLocation(entity: 1, offset: 1024, length: 13, isPatch: true))
        // The log layer hands the base and the partial value to the engine's merge.
        let seen = LockedValue<[[UInt8]]>([])
        store.installPatchMerge(
            PatchMerge { entity, baseOffset, base, patchOffset, partial, body in
                seen.withLock {
                    $0 = [
                        [UInt8(entity)], [UInt8(baseOffset >> 8)], Array(base),
                        [UInt8(patchOffset >> 8)], Array(partial),
                    ]
                }
                try body(base)
            }
        )
        #expect(try store.readObject(1)?.payload == Array("hello".utf8))
        #expect(seen.withLock { $0 } == [[1], [2], Array("hello".utf8), [4], [0x21]])
        let inspection = try StoreInspection(path: path)
        #expect(inspection.transactions.map(\.updated) == [0, 1])
        #expect(inspection.transactions.map(\.deleted) == [0, 1])
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        // The patch's frame: type 6, flags 0, entity 1, key 1, base offset 512, base length 14, L = 1.
        #expect(Array(bytes[1028..<1037]) == [6, 0, 1, 1, 0x80, 0x04, 14, 1, 0x21])
        let json = try independentRead(path)
        let live = json["live"] as? [String: [String: Any]]
        #expect(live?["1"]?["baseValue"] as? String == "68656c6c6f")  // "hello"
        #expect(live?["1"]?["partial"] as? String == "21")
    }

    @Test("a version 1.0 store stays 1.0 when written to, and compaction upgrades it to 3.0")
    func upgradeByCompaction() throws {
        let directory = TemporaryDirectory()
        let path = try copyFixture("v1.0.olog", to: directory)
        let blob = try #require(BlobID(hex: String(repeating: "ab", count: 32)))
        do {
            let store = try LogStore.open(path: path)
            var transaction = Transaction()
            let key = store.allocateKeys(1).lowerBound
            transaction.put(key: key, entity: 3, payload: [9, 9], blobs: [blob], isInsert: true)
            try store.commit(transaction)
            #expect(store.formatVersion == "1.0")
            try store.close()
        }
        let before = try openReadOnly(path)
        #expect(before.formatVersion == "1.0")
        #expect(before.liveKeys(entity: nil) == [1, 3])
        try before.close()

        let store = try LogStore.open(path: path)
        let report = try store.compact()
        #expect(store.formatVersion == "3.0")
        #expect(report.bytesAfter < report.bytesBefore)
        try store.close()
        for usesIndex in [true, false] {
            var options = StoreOptions()
            options.readOnly = true
            options.usesIndex = usesIndex
            let reopened = try LogStore.open(path: path, options: options)
            #expect(reopened.formatVersion == "3.0")
            #expect(reopened.transactionCount == 3)
            #expect(reopened.metadata == ["author": .string("Ada")])
            #expect(try reopened.readObject(1)?.payload == Array("world".utf8))
            let third = try reopened.readObject(3)
            #expect(third?.payload == [9, 9])
            #expect(third?.blobs == [blob])
        }
    }

    @Test("an independent reader written from FORMAT.md agrees with the store")
    func independentReader() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("r.olog")
        let store = try LogStore.open(path: path)
        var generator = SeededGenerator(seed: 3)
        var expected: [String: [UInt8]] = [:]
        var expectedBlobs: [String: [String]] = [:]
        for round in 0..<30 {
            var transaction = Transaction()
            let key = store.allocateKeys(1).lowerBound
            let payload = (0..<Int.random(in: 0..<20, using: &generator)).map { _ in
                UInt8.random(in: 0...255, using: &generator)
            }
            // Every fifth put names blobs, so the reader parses blob lists too.
            let blobs = (0..<(round % 5 == 4 ? 1 + round % 3 : 0)).map { index in
                BlobID(contentsOf: [UInt8(round), UInt8(index)])
            }
            transaction.put(
                key: key,
                entity: UInt32(round % 3),
                payload: payload,
                blobs: blobs,
                isInsert: true
            )
            expected[String(key)] = payload
            expectedBlobs[String(key)] = blobs.map(\.hex)
            if round % 4 == 3 {
                transaction.delete(key: key - 2, entity: UInt32((round - 2) % 3))
                expected[String(key - 2)] = nil
                expectedBlobs[String(key - 2)] = nil
            }
            if round == 10 {
                transaction.metadata = [
                    "nested": .dictionary(["a": .array([.integer(1), .bool(true)])])
                ]
            }
            try store.commit(transaction)
            if round == 20 { try store.compact() }
        }
        try store.close()
        let json = try independentRead(path)
        let live = try #require(json["live"] as? [String: [String: Any]])
        var read: [String: [UInt8]] = [:]
        for (key, object) in live {
            let hex = Array((object["value"] as? String ?? "").utf8)
            read[key] = stride(from: 0, to: hex.count, by: 2).map {
                UInt8(String(decoding: hex[$0..<($0 + 2)], as: UTF8.self), radix: 16)!
            }
        }
        #expect(read == expected)
        #expect(live.mapValues { $0["blobs"] as? [String] ?? ["?"] } == expectedBlobs)
        #expect(json["transactionCount"] as? Int == 30)
        #expect((json["header"] as? [String: Any])?["version"] as? String == "3.0")
        let metadata = json["metadata"] as? [String: Any]
        #expect(metadata?["nested"] != nil)
    }
}

/// What `tools/olog-read.py` (the reader written from FORMAT.md alone) reads from `path`.
func independentRead(_ path: String) throws -> [String: Any] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [
        "python3", repositoryRoot.appendingPathComponent("tools/olog-read.py").path, path,
    ]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    #expect(process.terminationStatus == 0)
    return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
}

/// A copy of the committed fixture `name` in `directory`.
private func copyFixture(_ name: String, to directory: TemporaryDirectory) throws -> String {
    let path = directory.file(name)
    try FileManager.default.copyItem(
        atPath: fixtures.appendingPathComponent(name).path,
        toPath: path
    )
    return path
}

private func openReadOnly(_ path: String) throws -> LogStore {
    var options = StoreOptions()
    options.readOnly = true
    return try LogStore.open(path: path, options: options)
}
