import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ObjectLogStore

@Suite("Store basics")
struct LogStoreTests {
    @Test(
        "a delete in a transaction sees the transaction's own earlier puts and deletes of its key",
        arguments: [false, true]
    )
    func deletesFollowTheTransaction(sparseKeys: Bool) throws {
        let options = StoreOptions(fileSystem: MemoryFileSystem())
        let store = try LogStore.open(path: "/deletes.olog", options: options)
        // Keys far beyond the few live ones are tracked by hashing, dense ones by bits.
        if sparseKeys { _ = store.allocateKeys(200_000) }
        let keys = Array(store.allocateKeys(5))
        var first = Transaction()
        for key in keys[0..<2] { first.put(key: key, entity: 1, payload: [1], isInsert: true) }
        try store.commit(first)
        // keys[0] and keys[1] are live, keys[2...] never were.
        var second = Transaction()
        second.delete(key: keys[0], entity: 1)
        second.delete(key: keys[0], entity: 1)  // no longer live: skipped
        second.put(key: keys[0], entity: 1, payload: [2], isInsert: false)
        second.delete(key: keys[0], entity: 1)
        second.delete(key: keys[2], entity: 1)  // not live yet: skipped
        second.put(key: keys[2], entity: 1, payload: [3], isInsert: true)
        second.delete(key: keys[2], entity: 1)
        second.put(key: keys[1], entity: 1, payload: [4], isInsert: false)
        second.delete(key: keys[1], entity: 1)
        second.delete(key: keys[3], entity: 1)  // never live: skipped
        second.put(key: keys[4], entity: 1, payload: [5], isInsert: true)
        let info = try store.commit(second)
        #expect(info.deleted == 4)
        #expect(info.inserted == 2 && info.updated == 2)
        #expect(try snapshot(store) == [keys[4]: [5]])
        try store.close()
        // The log says the same when replayed.
        let reopened = try LogStore.open(path: "/deletes.olog", options: options)
        #expect(try snapshot(reopened) == [keys[4]: [5]])
        try reopened.close()
    }

