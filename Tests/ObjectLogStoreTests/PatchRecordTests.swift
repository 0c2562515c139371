import Foundation
import TestSupport
import Testing

@testable import ObjectLogStore

/// Patch records (FORMAT.md, section 4) at the log layer, merged by a stand-in for the engine:
/// the base's value, a 0xFF byte, then the partial value.
@Suite("Patch records")
struct PatchRecordTests {
    static let merge = PatchMerge { _, _, base, _, partial, body in
        try (Array(base) + [0xFF] + Array(partial)).withUnsafeBytes { try body($0) }
    }

    /// A store at `path` with the stand-in merge, and objects 1...10 of entity 1 whose values
    /// are `[key]`.
    static func storeWithObjects(at path: String) throws -> LogStore {
        let store = try LogStore.open(path: path)
        store.installPatchMerge(merge)
        var transaction = Transaction()
        let keys = store.allocateKeys(10)
        for key in keys {
            transaction.put(key: key, entity: 1, payload: [UInt8(key)], isInsert: true)
        }
        try store.commit(transaction)
        return store
    }

    /// Patches `keys` of `store` with the partial value `[0xA0 + key]`.
    static func patch(_ keys: [ObjectKey], in store: LogStore) throws {
        var transaction = Transaction()
        for key in keys {
            let base = try #require(store.location(of: key))
            [0xA0 + UInt8(key)].withUnsafeBytes {
                transaction.patch(key: key, entity: 1, base: base, value: $0)
            }
        }
        try store.commit(transaction)
    }

    /// What every object of `store` reads as, through each read path.
    static func values(_ store: LogStore) throws -> [[ObjectKey: [UInt8]]] {
        var single: [ObjectKey: [UInt8]] = [:]
        var scoped: [ObjectKey: [UInt8]] = [:]
        for key in store.liveKeys(entity: nil) {
            single[key] = try store.readObject(key)?.payload
            _ = try store.withObject(key) { value, _, _, _ in scoped[key] = Array(value) }
        }
        var bulk: [ObjectKey: [UInt8]] = [:]
        try store.forEachLiveObject(entity: nil) { key, _, value in bulk[key] = Array(value) }
        var planned: [ObjectKey: [UInt8]] = [:]
        try store.forEachObject(keys: store.liveKeys(entity: nil)) { key, _, value in
            planned[key] = Array(value)
        }
        return [single, scoped, bulk, planned]
    }

    /// Objects 1...10 after the even ones were patched.
    static var expected: [ObjectKey: [UInt8]] {
        var values: [ObjectKey: [UInt8]] = [:]
        for key in 1...10 {
            let byte = UInt8(key)
            values[ObjectKey(key)] = key % 2 == 0 ? [byte, 0xFF, 0xA0 + byte] : [byte]
        }
        return values
    }

    @Test(
        "every read path merges a patched object, before and after a reopen with and without the index"
    )
    func readsMerge() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("p.olog")
        let store = try Self.storeWithObjects(at: path)
        #expect(store.allowsPatches)
        #expect(store.formatVersion == "3.0")
        try Self.patch([2, 4, 6, 8, 10], in: store)
        #expect(store.location(of: 2)?.isPatch == true)
        #expect(store.location(of: 3)?.isPatch == false)
        for values in try Self.values(store) { #expect(values == Self.expected) }
        try store.close()
        for usesIndex in [true, false] {
            var options = StoreOptions()
            options.usesIndex = usesIndex
            options.readOnly = true
            let reopened = try LogStore.open(path: path, options: options)
            reopened.installPatchMerge(Self.merge)
            #expect(reopened.location(of: 4)?.isPatch == true)
            for values in try Self.values(reopened) { #expect(values == Self.expected) }
            try reopened.close()
        }
    }

    @Test("a read plan reports each patched object's patch, reads its base and merges")
    func planLocations() throws {
        let directory = TemporaryDirectory()
        let store = try Self.storeWithObjects(at: directory.file("p.olog"))
        try Self.patch([3, 7], in: store)
        let plan = try store.readPlan(keys: [1, 3, 7, 9])
        let locations = Dictionary(
            uniqueKeysWithValues: plan.locations.map { ($0.key, $0.location) }
        )
        #expect(locations[3] == store.location(of: 3))
        #expect(locations[3]?.isPatch == true)
        #expect(locations[1] == store.location(of: 1))
        let offsets = Dictionary(
            uniqueKeysWithValues: plan.keysAndOffsets.map { ($0.key, $0.offset) }
        )
        #expect(offsets[7] == store.location(of: 7)?.offset)
        #expect(plan.objects(patched: true).keys.sorted() == [3, 7])
        #expect(plan.objects(patched: false).keys.sorted() == [1, 9])
        var read: [ObjectKey: [UInt8]] = [:]
        for part in store.split(plan, parts: 2) {
            try store.forEachObject(in: part) { key, _, value in read[key] = Array(value) }
        }
        #expect(read == [1: [1], 3: [3, 0xFF, 0xA3], 7: [7, 0xFF, 0xA7], 9: [9]])
    }

    @Test("without the engine's merge a patched object is refused with a message, not misread")
    func refusedWithoutMerge() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("p.olog")
        let store = try Self.storeWithObjects(at: path)
        try Self.patch([5], in: store)
        store.installPatchMerge(nil)
        #expect(try store.readObject(4)?.payload == [4])
        let error = #expect(throws: StoreError.self) { try store.readObject(5) }
        #expect(error?.message.contains("only the object engine can read") == true)
        #expect(throws: StoreError.self) { try store.forEachLiveObject(entity: nil) { _, _, _ in } }
        let size = store.fileBytes
        #expect(throws: StoreError.self) { try store.compact() }
        #expect(store.fileBytes == size)
        #expect(store.location(of: 5)?.isPatch == true)
    }

