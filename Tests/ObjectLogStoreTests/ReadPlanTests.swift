import Foundation
import TestSupport
import Testing

@testable import ObjectLogStore

@Suite("Read plans of keys looked up in parts")
struct ReadPlanTests {
    @Test(
        "a plan of keys in parts reads what the plan of all the keys reads",
        arguments: [1, 3, 8]
    )
    func partsEqualWhole(parts: Int) throws {
        let directory = TemporaryDirectory()
        let store = try LogStore.open(path: directory.file("plan.olog"))
        let keys = Array(store.allocateKeys(300))
        var transaction = Transaction()
        for key in keys {
            transaction.put(
                key: key,
                entity: 1,
                payload: Array("value \(key)".utf8),
                isInsert: true
            )
        }
        try store.commit(transaction)
        // Updates and deletes, so that the log's order is not the keys' order and some keys
        // are no longer live.
        var later = Transaction()
        for key in keys where key % 5 == 0 {
            later.put(key: key, entity: 1, payload: Array("new \(key)".utf8), isInsert: false)
        }
        for key in keys where key % 7 == 0 { later.delete(key: key, entity: 1) }
        try store.commit(later)

        var random = SeededGenerator(seed: 0x91A7)
        let wanted = (keys + [keys.last! + 10]).shuffled(using: &random)
        let cuts = (0...parts).map { wanted.count * $0 / parts }
        let keyParts = (0..<parts).map { Array(wanted[cuts[$0]..<cuts[$0 + 1]]) }
        func read(_ plan: LogStore.ReadPlan) throws -> [(ObjectKey, [UInt8])] {
            var read: [(ObjectKey, [UInt8])] = []
            try store.forEachObject(in: plan) { key, _, value in read.append((key, Array(value))) }
            return read
        }
        let whole = try read(store.readPlan(keys: wanted))
        let inParts = try read(store.readPlan(keyParts: keyParts))
        #expect(whole.count == keys.filter { $0 % 7 != 0 }.count)
        #expect(inParts.map(\.0) == whole.map(\.0))
        #expect(inParts.map(\.1) == whole.map(\.1))
        try store.close()
    }

    @Test("bulk reads hand their windows on, and a kept window's old bytes are never read")
    func windowsAreKept() throws {
        var options = StoreOptions(fileSystem: MemoryFileSystem())
        // 4 KiB windows, so that a read of a few hundred records goes through several.
        options.bulkReadWindowShift = 12
        let store = try LogStore.open(path: "/windows.olog", options: options)
        let keys = Array(store.allocateKeys(400))
        func write(_ label: String) throws {
            var transaction = Transaction()
            for key in keys {
                transaction.put(
                    key: key,
                    entity: 1,
                    payload: Array("\(label) \(key)".utf8),
                    isInsert: label == "first"
                )
            }
            try store.commit(transaction)
        }
        func readAll(parts: Int) throws -> [ObjectKey: String] {
            let plans = try store.liveObjectPlans(entity: 1, parts: parts)
            var values: [ObjectKey: String] = [:]
            for plan in plans {
                try store.forEachObject(in: plan) { key, _, value in
                    values[key] = String(decoding: value, as: UTF8.self)
                }
            }
            return values
        }
        #expect(store.readWindows.keptCount == 0)
        try write("first")
        #expect(
            try readAll(parts: 3)
                == Dictionary(uniqueKeysWithValues: keys.map { ($0, "first \($0)") })
        )
        // One thread read the parts in turn: one window, handed from part to part.
        #expect(store.readWindows.keptCount == 1)
        // The next read takes the kept window, full of the first values, and reads the new
        // ones (longer, at other offsets) into it.
        try write("second, longer")
        #expect(
            try readAll(parts: 2)
                == Dictionary(uniqueKeysWithValues: keys.map { ($0, "second, longer \($0)") })
        )
        #expect(store.readWindows.keptCount == 1)
        try store.close()
    }

    @Test("the window pool keeps a few windows of the size asked for and frees the rest")
    func windowPoolKeepsAFew() {
        let pool = ReadWindowPool()
        let windows = (0..<10).map { _ in pool.take(byteCount: 4_096, firstRead: 4_096) }
        #expect(Set(windows.map(\.baseAddress)).count == 10)
        for window in windows { pool.give(window) }
        #expect(pool.keptCount == 8)
        let again = pool.take(byteCount: 4_096, firstRead: 0)
        #expect(windows.contains { $0.baseAddress == again.baseAddress })
        #expect(pool.keptCount == 7)
        // A window of another size is not handed out for this one.
        let other = pool.take(byteCount: 8_192, firstRead: 0)
        #expect(other.count == 8_192)
        #expect(pool.keptCount == 7)
        pool.give(again)
        pool.give(other)
        #expect(pool.keptCount == 8)
    }

    @Test("a plan's keys come in the plan's (file) order, also for its parts")
    func keysFollowThePlan() throws {
        let store = try LogStore.open(
            path: "/mapped.olog",
            options: StoreOptions(fileSystem: MemoryFileSystem())
        )
        let keys = Array(store.allocateKeys(40_000))
        var transaction = Transaction()
        for key in keys { transaction.put(key: key, entity: 1, payload: [1, 2], isInsert: true) }
        try store.commit(transaction)
        // Later records for every third key, so the plan's (file) order is not the keys'.
        var later = Transaction()
        for key in keys where key % 3 == 0 {
            later.put(key: key, entity: 1, payload: [3], isInsert: false)
        }
        try store.commit(later)
        var random = SeededGenerator(seed: 0x4D4B)
        let plan = try store.readPlan(keys: keys.shuffled(using: &random))
        // The first commit's records in key order, then the later ones.
        let rewritten = keys.filter { $0 % 3 == 0 }
        #expect(plan.keys == keys.filter { $0 % 3 != 0 } + rewritten)
        let parts = store.split(plan, parts: 4)
        #expect(parts.count > 1)
        #expect(parts.flatMap(\.keys) == plan.keys)
        try store.close()
    }
}