    @Test(
        "loading one object reads exactly its record, checks it, and reports damage with its offset"
    )
    func withObjectReadsOneRecord() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("one.olog")
        let store = try LogStore.open(path: path)
        let keys = store.allocateKeys(3)
        var transaction = Transaction()
        transaction.put(key: keys.lowerBound, entity: 4, payload: [1, 2, 3], isInsert: true)
        let blob = try store.writeBlob(Data(repeating: 5, count: 10))
        transaction.put(
            key: keys.lowerBound + 1,
            entity: 4,
            payload: Array(repeating: 9, count: 300),
            blobs: [blob],
            isInsert: true
        )
        try store.commit(transaction)
        var seen: [([UInt8], [BlobID], UInt64)] = []
        for key in keys {
            let found = try store.withObject(key) { value, blobs, location, generation in
                #expect(generation == store.generation)
                #expect(store.location(of: key) == location)
                seen.append((Array(value), blobs, location.offset))
            }
            #expect(found == (key != keys.lowerBound + 2))
        }
        #expect(seen.map(\.0) == [[1, 2, 3], Array(repeating: 9, count: 300)])
        #expect(seen.map(\.1) == [[], [blob]])
        // A flipped bit in the second record's value is reported at that record's offset.
        let offset = seen[1].2
        try store.close()
        var bytes = readBytes(path)
        bytes[Int(offset) + 40] ^= 0x10
        writeBytes(bytes, to: path)
        var options = StoreOptions()
        options.readOnly = true
        options.usesIndex = true
        // The damage is to be met when the object is read, not at the open.
        options.checksLastIndexedTransaction = false
        let damaged = try LogStore.open(path: path, options: options)
        var intact: [UInt8] = []
        let foundIntact = try damaged.withObject(keys.lowerBound) { value, _, _, _ in
            intact = Array(value)
        }
        #expect(foundIntact && intact == [1, 2, 3])
        do {
            _ = try damaged.withObject(keys.lowerBound + 1) { _, _, _, _ in
                Issue.record("a damaged record was handed out")
            }
            Issue.record("a damaged record loaded without an error")
        } catch let error as StoreError {
            #expect(error.code == .corrupt)
            #expect(error.offset == offset)
        }
    }

    @Test(
        "loads going forward through the file read ahead, yet check every record and see new ones"
    )
    func forwardLoads() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("forward.olog")
        let store = try LogStore.open(path: path)
        let keys = store.allocateKeys(2000)
        var expected: [ObjectKey: [UInt8]] = [:]
        func payload(_ key: ObjectKey, _ version: UInt8) -> [UInt8] {
            (0..<Int(key % 200 + 1)).map { UInt8(truncatingIfNeeded: $0) &+ version }
        }
        for half in [keys.prefix(1000), keys.suffix(1000)] {
            var transaction = Transaction()
            for key in half {
                expected[key] = payload(key, 0)
                transaction.put(key: key, entity: 1, payload: expected[key]!, isInsert: true)
            }
            try store.commit(transaction)
        }
        func load(_ key: ObjectKey) throws -> [UInt8]? {
            var value: [UInt8]?
            _ = try store.withObject(key) { bytes, _, _, _ in value = Array(bytes) }
            return value
        }
        for order in [Array(keys).filter { $0 % 3 == 0 }, Array(keys.reversed()), Array(keys)] {
            for key in order { #expect(try load(key) == expected[key], "key \(key)") }
        }
        // New values are appended after every window read so far; loads see them.
        var transaction = Transaction()
        for key in keys where key % 7 == 0 {
            expected[key] = payload(key, 1)
            transaction.put(key: key, entity: 1, payload: expected[key]!, isInsert: false)
        }
        try store.commit(transaction)
        for key in keys { #expect(try load(key) == expected[key], "key \(key) after the update") }
        // A damaged record inside a window read ahead is still caught, at its own offset.
        let victim = keys.lowerBound + 500
        let offset = try #require(store.location(of: victim)).offset
        try store.close()
        var bytes = readBytes(path)
        bytes[Int(offset) + 8] ^= 0x01
        writeBytes(bytes, to: path)
        var options = StoreOptions()
        options.readOnly = true
        let damaged = try LogStore.open(path: path, options: options)
        for key in keys.prefix(1000) {
            do {
                var value: [UInt8]?
                _ = try damaged.withObject(key) { bytes, _, _, _ in value = Array(bytes) }
                #expect(key != victim, "the damaged record loaded")
                #expect(value == expected[key])
            } catch let error as StoreError {
                #expect(key == victim && error.code == .corrupt && error.offset == offset)
            }
        }
    }

    @Test(
        "a load of every live object reads each once across many windows, including records that straddle a window's end or exceed one, and reports damage in a later window"
    )
    func fullLoadAcrossWindows() throws {
        let fileSystem = MemoryFileSystem()
        let path = "/windows.olog"
        // 16 KiB windows (1 MiB by default), each read with 64 KiB more for the records that
        // start in it and end past it.
        var options = StoreOptions(fileSystem: fileSystem)
        options.bulkReadWindowShift = 14
        let store = try LogStore.open(path: path, options: options)
        // Sizes cycle through small records, records of a few KiB, records that span
        // windows, and records larger than a window and its spill, which are read alone.
        let sizes = [40, 3_000, 20_000, 500, 90_000, 9_000]
        var expected: [ObjectKey: [UInt8]] = [:]
        // About 1 MB in all: some 60 windows.
        for round in 0..<3 {
            let keys = Array(store.allocateKeys(40))
            var transaction = Transaction()
            for (index, key) in keys.enumerated() {
                let count = sizes[(index + round) % sizes.count]
                // Filled with the key's low byte, and its last byte set apart, so that a
                // payload delivered for the wrong key or cut short does not compare equal.
                var payload = [UInt8](repeating: UInt8(truncatingIfNeeded: key), count: count)
                payload[count - 1] = UInt8(truncatingIfNeeded: key >> 8) ^ 0x5A
                transaction.put(key: key, entity: UInt32(key % 2), payload: payload, isInsert: true)
                expected[key] = payload
            }
            try store.commit(transaction)
        }
        // Update some earlier objects: only their latest record is live.
        var updates = Transaction()
        for key in expected.keys.sorted().prefix(30) {
            let payload = [UInt8](repeating: UInt8(truncatingIfNeeded: key), count: 90)
            updates.put(key: key, entity: UInt32(key % 2), payload: payload, isInsert: false)
            expected[key] = payload
        }
        try store.commit(updates)

        var seen: [ObjectKey: [UInt8]] = [:]
        try store.forEachLiveObject(entity: nil) { key, entity, payload in
            #expect(seen[key] == nil, "key \(key) delivered twice")
            #expect(entity == UInt32(key % 2))
            seen[key] = Array(payload)
        }
        #expect(seen.count == expected.count)
        #expect(seen == expected)
        var odd = 0
        try store.forEachLiveObject(entity: 1) { key, _, payload in
            #expect(key % 2 == 1)
            #expect(Array(payload) == expected[key])
            odd += 1
        }
        #expect(odd == expected.keys.filter { $0 % 2 == 1 }.count)
        try store.close()

        // A flipped bit in a small record well into the log is reported at its offset.
        let reopened = try LogStore.open(path: path, options: options)
        let target = try #require(
            expected.keys.sorted().first { key in
                guard let location = reopened.location(of: key) else { return false }
                return location.offset > 400 << 10 && location.length < 1_000
            }
        )
        let location = try #require(reopened.location(of: target) as RecordLocation?)
        try reopened.close()
        let file = try fileSystem.open(path, mode: .readWrite)
        let at = location.offset + UInt64(location.length) - 1
        var byte = try file.read(at: at, count: 1)
        byte[0] ^= 0x10
        try file.write(byte, at: at)
        file.close()
        var readOnly = options
        readOnly.readOnly = true
        readOnly.checksLastIndexedTransaction = false
        let damaged = try LogStore.open(path: path, options: readOnly)
        #expect {
            try damaged.forEachLiveObject(entity: nil) { _, _, _ in }
        } throws: { error in
            (error as? StoreError)?.code == .corrupt
                && (error as? StoreError)?.offset == location.offset
        }
    }

    @Test(
        "live keys come back in ascending order whether they fill their range (read from a bitmap) or are sparse in it (radix-sorted)"
    )
    func liveKeysDenseAndSparse() throws {
        let store = try LogStore.open(
            path: "/keys.olog",
            options: StoreOptions(fileSystem: MemoryFileSystem())
        )
        var expected: [EntityTag: Set<ObjectKey>] = [:]
        func check() {
            for entity: EntityTag in 0..<4 {
                #expect(store.liveKeys(entity: entity) == expected[entity, default: []].sorted())
            }
            let all = expected.values.reduce(into: Set<ObjectKey>()) { $0.formUnion($1) }
            #expect(store.liveKeys(entity: nil) == all.sorted())
        }
        // Dense: three entities interleaved over 5,000 keys, then every seventh deleted.
        var transaction = Transaction()
        for key in store.allocateKeys(5_000) {
            let entity = EntityTag(key % 3)
            transaction.put(key: key, entity: entity, payload: [1], isInsert: true)
            expected[entity, default: []].insert(key)
        }
        try store.commit(transaction)
        var deletes = Transaction()
        for key in stride(from: ObjectKey(7), through: 5_000, by: 7) {
            let entity = EntityTag(key % 3)
            deletes.delete(key: key, entity: entity)
            expected[entity]?.remove(key)
        }
        try store.commit(deletes)
        check()
        // Sparse: ten objects of another entity spread over a million keys, so that entity's
        // keys are too few for a bitmap of the range.
        let range = store.allocateKeys(1_000_000)
        var sparse = Transaction()
        for index in 0..<10 {
            let key = range.lowerBound + ObjectKey(index * 99_991)
            sparse.put(key: key, entity: 3, payload: [2], isInsert: true)
            expected[3, default: []].insert(key)
        }
        try store.commit(sparse)
        check()
        try store.close()
    }

    @Test(
        "plans of the live objects for several threads hold each record once, in log order, cut between windows, and can be read at once"
    )
    func liveObjectPlans() throws {
        let fileSystem = MemoryFileSystem()
        var options = StoreOptions(fileSystem: fileSystem)
        // 4 KiB windows: about 60 for these records.
        options.bulkReadWindowShift = 12
        let store = try LogStore.open(path: "/plans.olog", options: options)
        for round in 0..<4 {
            var transaction = Transaction()
            for key in store.allocateKeys(500) {
                let payload = [UInt8](repeating: UInt8(truncatingIfNeeded: key), count: 60 + round)
                transaction.put(key: key, entity: UInt32(key % 3), payload: payload, isInsert: true)
            }
            try store.commit(transaction)
        }
        var inLogOrder: [ObjectKey] = []
        try store.forEachLiveObject(entity: 1) { key, _, _ in inLogOrder.append(key) }
        #expect(inLogOrder.count > 600)

        for parts in [1, 2, 3] {
            let plans = try store.liveObjectPlans(entity: 1, parts: parts)
            #expect(plans.count == parts)
            var keys: [[ObjectKey]] = []
            for plan in plans {
                var part: [ObjectKey] = []
                try store.forEachObject(in: plan) { key, entity, payload in
                    #expect(
                        entity == 1 && payload.allSatisfy { $0 == UInt8(truncatingIfNeeded: key) }
                    )
                    part.append(key)
                }
                #expect(part.count == plan.count)
                keys.append(part)
            }
            #expect(Array(keys.joined()) == inLogOrder)
            for part in keys {
                // Near an equal share: a cut moves at most a quarter of a share to a window.
                #expect(
                    abs(part.count - inLogOrder.count / parts) <= inLogOrder.count / (4 * parts) + 1
                )
            }
            for (before, after) in zip(keys, keys.dropFirst()) {
                let last = try #require(store.location(of: before.last!) as RecordLocation?)
                let first = try #require(store.location(of: after.first!) as RecordLocation?)
                #expect(last.offset >> 12 != first.offset >> 12, "a window read by two plans")
            }
        }

        // Read at once from two threads.
        let plans = try store.liveObjectPlans(entity: 1, parts: 2)
        let seen = Mutex<[[ObjectKey]]>([[], []])
        DispatchQueue.concurrentPerform(iterations: plans.count) { part in
            var keys: [ObjectKey] = []
            try? store.forEachObject(in: plans[part]) { key, _, _ in keys.append(key) }
            seen.withLock { $0[part] = keys }
        }
        #expect(Array(seen.withLock { $0 }.joined()) == inLogOrder)

        #expect(try store.liveObjectPlans(entity: 7, parts: 2).isEmpty)
        try store.close()
    }

    @Test(
        "records served from the read-ahead window are checked: another key, another type or a bad checksum is refused at its offset"
    )
    func windowRecordsAreChecked() throws {
        let fileSystem = ReadCountingFileSystem()
        let path = "/window.olog"
        let store = try LogStore.open(path: path, options: StoreOptions(fileSystem: fileSystem))
        let keys = Array(store.allocateKeys(1000))
        var transaction = Transaction()
        for key in keys {
            let payload = (0..<Int(key % 80 + 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            transaction.put(key: key, entity: 1, payload: payload, isInsert: true)
        }
        try store.commit(transaction)
        var expected: [ObjectKey: [UInt8]] = [:]
        var locations: [ObjectKey: RecordLocation] = [:]
        for key in keys {
            let object = try #require(try store.readObject(key))
            let location = try #require(store.location(of: key) as RecordLocation?)
            expected[key] = object.payload
            locations[key] = location
        }
        try store.close()

        // Three kinds of damage, each in records spread over the whole log. The first two
        // carry a valid checksum, so only the frame checks can catch them.
        enum Damage { case otherKey, otherType, badChecksum }
        func damage(of index: Int) -> Damage? {
            switch index % 10 {
            case 3: .otherKey
            case 6: .otherType
            case 9: .badChecksum
            default: nil
            }
        }
        func varint(_ value: UInt64) -> [UInt8] {
            var value = value
            var bytes: [UInt8] = []
            while value >= 0x80 {
                bytes.append(UInt8(value & 0x7F) | 0x80)
                value >>= 7
            }
            return bytes + [UInt8(value)]
        }
        let file = try fileSystem.open(path, mode: .readWrite)
        var bytes = try file.read(at: 0, count: Int(file.size()))
        for (index, key) in keys.enumerated() {
            guard let kind = damage(of: index) else { continue }
            let location = try #require(locations[key])
            let start = Int(location.offset)
            let end = start + Int(location.length)
            switch kind {
            case .otherKey:
                // Compact frame: checksum 4, type 1, flags 1, entity 1 (tag 1), then the key.
                // Flipping its lowest bit keeps the varint's length.
                let (old, new) = (varint(key), varint(key ^ 1))
                #expect(Array(bytes[(start + 7)..<(start + 7 + old.count)]) == old)
                bytes.replaceSubrange((start + 7)..<(start + 7 + new.count), with: new)
            case .otherType:
                bytes[start + 4] = RecordType.delete.rawValue
            case .badChecksum:
                bytes[end - 1] ^= 0x40
            }
            if kind != .badChecksum {
                let checksum = bytes[start..<end].withUnsafeBytes {
                    RecordFrame.checksum(of: UnsafeRawBufferPointer(rebasing: $0[...]))
                }
                withUnsafeBytes(of: checksum.littleEndian) {
                    bytes.replaceSubrange(start..<(start + 4), with: $0)
                }
            }
        }
        try bytes.withUnsafeBytes { try file.write($0, at: 0) }
        file.close()

        // Opened with its index, the store does not replay (and so does not check) the log:
        // each damaged record is met by its load alone.
        var options = StoreOptions(fileSystem: fileSystem)
        options.readOnly = true
        options.checksLastIndexedTransaction = false
        let damaged = try LogStore.open(path: path, options: options)
        let readsBefore = fileSystem.reads
        var refused = 0
        for (index, key) in keys.enumerated() {
            var value: [UInt8]?
            do {
                let found = try damaged.withObject(key) { bytes, _, _, _ in value = Array(bytes) }
                #expect(found)
                #expect(damage(of: index) == nil, "damaged record of key \(key) loaded")
                #expect(value == expected[key], "key \(key)")
            } catch let error as StoreError {
                refused += 1
                #expect(error.code == .corrupt)
                #expect(error.offset == locations[key]?.offset)
                switch damage(of: index) {
                case .otherKey?, .otherType?:
                    #expect(error.message.contains("is not a put of its length"), "\(error)")
                case .badChecksum?:
                    #expect(error.message.hasPrefix("record checksum mismatch"), "\(error)")
                case nil:
                    Issue.record("intact record of key \(key) refused: \(error)")
                }
            }
        }
        #expect(refused == 300)
        // Most loads were served from windows read ahead, so most damaged records were met
        // there rather than in a read of their own.
        #expect(fileSystem.reads - readsBefore < keys.count / 10)
        // The sparse reads of a fetch (`forEachObject(keys:)`) refuse the same records.
        for (index, key) in keys.enumerated() {
            var value: [UInt8]?
            do {
                try damaged.forEachObject(keys: [key]) { found, _, bytes in
                    #expect(found == key)
                    value = Array(bytes)
                }
                #expect(damage(of: index) == nil, "damaged record of key \(key) read")
                #expect(value == expected[key], "key \(key)")
            } catch let error as StoreError {
                #expect(error.code == .corrupt && error.offset == locations[key]?.offset)
                #expect(damage(of: index) != nil, "intact record of key \(key) refused: \(error)")
            }
        }
        try damaged.close()
    }

    @Test(
        "single loads from several threads, beside commits and a compaction, see only committed values of their own key"
    )
    func concurrentLoads() throws {
        let directory = TemporaryDirectory()
        let store = try LogStore.open(path: directory.file("threads.olog"))
        let keys = Array(store.allocateKeys(2000))
        // A value names its key and version, so a load can tell it got a whole record of its
        // own key; the filler makes records of different lengths.
        @Sendable func payload(_ key: ObjectKey, _ version: UInt8) -> [UInt8] {
            withUnsafeBytes(of: key.littleEndian) { Array($0) } + [version]
                + Array(repeating: version, count: Int(key % 50))
        }
        var transaction = Transaction()
        for key in keys {
            transaction.put(key: key, entity: 1, payload: payload(key, 0), isInsert: true)
        }
        try store.commit(transaction)
        let versions: UInt8 = 6
        let problems = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            do {
                if worker == 0 {
                    // The writer: updates of every fifth key, and a compaction halfway.
                    for version in 1...versions {
                        var transaction = Transaction()
                        for key in keys where key % 5 == 0 {
                            transaction.put(
                                key: key,
                                entity: 1,
                                payload: payload(key, version),
                                isInsert: false
                            )
                        }
                        try store.commit(transaction)
                        if version == versions / 2 { try store.compact() }
                    }
                    return
                }
                // Readers go forward through the file (read ahead), backward and skipping.
                for pass in 0..<4 {
                    let order = pass % 2 == 0 ? keys : keys.reversed()
                    for key in order where pass < 2 || key % UInt64(worker + 1) == 0 {
                        var value: [UInt8] = []
                        let found = try store.withObject(key) { bytes, _, _, _ in
                            value = Array(bytes)
                        }
                        let version = value.count > 8 ? value[8] : .max
                        if !found || version > versions || value != payload(key, version) {
                            problems.withLock { $0.append("key \(key): \(found) \(value)") }
                        }
                    }
                }
            } catch {
                problems.withLock { $0.append("worker \(worker): \(error)") }
            }
        }
        #expect(problems.withLock { $0 }.isEmpty, "\(problems.withLock { $0.prefix(5) })")
        for key in keys {
            var value: [UInt8] = []
            _ = try store.withObject(key) { bytes, _, _, _ in value = Array(bytes) }
            #expect(value == payload(key, key % 5 == 0 ? versions : 0), "key \(key)")
        }
        try store.close()
    }

    @Test("CRC-32 of the ASCII bytes 123456789 is 0xCBF43926")
    func crcTestVector() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
    }

    @Test(
        "both ways of computing CRC-32 equal a bitwise CRC-32 for every length and split",
        arguments: [false, true]
    )
    func crcMatchesBitwiseReference(slicingOnly: Bool) {
        func reference(_ bytes: some Collection<UInt8>) -> UInt32 {
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
            }
            return ~crc
        }
        let tables = slicingOnly ? CRC32.lookupTables.slicingOnly : CRC32.lookupTables
        func checksum(_ bytes: ArraySlice<UInt8>, continuing crc: UInt32 = 0) -> UInt32 {
            bytes.withUnsafeBytes { CRC32.checksum($0, continuing: crc, tables: tables) }
        }
        var generator = SystemRandomNumberGenerator()
        // Every split of the short lengths; past 200 (the four-chain folding starts at 128
        // bytes), every length to 1,100 at each of eight alignments and one random split.
        for length in 0..<1_100 {
            let bytes = (0..<(length + 8)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            for offset in 0..<(length < 200 ? 1 : 8) {
                let message = bytes[offset..<(offset + length)]
                let expected = reference(message)
                #expect(checksum(message) == expected, "length \(length), offset \(offset)")
                let splits =
                    length < 200
                    ? Array(0...length) : [Int.random(in: 0...length, using: &generator)]
                for split in splits {
                    let head = checksum(message.prefix(split))
                    #expect(
                        checksum(message.dropFirst(split), continuing: head) == expected,
                        "length \(length), offset \(offset), split at \(split)"
                    )
                }
            }
        }
    }

    @Test("SHA-256 matches the FIPS 180-4 examples")
    func sha256Vectors() {
        #expect(
            BlobID(contentsOf: Array("abc".utf8)).hex
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        )
        #expect(
            BlobID(contentsOf: [UInt8]()).hex
                == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        )
        let long = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        #expect(
            BlobID(contentsOf: long).hex
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        )
    }

    @Test("puts, updates, deletes and metadata survive a reopen")
    func roundTrip() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("a.olog")
        do {
            let store = try LogStore.open(path: path)
            let keys = store.allocateKeys(3)
            var first = Transaction()
            first.put(key: keys.lowerBound, entity: 1, payload: [1, 2, 3], isInsert: true)
            first.put(key: keys.lowerBound + 1, entity: 2, payload: [], isInsert: true)
            first.put(
                key: keys.lowerBound + 2,
                entity: 1,
                payload: Array(repeating: 7, count: 1000),
                isInsert: true
            )
            first.metadata = ["author": .string("Ada"), "size": .integer(640)]
            let info = try store.commit(first)
            #expect(info.number == 1)
            #expect(info.inserted == 3)
            var second = Transaction()
            second.put(key: keys.lowerBound, entity: 1, payload: [9], isInsert: false)
            second.delete(key: keys.lowerBound + 1, entity: 2)
            let info2 = try store.commit(second)
            #expect(info2.number == 2)
            #expect(info2.updated == 1)
            #expect(info2.deleted == 1)
            try store.close()
        }
        let store = try LogStore.open(path: path)
        #expect(store.indexState == .loaded)
        #expect(store.transactionCount == 2)
        #expect(store.liveCount(entity: nil) == 2)
        #expect(store.liveCount(entity: 1) == 2)
        #expect(store.liveCount(entity: 2) == 0)
        #expect(try store.readObject(1)?.payload == [9])
        #expect(try store.readObject(2) == nil)
        #expect(try store.readObject(3)?.payload == Array(repeating: 7, count: 1000))
        #expect(store.metadata == ["author": .string("Ada"), "size": .integer(640)])
        let fresh = store.allocateKeys(1).lowerBound
        #expect(fresh == 4)
        // Each durable commit is exactly one flush.
        var more = Transaction()
        more.put(key: fresh, entity: 1, payload: [1], isInsert: true)
        try store.commit(more)
        try store.commit(more)
        #expect(store.statistics.commits == 2)
        #expect(store.statistics.logSyncs == 2)
    }

    @Test(
        "a save of updates reserves no room for them, yet puts of new keys not marked inserts grow the keydir"
    )
    func updatesAndUnmarkedNewKeys() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("grow.olog")
        // Many more keys than the keydir holds at first, each put as an update although the
        // store has never seen it: the commit reserves room for inserts only.
        let count = 5000
        var expected: [ObjectKey: [UInt8]] = [:]
        do {
            let store = try LogStore.open(path: path)
            let keys = store.allocateKeys(2 * count)
            var first = Transaction()
            for key in keys.prefix(count) {
                first.put(key: key, entity: 1, payload: [UInt8(key % 251)], isInsert: false)
                expected[key] = [UInt8(key % 251)]
            }
            let info = try store.commit(first)
            #expect(info.updated == count)
            #expect(store.liveCount(entity: 1) == count)
            // Updates of every other key, new keys as inserts and as unmarked puts, deletes.
            var second = Transaction()
            for key in keys.prefix(count) where key.isMultiple(of: 2) {
                second.put(key: key, entity: 2, payload: [1, 2], isInsert: false)
                expected[key] = [1, 2]
            }
            for key in keys.dropFirst(count) {
                second.put(key: key, entity: 1, payload: [3], isInsert: key.isMultiple(of: 3))
                expected[key] = [3]
            }
            for key in keys.prefix(count) where key % 7 == 1 {
                second.delete(key: key, entity: 1)
                expected[key] = nil
            }
            try store.commit(second)
            #expect(try snapshot(store) == expected)
            #expect(store.liveCount(entity: nil) == expected.count)
            #expect(
                store.liveCount(entity: 2)
                    == expected.filter { $0.key <= ObjectKey(count) && $0.value == [1, 2] }.count
            )
            try store.close()
        }
        var options = StoreOptions()
        options.usesIndex = false
        for options in [StoreOptions(), options] {
            let store = try LogStore.open(path: path, options: options)
            #expect(try snapshot(store) == expected)
            #expect(store.liveCount(entity: nil) == expected.count)
            try store.close()
        }
    }

    @Test("every metadata value type round-trips")
    func metadataTypes() throws {
        let metadata: Metadata = [
            "s": .string("héllo"), "i": .integer(-5), "d": .double(2.5), "b": .bool(true),
            "t": .date(Date(timeIntervalSince1970: 1_700_000_000.25)), "x": .data(Data([0, 255])),
            "a": .array([.integer(1), .string("two")]), "n": .dictionary(["k": .bool(false)]),
        ]
        let bytes = MetadataCoding.encode(metadata)
        #expect(try MetadataCoding.decodeDictionary(bytes) == metadata)
        // Deterministic: the same dictionary always encodes to the same bytes.
        #expect(MetadataCoding.encode(metadata) == bytes)
    }

    @Test("the metadata is read without replay, from the latest commit")
    func staticMetadataRead() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("m.olog")
        let store = try LogStore.open(path: path)
        for round in 0..<50 {
            var transaction = Transaction()
            transaction.put(
                key: store.allocateKeys(1).lowerBound,
                entity: 1,
                payload: [UInt8(round)],
                isInsert: true
            )
            if round % 10 == 0 { transaction.metadata = ["round": .integer(Int64(round))] }
            try store.commit(transaction)
        }
        #expect(try LogStore.readMetadata(path: path) == ["round": .integer(40)])
        try store.compact()
        #expect(try LogStore.readMetadata(path: path) == ["round": .integer(40)])
        var transaction = Transaction()
        transaction.metadata = ["round": .integer(99)]
        try store.commit(transaction)
        #expect(try LogStore.readMetadata(path: path) == ["round": .integer(99)])
        // A torn tail after the last commit does not hide it.
        let handle = FileHandle(forWritingAtPath: path)!
        handle.seekToEndOfFile()
        handle.write(Data([1, 2, 3, 4, 5]))
        try handle.close()
        #expect(try LogStore.readMetadata(path: path) == ["round": .integer(99)])
    }

    @Test("compaction keeps exactly the live state and folds the metadata")
    func compaction() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("c.olog")
        let store = try LogStore.open(path: path)
        var generator = SeededGenerator(seed: 7)
        var model: [ObjectKey: [UInt8]] = [:]
        for _ in 0..<200 {
            var transaction = Transaction()
            for _ in 0..<5 {
                if !model.isEmpty, Int.random(in: 0..<3, using: &generator) == 0 {
                    let key = model.keys.sorted()[
                        Int.random(in: 0..<model.count, using: &generator)
                    ]
                    transaction.delete(key: key, entity: 1)
                    model[key] = nil
                } else {
                    let key = store.allocateKeys(1).lowerBound
                    let payload = (0..<Int.random(in: 0..<40, using: &generator)).map { _ in
                        UInt8.random(in: 0...255, using: &generator)
                    }
                    transaction.put(key: key, entity: 1, payload: payload, isInsert: true)
                    model[key] = payload
                }
            }
            try store.commit(transaction)
        }
        var meta = Transaction()
        meta.metadata = ["k": .string("v")]
        try store.commit(meta)
        let before = try snapshot(store)
        #expect(before == model)
        let report = try store.compact()
        #expect(report.bytesAfter < report.bytesBefore)
        #expect(report.generation == 2)
        #expect(try snapshot(store) == model)
        // Keeps working after compaction, and after reopening (with and without the index).
        var after = Transaction()
        let key = store.allocateKeys(1).lowerBound
        after.put(key: key, entity: 1, payload: [42], isInsert: true)
        try store.commit(after)
        model[key] = [42]
        try store.close()
        let reopened = try LogStore.open(path: path)
        #expect(reopened.indexState == .loaded)
        #expect(try snapshot(reopened) == model)
        #expect(reopened.metadata == ["k": .string("v")])
        #expect(reopened.transactionCount == 202)
        try reopened.close()
        var noIndex = StoreOptions()
        noIndex.usesIndex = false
        let rebuilt = try LogStore.open(path: path, options: noIndex)
        #expect(rebuilt.indexState == .rebuilt)
        #expect(try snapshot(rebuilt) == model)
        #expect(rebuilt.transactionCount == 202)
    }

    @Test("leftovers of an interrupted compaction are removed on open")
    func compactionLeftovers() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("l.olog")
        let store = try LogStore.open(path: path)
        var transaction = Transaction()
        transaction.put(
            key: store.allocateKeys(1).lowerBound,
            entity: 1,
            payload: [1],
            isInsert: true
        )
        try store.commit(transaction)
        try store.close()
        writeBytes([1, 2, 3], to: path + "-compact")
        writeBytes([4, 5, 6], to: path + "-new")
        try FileManager.default.createDirectory(
            atPath: path + "-blobs",
            withIntermediateDirectories: true
        )
        writeBytes([7], to: path + "-blobs/abc.tmp")
        let reopened = try LogStore.open(path: path)
        #expect(!FileManager.default.fileExists(atPath: path + "-compact"))
        #expect(!FileManager.default.fileExists(atPath: path + "-new"))
        #expect(!FileManager.default.fileExists(atPath: path + "-blobs/abc.tmp"))
        #expect(try reopened.readObject(1)?.payload == [1])
    }

    @Test("the index checkpoint loads exactly the locations a replay of the log finds")
    func indexMatchesReplay() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("i.olog")
        var generator = SeededGenerator(seed: 11)
        do {
            let store = try LogStore.open(path: path)
            var live: [ObjectKey] = []
            for _ in 0..<40 {
                var transaction = Transaction()
                // Sparse keys (large deltas), updates of old keys (offsets out of key order)
                // and deletes, with payloads of very different sizes.
                let keys = store.allocateKeys(Int.random(in: 1...5000, using: &generator))
                for key in [keys.lowerBound, keys.upperBound] where !live.contains(key) {
                    let size = Int.random(in: 0...300, using: &generator)
                    transaction.put(
                        key: key,
                        entity: UInt32.random(in: 1...300, using: &generator),
                        payload: [UInt8](repeating: 1, count: size),
                        isInsert: true
                    )
                    live.append(key)
                }
                if let old = live.randomElement(using: &generator) {
                    transaction.put(key: old, entity: 7, payload: [2, 3], isInsert: false)
                }
                if live.count > 3, Bool.random(using: &generator) {
                    let gone = live.remove(at: Int.random(in: 0..<live.count, using: &generator))
                    transaction.delete(key: gone, entity: 7)
                }
                try store.commit(transaction)
            }
            try store.close()
        }
        var options = StoreOptions()
        options.readOnly = true
        let indexed = try LogStore.open(path: path, options: options)
        options.usesIndex = false
        let replayed = try LogStore.open(path: path, options: options)
        #expect(indexed.indexState == .loaded)
        #expect(replayed.indexState == .rebuilt)
        let keys = replayed.liveKeys(entity: nil)
        #expect(indexed.liveKeys(entity: nil) == keys)
        #expect(keys.map { indexed.location(of: $0) } == keys.map { replayed.location(of: $0) })
        #expect(indexed.liveCounts == replayed.liveCounts)
        #expect(indexed.liveBytes == replayed.liveBytes)
    }

    @Test("a stale or damaged index is ignored and the log replayed")
    func staleIndex() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("i.olog")
        let store = try LogStore.open(path: path)
        var transaction = Transaction()
        transaction.put(
            key: store.allocateKeys(1).lowerBound,
            entity: 1,
            payload: [1],
            isInsert: true
        )
        try store.commit(transaction)
        try store.close()
        var index = readBytes(path + "-index")
        index[index.count / 2] ^= 0x10
        writeBytes(index, to: path + "-index")
        let reopened = try LogStore.open(path: path)
        #expect(reopened.indexState == .rebuilt)
        #expect(try reopened.readObject(1)?.payload == [1])
    }

    @Test("closing rewrites the index only when it no longer describes the last commit")
    func indexRewrittenOnlyWhenStale() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("c.olog")
        func indexInode() throws -> Int {
            let attributes = try FileManager.default.attributesOfItem(atPath: path + "-index")
            return try #require(attributes[.systemFileNumber] as? Int)
        }
        func commitOne(_ store: LogStore) throws {
            var transaction = Transaction()
            transaction.put(
                key: store.allocateKeys(1).lowerBound,
                entity: 1,
                payload: [7],
                isInsert: true
            )
            try store.commit(transaction)
        }
        let store = try LogStore.open(path: path)
        try commitOne(store)
        try store.close()
        let written = try indexInode()
        // Opened from an index that covers the whole file, closed unchanged: nothing to write
        // (the index is replaced by a rename, so a rewrite would change its inode).
        let unchanged = try LogStore.open(path: path)
        #expect(unchanged.indexState == .loaded)
        try unchanged.close()
        #expect(try indexInode() == written)
        // A commit makes it stale: closing writes it, and the next open loads it.
        let changed = try LogStore.open(path: path)
        try commitOne(changed)
        try changed.close()
        #expect(try indexInode() != written)
        let reopened = try LogStore.open(path: path)
        #expect(reopened.indexState == .loaded)
        #expect(reopened.liveKeys(entity: nil).count == 2)
        // After a compaction (which writes the index itself), closing writes nothing more.
        _ = try reopened.compact()
        let compacted = try indexInode()
        try reopened.close()
        #expect(try indexInode() == compacted)
        let afterCompaction = try LogStore.open(path: path)
        #expect(afterCompaction.indexState == .loaded)
        #expect(afterCompaction.liveKeys(entity: nil).count == 2)
    }

    @Test("external blobs are content-addressed, verified, and removed once unreferenced")
    func blobs() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("b.olog")
        let store = try LogStore.open(path: path)
        let content = Data((0..<100_000).map { UInt8($0 % 251) })
        let id = try store.writeBlob(content)
        #expect(try store.readBlob(id) == content)
        var transaction = Transaction()
        let key = store.allocateKeys(1).lowerBound
        transaction.put(key: key, entity: 1, payload: [5], blobs: [id], isInsert: true)
        try store.commit(transaction)
        #expect(try store.readObject(key)?.blobs == [id])
        #expect(try store.compact().blobsRemoved == 0)
        var removal = Transaction()
        removal.delete(key: key, entity: 1)
        try store.commit(removal)
        let report = try store.compact()
        #expect(report.blobsRemoved == 1)
        #expect(throws: StoreError.self) { try store.readBlob(id) }
        // A blob whose bytes changed fails its check.
        let other = try store.writeBlob(Data([1, 2, 3]))
        writeBytes([1, 2, 4], to: store.blobDirectory + "/" + other.hex)
        let error = #expect(throws: StoreError.self) { try store.readBlob(other) }
        #expect(error?.code == .missingBlob)
    }

    @Test("in-memory stores work behind the same API and share nothing")
    func inMemory() throws {
        let store = try LogStore.open(path: "/memory/a.olog", options: .inMemory)
        var transaction = Transaction()
        transaction.put(
            key: store.allocateKeys(1).lowerBound,
            entity: 3,
            payload: [1, 2],
            isInsert: true
        )
        transaction.metadata = ["x": .bool(true)]
        try store.commit(transaction)
        #expect(try store.readObject(1)?.payload == [1, 2])
        let other = try LogStore.open(path: "/memory/a.olog", options: .inMemory)
        #expect(other.liveCount(entity: nil) == 0)
    }

    @Test("bad files are refused with clear errors")
    func badFiles() throws {
        let directory = TemporaryDirectory()
        var readOnly = StoreOptions()
        readOnly.readOnly = true
        let missing = #expect(throws: StoreError.self) {
            try LogStore.open(path: directory.file("none.olog"), options: readOnly)
        }
        #expect(missing?.code == .notFound)
        let isDirectory = #expect(throws: StoreError.self) {
            try LogStore.open(path: directory.path)
        }
        #expect(isDirectory?.code == .notAStore)
        writeBytes([], to: directory.file("empty.olog"))
        let empty = #expect(throws: StoreError.self) {
            try LogStore.open(path: directory.file("empty.olog"))
        }
        #expect(empty?.code == .notAStore)
        writeBytes(Array("hello, world, this is text".utf8), to: directory.file("text.olog"))
        let text = #expect(throws: StoreError.self) {
            try LogStore.open(path: directory.file("text.olog"))
        }
        #expect(text?.code == .notAStore)
        #expect(readBytes(directory.file("text.olog")) == Array("hello, world, this is text".utf8))
    }

    @Test("a store error's localizedDescription is its description, not Foundation's sentence")
    func localizedDescription() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("none.olog")
        var readOnly = StoreOptions()
        readOnly.readOnly = true
        let error = try #require(throws: StoreError.self) {
            try LogStore.open(path: path, options: readOnly)
        }
        // Through `any Error`, as logging and alert code sees it.
        let erased: any Error = error
        #expect(erased.localizedDescription == "\(path): \(error.message)")
        let damaged: any Error = StoreError(.corrupt, "bad checksum", path: "a.olog", offset: 64)
        #expect(damaged.localizedDescription == "a.olog, offset 64: bad checksum")
    }

    @Test("a second writer is refused; readers are allowed")
    func writerLock() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("w.olog")
        let store = try LogStore.open(path: path)
        let error = #expect(throws: StoreError.self) { try LogStore.open(path: path) }
        #expect(error?.code == .locked)
        var readOnly = StoreOptions()
        readOnly.readOnly = true
        let reader = try LogStore.open(path: path, options: readOnly)
        #expect(reader.liveCount(entity: nil) == 0)
        try store.close()
        let again = try LogStore.open(path: path)
        try again.close()
    }

    @Test("the writer lock is visible to another process")
    func writerLockAcrossProcesses() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("p.olog")
        let store = try LogStore.open(path: path)
        // Another process (Python's flock, the same system call) must fail to take the lock.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", "-c",
            "import fcntl,sys\nf=open(sys.argv[1],'a')\ntry:\n fcntl.flock(f,fcntl.LOCK_EX|fcntl.LOCK_NB)\nexcept OSError:\n sys.exit(3)\nsys.exit(0)",
            path + "-lock",
        ]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 3)
        try store.close()
        // And a lock held by another process refuses us.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        holder.arguments = [
            "python3", "-c",
            "import fcntl,sys,time\nf=open(sys.argv[1],'a')\nfcntl.flock(f,fcntl.LOCK_EX)\nopen(sys.argv[2],'w').close()\ntime.sleep(20)",
            path + "-lock", path + ".held",
        ]
        try holder.run()
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: path + ".held") && Date() < deadline {
            usleep(10_000)
        }
        let error = #expect(throws: StoreError.self) { try LogStore.open(path: path) }
        #expect(error?.code == .locked)
        kill(holder.processIdentifier, SIGKILL)
        holder.waitUntilExit()
    }
}