    @Test("the commit refuses a patch whose base is not its key's record, and writes nothing")
    func commitChecksBases() throws {
        let directory = TemporaryDirectory()
        let store = try Self.storeWithObjects(at: directory.file("p.olog"))
        let oldBase = try #require(store.location(of: 1))
        var update = Transaction()
        update.put(key: 1, entity: 1, payload: [42], isInsert: false)
        try store.commit(update)
        try Self.patch([2], in: store)
        let size = store.fileBytes
        func refused(_ build: (inout Transaction) throws -> Void) throws {
            var transaction = Transaction()
            try build(&transaction)
            #expect(throws: StoreError.self) { try store.commit(transaction) }
            #expect(store.fileBytes == size)
        }
        let partial: [UInt8] = [7]
        // A base the key has left behind.
        try refused { transaction in
            partial.withUnsafeBytes {
                transaction.patch(key: 1, entity: 1, base: oldBase, value: $0)
            }
        }
        // A key whose record is a patch.
        let patched = try #require(store.location(of: 2))
        try refused { transaction in
            partial.withUnsafeBytes {
                transaction.patch(key: 2, entity: 1, base: patched, value: $0)
            }
        }
        // A key this transaction changed before.
        let base = try #require(store.location(of: 3))
        try refused { transaction in
            transaction.put(key: 3, entity: 1, payload: [3], isInsert: false)
            partial.withUnsafeBytes { transaction.patch(key: 3, entity: 1, base: base, value: $0) }
        }
        try refused { transaction in
            transaction.delete(key: 3, entity: 1)
            partial.withUnsafeBytes { transaction.patch(key: 3, entity: 1, base: base, value: $0) }
        }
        // Another entity's base.
        try refused { transaction in
            var other = base
            other.entity = 2
            partial.withUnsafeBytes { transaction.patch(key: 3, entity: 2, base: other, value: $0) }
        }
        #expect(try store.readObject(3)?.payload == [3])
    }

    @Test("a version 2.0 store takes no patch until compaction makes it 3.0")
    func version2TakesNoPatch() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("v2.0.olog")
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/v2.0.olog")
        try FileManager.default.copyItem(atPath: fixture.path, toPath: path)
        let store = try LogStore.open(path: path)
        store.installPatchMerge(Self.merge)
        #expect(!store.allowsPatches)
        let base = try #require(store.location(of: 1))
        var transaction = Transaction()
        [UInt8(1)].withUnsafeBytes { transaction.patch(key: 1, entity: 1, base: base, value: $0) }
        let size = store.fileBytes
        let error = #expect(throws: StoreError.self) { try store.commit(transaction) }
        #expect(error?.message.contains("compaction upgrades it") == true)
        #expect(store.fileBytes == size)
        try store.compact()
        #expect(store.formatVersion == "3.0")
        #expect(store.allowsPatches)
        var again = Transaction()
        let newBase = try #require(store.location(of: 1))
        [UInt8(1)].withUnsafeBytes { again.patch(key: 1, entity: 1, base: newBase, value: $0) }
        try store.commit(again)
        let merged = try store.readObject(1)?.payload
        #expect(merged == Array("world".utf8) + [0xFF, 1], "\(String(describing: merged))")
    }

    @Test("compaction writes each patched object as a put of its merged value, in log order")
    func compactionMerges() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("p.olog")
        let store = try Self.storeWithObjects(at: path)
        try Self.patch([2, 4, 6, 8, 10], in: store)
        // Updated after the patches: its record is the last before compaction.
        var update = Transaction()
        update.put(key: 1, entity: 1, payload: [1], isInsert: false)
        try store.commit(update)
        let before = try #require(store.location(of: 4)).offset
        let bound = try #require(store.location(of: 1)).offset
        try store.compact()
        for key in store.liveKeys(entity: nil) {
            #expect(store.location(of: key)?.isPatch == false)
        }
        for values in try Self.values(store) { #expect(values == Self.expected) }
        // Positions keep their order: the patch's old offset maps where its put went.
        let generation = store.generation - 1
        #expect(
            store.translateOffset(before, from: generation, exact: true)
                == store.location(of: 4)?.offset
        )
        let translatedBound = try #require(
            store.translateOffset(bound, from: generation, exact: true)
        )
        #expect(try #require(store.location(of: 10)).offset < translatedBound)
        try store.close()
        var options = StoreOptions()
        options.readOnly = true
        let reopened = try LogStore.open(path: path, options: options)
        // No merge needed now: the file holds puts only.
        #expect(try snapshot(reopened) == Self.expected)
        try reopened.close()
    }

    @Test("blobs of a patched object are its base's, kept by compaction")
    func blobsFollowTheBase() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("p.olog")
        let store = try LogStore.open(path: path)
        store.installPatchMerge(Self.merge)
        let blob = try store.writeBlob(Data(repeating: 7, count: 100))
        var insert = Transaction()
        let key = store.allocateKeys(1).lowerBound
        insert.put(key: key, entity: 1, payload: [1], blobs: [blob], isInsert: true)
        try store.commit(insert)
        try Self.patch([key], in: store)
        #expect(try store.readObject(key)?.blobs == [blob])
        _ = try store.withObject(key) { _, blobs, _, _ in #expect(blobs == [blob]) }
        try store.compact()
        #expect(try store.readObject(key)?.blobs == [blob])
        #expect(try store.readBlob(blob) == Data(repeating: 7, count: 100))
    }

    /// Appends to the closed store at `path` a transaction of `records` (whole records, framed)
    /// numbered `number`, as a writer would frame it; its commit names the record at index
    /// `metadataRecord` as the latest metadata.
    static func appendTransaction(
        _ records: [[UInt8]],
        number: UInt64,
        nextKey: UInt64,
        metadataRecord: Int? = nil,
        to path: String
    ) {
        var bytes = readBytes(path)
        let start = UInt64(bytes.count)
        let metadataOffset = metadataRecord.map { index in
            start + UInt64(records[..<index].reduce(0) { $0 + $1.count })
        }
        var writer = ByteWriter()
        for record in records { writer.append(contentsOf: record) }
        var count = UInt32(records.count)
        let before = writer.count
        RecordLayout.compact.appendPaddingBeforeCommit(base: start, into: &writer)
        if writer.count != before { count += 1 }
        RecordLayout.compact.appendCommit(
            number: number,
            flags: 0,
            CommitPayload(
                timestampMicroseconds: 0,
                firstRecordOffset: start,
                recordCount: count,
                inserted: 0,
                updated: UInt32(records.count),
                deleted: 0,
                metadataOffset: metadataOffset ?? 0,
                nextKey: nextKey
            ),
            into: &writer
        )
        bytes += writer.bytes
        writeBytes(bytes, to: path)
    }

    /// A whole patch record.
    static func patchRecord(key: ObjectKey, base: RecordLocation, value: [UInt8]) -> [UInt8] {
        let length = RecordLayout.patchLength(
            key: key,
            entity: base.entity,
            base: base,
            valueCount: value.count
        )
        var record = [UInt8](repeating: 0, count: length)
        record.withUnsafeMutableBytes { record in
            value.withUnsafeBytes {
                RecordLayout.storePatch(
                    key: key,
                    entity: base.entity,
                    base: base,
                    value: $0,
                    in: record,
                    tables: CRC32.lookupTables
                )
            }
        }
        return record
    }

    @Test(
        "a patch whose base is not its key's record damages its transaction for the replay, salvage, inspection and the independent reader alike",
        arguments: ["stale base", "patch of a patch", "wrong length", "deleted key"]
    )
    func misplacedPatchIsDamage(_ kind: String) throws {
        let directory = TemporaryDirectory()
        let path = directory.file("p.olog")
        let store = try Self.storeWithObjects(at: path)
        let oldBase = try #require(store.location(of: 1))
        var update = Transaction()
        update.put(key: 1, entity: 1, payload: [21], isInsert: false)
        update.delete(key: 9, entity: 1)
        try store.commit(update)
        try Self.patch([2], in: store)
        var base = try #require(store.location(of: 1))
        let key: ObjectKey
        switch kind {
        case "stale base": (key, base) = (1, oldBase)
        case "patch of a patch": (key, base) = (2, try #require(store.location(of: 2)))
        case "wrong length": (key, base.length) = (1, base.length + 1)
        default: (key, base) = (9, oldBase)
        }
        base.isPatch = false
        let number = store.transactionCount
        let nextKey = store.allocateKeys(1).upperBound
        try store.close()
        var writer = ByteWriter()
        [UInt8(33)].withUnsafeBytes { value in
            RecordLayout.compact.appendPut(
                key: 3,
                entity: 1,
                isInsert: false,
                blobs: [],
                value: value,
                into: &writer
            )
        }
        let goodPut = writer.bytes
        Self.appendTransaction(
            [goodPut, Self.patchRecord(key: key, base: base, value: [0xEE])],
            number: number + 1,
            nextKey: nextKey,
            to: path
        )
        // A later intact transaction makes the damage corruption, not a torn tail.
        Self.appendTransaction([goodPut], number: number + 2, nextKey: nextKey, to: path)

        #expect(throws: StoreError.self) { try LogStore.open(path: path) }
        var options = StoreOptions()
        options.salvage = true
        let salvaged = try LogStore.open(path: path, options: options)
        salvaged.installPatchMerge(Self.merge)
        // The damaged transaction is dropped whole; the one after it is kept.
        #expect(try salvaged.readObject(1)?.payload == [21])
        #expect(try salvaged.readObject(3)?.payload == [33])
        #expect(salvaged.location(of: 9) == nil)
        #expect(try salvaged.readObject(2)?.payload == [2, 0xFF, 0xA2])
        #expect(salvaged.salvageReport?.isEmpty == false)
        try salvaged.close()

        let inspection = try StoreInspection(path: path)
        #expect(inspection.problems.contains { $0.message.contains("patch of key \(key)") })
        #expect(inspection.liveObjects[1]?.isPatch == false)

        let json = try independentRead(path)
        let damage = json["damage"] as? [String: Any]
        #expect(damage != nil, "the independent reader finds no damage: \(json)")
    }

    @Test("the independent reader lists a patched object's base value and partial value")
    func independentReaderSeesPatches() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("p.olog")
        let store = try Self.storeWithObjects(at: path)
        try Self.patch([4, 5], in: store)
        try store.close()
        let json = try independentRead(path)
        #expect((json["header"] as? [String: Any])?["version"] as? String == "3.0")
        let live = try #require(json["live"] as? [String: [String: Any]])
        #expect(live["3"]?["value"] as? String == "03")
        #expect(live["4"]?["patch"] as? Bool == true)
        #expect(live["4"]?["baseValue"] as? String == "04")
        #expect(live["4"]?["partial"] as? String == "a4")
        #expect(live["5"]?["partial"] as? String == "a5")
        #expect(live["4"]?["value"] == nil)
    }

    @Test(
        "a patch record in a version 2.0 file, or naming a base that does not lie before it, is damage"
    )
    func patchFramesOutOfPlace() throws {
        for kind in ["version 2", "base after"] {
            let directory = TemporaryDirectory()
            let path = directory.file("p.olog")
            let base: RecordLocation
            let number: UInt64
            let nextKey: UInt64
            if kind == "version 2" {
                let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                    .appendingPathComponent("Fixtures/v2.0.olog")
                try FileManager.default.copyItem(atPath: fixture.path, toPath: path)
                let store = try LogStore.open(path: path)
                base = try #require(store.location(of: 1))
                (number, nextKey) = (store.transactionCount, store.allocateKeys(1).upperBound)
                try store.close()
            } else {
                let store = try Self.storeWithObjects(at: path)
                var location = try #require(store.location(of: 1))
                // A base where the file ends: after the patch.
                location.offset = store.fileBytes
                base = location
                (number, nextKey) = (store.transactionCount, store.allocateKeys(1).upperBound)
                try store.close()
            }
            Self.appendTransaction(
                [Self.patchRecord(key: 1, base: base, value: [0xEE])],
                number: number + 1,
                nextKey: nextKey,
                to: path
            )
            // A later intact transaction makes it corruption, not a torn tail.
            Self.appendTransaction([], number: number + 2, nextKey: nextKey, to: path)
            let error = #expect(throws: StoreError.self, "\(kind)") {
                try LogStore.open(path: path)
            }
            #expect(error?.code == .corrupt, "\(kind)")
            let expected = kind == "version 2" ? "format version 1 or 2" : "does not lie before it"
            #expect(
                error?.message.contains(expected) == true,
                "\(kind): \(String(describing: error))"
            )
            let json = try independentRead(path)
            #expect(json["damage"] as? [String: Any] != nil, "\(kind)")
        }
    }

    @Test("a key directory that is a hash table reads patched objects alike, scan after scan")
    func hashDirectory() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("p.olog")
        let store = try LogStore.open(path: path)
        store.installPatchMerge(Self.merge)
        var insert = Transaction()
        let keys = store.allocateKeys(5_000)
        for key in keys {
            insert.put(key: key, entity: 1, payload: [UInt8(key % 251)], isInsert: true)
        }
        try store.commit(insert)
        // Fewer than one key in eight left live: the directory becomes a hash table.
        var deletes = Transaction()
        for key in keys where key % 10 != 0 { deletes.delete(key: key, entity: 1) }
        try store.commit(deletes)
        let live = store.liveKeys(entity: nil)
        #expect(live.count == 500)
        #expect(store.locked { !store.state.live.isDense })
        let patched = live.filter { $0 % 20 == 0 }
        var transaction = Transaction()
        for key in patched {
            let base = try #require(store.location(of: key))
            [UInt8(key % 7)].withUnsafeBytes {
                transaction.patch(key: key, entity: 1, base: base, value: $0)
            }
        }
        try store.commit(transaction)
        var expected: [ObjectKey: [UInt8]] = [:]
        for key in live {
            expected[key] =
                key % 20 == 0 ? [UInt8(key % 251), 0xFF, UInt8(key % 7)] : [UInt8(key % 251)]
        }
        // Twice: the second scan takes the patches the first read.
        for _ in 0..<2 {
            for values in try Self.values(store) { #expect(values == expected) }
        }
        try store.close()
        let reopened = try LogStore.open(path: path)
        reopened.installPatchMerge(Self.merge)
        for values in try Self.values(reopened) { #expect(values == expected) }
        try reopened.close()
    }

    @Test("a salvage drops a patch whose base a dropped transaction wrote, and keeps what follows")
    func salvageDropsOrphanedPatch() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("p.olog")
        let store = try Self.storeWithObjects(at: path)
        let original = try #require(store.location(of: 1))
        var update = Transaction()
        update.put(key: 1, entity: 1, payload: [41], isInsert: false)
        try store.commit(update)
        let base = try #require(store.location(of: 1))
        try Self.patch([1], in: store)
        var later = Transaction()
        later.put(key: 3, entity: 1, payload: [43], isInsert: false)
        try store.commit(later)
        try store.close()
        // Damage the put the patch names: its transaction is dropped, and with it the patch's.
        var bytes = readBytes(path)
        bytes[Int(base.offset) + Int(base.length) - 1] ^= 0xFF
        writeBytes(bytes, to: path)
        // A replay of the whole log finds the damage (an open through the index would find it
        // when the object is read).
        var replaying = StoreOptions()
        replaying.usesIndex = false
        #expect(throws: StoreError.self) { try LogStore.open(path: path, options: replaying) }
        var options = StoreOptions()
        options.salvage = true
        let salvaged = try LogStore.open(path: path, options: options)
        salvaged.installPatchMerge(Self.merge)
        #expect(try salvaged.readObject(1)?.payload == [1])
        #expect(salvaged.location(of: 1)?.isPatch == false)
        #expect(try salvaged.readObject(3)?.payload == [43])
        #expect(salvaged.salvageReport?.isEmpty == false)
        try salvaged.close()
        let inspection = try StoreInspection(path: path)
        #expect(inspection.liveObjects[1] == original)
        let json = try independentRead(path)
        #expect((json["live"] as? [String: [String: Any]])?["1"]?["value"] as? String == "01")
    }

    /// A store of objects 1...10 whose last transaction patches object 1 with a base that is
    /// not its record (its stale first version), every record and the commit intact.
    static func storeEndingInWrongBase(at path: String) throws -> (number: UInt64, patch: UInt64) {
        let store = try storeWithObjects(at: path)
        let oldBase = try #require(store.location(of: 1))
        var update = Transaction()
        update.put(key: 1, entity: 1, payload: [21], isInsert: false)
        try store.commit(update)
        let number = store.transactionCount
        let nextKey = store.allocateKeys(1).upperBound
        let patchOffset = store.fileBytes
        try store.close()
        appendTransaction(
            [patchRecord(key: 1, base: oldBase, value: [0xEE])],
            number: number + 1,
            nextKey: nextKey,
            to: path
        )
        return (number, patchOffset)
    }

    @Test(
        "a wrong patch base in the last transaction, every record and the commit intact, is corruption: no open cuts it"
    )
    func wrongBaseInWholeLastTransaction() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("p.olog")
        let (number, patchOffset) = try Self.storeEndingInWrongBase(at: path)
        let bytes = readBytes(path)
        let inspection = try StoreInspection(path: path)
        #expect(inspection.damage?.kind == .corrupt)
        #expect(inspection.damage?.offset == patchOffset)
        // A writer's open refuses, and cuts nothing.
        let error = #expect(throws: StoreError.self) { try LogStore.open(path: path) }
        #expect(error?.code == .corrupt)
        #expect(error?.message.contains("every record and commit are intact") == true)
        #expect(readBytes(path) == bytes)
        var readOnly = StoreOptions()
        readOnly.readOnly = true
        #expect(throws: StoreError.self) { try LogStore.open(path: path, options: readOnly) }
        // A salvage drops the transaction after its intact commit, whose number counts.
        var salvage = StoreOptions()
        salvage.salvage = true
        let salvaged = try LogStore.open(path: path, options: salvage)
        salvaged.installPatchMerge(Self.merge)
        #expect(try salvaged.readObject(1)?.payload == [21])
        #expect(salvaged.transactionCount == number + 1)
        try salvaged.close()
        #expect(readBytes(path) == bytes)
        let json = try independentRead(path)
        #expect((json["damage"] as? [String: Any])?["offset"] as? Int == Int(patchOffset))
    }

    @Test("the same transaction cut short is a torn tail, which a writer's open cuts")
    func wrongBaseInTornLastTransaction() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("p.olog")
        let (_, patchOffset) = try Self.storeEndingInWrongBase(at: path)
        // Without the end of its commit record, the transaction was not written whole.
        let bytes = readBytes(path)
        writeBytes(Array(bytes.dropLast(8)), to: path)
        let inspection = try StoreInspection(path: path)
        #expect(inspection.damage?.kind == .tornTail)
        #expect(inspection.damage?.validEnd == patchOffset)
        let store = try LogStore.open(path: path)
        #expect(store.fileBytes == patchOffset)
        try store.close()
    }

    @Test(
        "the metadata read without a replay refuses a patch whose base does not lie before it, and cannot see a base that is not its key's record"
    )
    func metadataReadAndPatchBases() throws {
        for kind in ["base after", "stale base"] {
            let directory = TemporaryDirectory()
            let path = directory.file("p.olog")
            let store = try Self.storeWithObjects(at: path)
            var first = Transaction()
            first.metadata = ["v": .integer(1)]
            try store.commit(first)
            var base = try #require(store.location(of: 1))
            var update = Transaction()
            update.put(key: 1, entity: 1, payload: [21], isInsert: false)
            try store.commit(update)
            if kind == "base after" { base.offset = store.fileBytes + 4096 }
            let number = store.transactionCount
            let nextKey = store.allocateKeys(1).upperBound
            try store.close()
            let metadata = MetadataCoding.encode(["v": .integer(2)])
            var writer = ByteWriter()
            metadata.withUnsafeBytes { RecordLayout.compact.appendMetadata($0, into: &writer) }
            Self.appendTransaction(
                [writer.bytes, Self.patchRecord(key: 1, base: base, value: [0xEE])],
                number: number + 1,
                nextKey: nextKey,
                metadataRecord: 0,
                to: path
            )
            var salvage = StoreOptions()
            salvage.salvage = true
            let salvaged = try LogStore.open(path: path, options: salvage)
            #expect(salvaged.metadata == ["v": .integer(1)], "\(kind)")
            try salvaged.close()
            // A base after the patch is a fault of the record itself, which the read checks; a
            // base that is not the key's record is seen only by a replay.
            let expected: MetadataValue = .integer(kind == "base after" ? 1 : 2)
            #expect(try LogStore.readMetadata(path: path)["v"] == expected, "\(kind)")
        }
    }
}