/// A file system over memory that counts reads of open files, to tell loads served from memory
/// from loads that read the file.
private final class ReadCountingFileSystem: FileSystem, Sendable {
    private let base = MemoryFileSystem()
    private let count = Mutex(0)

    /// Reads of open files so far.
    var reads: Int { count.withLock { $0 } }

    func countRead() { count.withLock { $0 += 1 } }

    func open(_ path: String, mode: FileOpenMode) throws -> any StoreFile {
        ReadCountingFile(base: try base.open(path, mode: mode), owner: self)
    }
    func kind(of path: String) -> FileKind { base.kind(of: path) }
    func rename(_ source: String, to destination: String) throws {
        try base.rename(source, to: destination)
    }
    func remove(_ path: String) throws { try base.remove(path) }
    func syncDirectory(_ path: String) throws { try base.syncDirectory(path) }
    func makeDirectory(_ path: String, permissions: UInt32) throws {
        try base.makeDirectory(path, permissions: permissions)
    }
    func contents(ofDirectory path: String) throws -> [String] {
        try base.contents(ofDirectory: path)
    }
}

private final class ReadCountingFile: StoreFile {
    let base: any StoreFile
    let owner: ReadCountingFileSystem

    init(base: any StoreFile, owner: ReadCountingFileSystem) {
        self.base = base
        self.owner = owner
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        owner.countRead()
        return try base.read(into: buffer, at: offset)
    }
    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        try base.write(bytes, at: offset)
    }
    func size() throws -> UInt64 { try base.size() }
    func truncate(to size: UInt64) throws { try base.truncate(to: size) }
    func sync() throws { try base.sync() }
    func lockExclusive() throws { try base.lockExclusive() }
    func close() { base.close() }
}
