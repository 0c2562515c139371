import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ObjectLogStore

/// Runs `body` on a thread of its own (not a dispatch queue's: the point is more committing
/// threads than processors); `group` is left when it returns.
private func spawn(_ group: DispatchGroup, _ body: @escaping @Sendable () -> Void) {
    group.enter()
    Thread {
        body()
        group.leave()
    }
    .start()
}

/// Commits a put of `key` with a value that names it.
@discardableResult
private func put(_ key: ObjectKey, into store: LogStore) throws -> CommitInfo {
    var transaction = Transaction()
    transaction.put(key: key, entity: 1, payload: value(of: key), isInsert: true)
    return try store.commit(transaction)
}

private func value(of key: ObjectKey) -> [UInt8] {
    withUnsafeBytes(of: key.littleEndian) { Array($0) }
}

/// The value of each live key of `store`.
private func contents(of store: LogStore) throws -> [ObjectKey: [UInt8]] {
    var found: [ObjectKey: [UInt8]] = [:]
    for key in store.liveKeys(entity: nil) {
        _ = try store.withObject(key) { bytes, _, _, _ in found[key] = Array(bytes) }
    }
    return found
}

/// A store over `fileSystem` at a fixed path.
private func openStore(on fileSystem: any FileSystem) throws -> LogStore {
    try LogStore.open(path: "/group.olog", options: StoreOptions(fileSystem: fileSystem))
}

@Suite("Group commit: commits of several threads share a flush")
struct GroupCommitTests {
    @Test(
        "commits written while a flush runs share the next one, each durable before it returns"
    )
    func commitsShareAFlush() throws {
        let fileSystem = GatedFileSystem(base: MemoryFileSystem())
        let store = try openStore(on: fileSystem)
        let keys = Array(store.allocateKeys(8))
        let before = store.statistics
        let first = fileSystem.syncCount + 1
        fileSystem.hold(sync: first)
        let results = Mutex<[ObjectKey: CommitInfo]>([:])
        let threads = DispatchGroup()
        spawn(threads) {
            let info = try? put(keys[0], into: store)
            results.withLock { $0[keys[0]] = info }
        }
        fileSystem.waitUntilHolding(sync: first)
        let writes = fileSystem.writeCount
        for key in keys.dropFirst() {
            spawn(threads) {
                let info = try? put(key, into: store)
                results.withLock { $0[key] = info }
            }
        }
        fileSystem.waitForWrites(writes + 7)
        // Written, but not durable: reads do not see them, a save's checks do.
        for key in keys {
            #expect(store.location(of: key) == nil, "key \(key) visible before its flush")
        }
        #expect(store.recordOffsetsAndGeneration(of: keys).offsets.allSatisfy { $0 != nil })
        #expect(results.withLock { $0.isEmpty }, "a commit returned before its flush")
        fileSystem.release(sync: first)
        threads.wait()

        let infos = results.withLock { $0 }
        #expect(infos.count == 8)
        #expect(infos[keys[0]]?.number == 1)
        #expect(Set(infos.values.map(\.number)) == Set(1...8))
        // Numbers follow the order of the commits in the file.
        let byNumber = infos.values.sorted { $0.number < $1.number }
        #expect(byNumber.map(\.offset) == byNumber.map(\.offset).sorted())
        let after = store.statistics
        #expect(after.commits - before.commits == 8)
        #expect(after.logSyncs - before.logSyncs == 2, "one flush for the first, one for the rest")
        #expect(
            try contents(of: store)
                == Dictionary(uniqueKeysWithValues: keys.map { ($0, value(of: $0)) })
        )
        try store.close()

        let reopened = try openStore(on: fileSystem)
        #expect(reopened.transactionCount == 8)
        #expect(try contents(of: reopened).count == 8)
        let history = try reopened.history(after: 0)
        for transaction in history.transactions {
            let key = try #require(transaction.changes.first?.key)
            #expect(infos[key]?.number == transaction.number, "key \(key)")
        }
        try reopened.close()
    }

    @Test("many threads committing at once into a file all land, in order, with fewer flushes")
    func manyThreadsOnDisk() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("threads.olog")
        let store = try LogStore.open(path: path)
        let threadCount = 8
        let perThread = 40
        let keys = Array(store.allocateKeys(threadCount * perThread))
        let failures = Mutex<[String]>([])
        let numbers = Mutex<[ObjectKey: UInt64]>([:])
        let threads = DispatchGroup()
        for thread in 0..<threadCount {
            spawn(threads) {
                var last: UInt64 = 0
                for index in 0..<perThread {
                    let key = keys[thread * perThread + index]
                    do {
                        let info = try put(key, into: store)
                        if info.number <= last {
                            failures.withLock { $0.append("thread \(thread): \(info.number)") }
                        }
                        last = info.number
                        numbers.withLock { $0[key] = info.number }
                    } catch {
                        failures.withLock { $0.append("thread \(thread): \(error)") }
                    }
                }
            }
        }
        threads.wait()
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(3) })")
        let statistics = store.statistics
        #expect(statistics.commits == UInt64(keys.count))
        #expect(statistics.logSyncs <= statistics.commits)
        print("group commit: \(statistics.commits) commits, \(statistics.logSyncs) flushes")
        try store.close()

        let reopened = try LogStore.open(path: path)
        #expect(reopened.transactionCount == UInt64(keys.count))
        let found = try contents(of: reopened)
        #expect(found == Dictionary(uniqueKeysWithValues: keys.map { ($0, value(of: $0)) }))
        let recorded = numbers.withLock { $0 }
        for transaction in try reopened.history(after: 0).transactions {
            let key = try #require(transaction.changes.first?.key)
            #expect(recorded[key] == transaction.number, "key \(key)")
        }
        try reopened.close()
    }

    @Test(
        "a failed flush fails every commit it covered and those after it, and keeps the earlier ones"
    )
    func failedFlushFailsItsGroup() throws {
        let faulty = FaultyFileSystem()
        let fileSystem = GatedFileSystem(base: faulty)
        let store = try openStore(on: fileSystem)
        let keys = Array(store.allocateKeys(9))
        let first = fileSystem.syncCount + 1
        fileSystem.hold(sync: first)
        fileSystem.hold(sync: first + 1)
        let results = Mutex<[ObjectKey: Result<CommitInfo, any Error>]>([:])
        let threads = DispatchGroup()
        func commit(_ key: ObjectKey) {
            spawn(threads) {
                let result = Result { try put(key, into: store) }
                results.withLock { $0[key] = result }
            }
        }
        commit(keys[0])
        fileSystem.waitUntilHolding(sync: first)
        var writes = fileSystem.writeCount
        for key in keys[1...7] { commit(key) }
        fileSystem.waitForWrites(writes + 7)
        // The first flush has synced; the next, of the seven written meanwhile, fails.
        faulty.fail(.sync, after: 1)
        fileSystem.release(sync: first)
        fileSystem.waitUntilHolding(sync: first + 1)
        // Written while the failing flush runs: not covered by it.
        writes = fileSystem.writeCount
        commit(keys[8])
        fileSystem.waitForWrites(writes + 1)
        fileSystem.release(sync: first + 1)
        threads.wait()

        let outcomes = results.withLock { $0 }
        #expect(try outcomes[keys[0]]?.get().number == 1)
        for key in keys[1...7] {
            #expect(throws: StoreError.self, "key \(key)") { try outcomes[key]?.get() }
            if case .failure(let error as StoreError)? = outcomes[key] {
                #expect(error.code == .io, "the flush's own error, for key \(key)")
            }
        }
        if case .failure(let error as StoreError)? = outcomes[keys[8]] {
            #expect(error.code == .poisoned)
        } else {
            Issue.record("the commit after the failed flush did not fail as poisoned")
        }
        // Reads keep the state before the failed flush; the handle refuses writes.
        #expect(try contents(of: store) == [keys[0]: value(of: keys[0])])
        #expect(store.transactionCount == 1)
        #expect(store.statistics.commits == 1)
        let refused = #expect(throws: StoreError.self) {
            try put(store.allocateKeys(1).lowerBound, into: store)
        }
        #expect(refused?.code == .poisoned)
        try? store.close()

        // The acknowledged commit is there; the failed ones may or may not be.
        faulty.heal()
        let reopened = try openStore(on: fileSystem)
        let found = try contents(of: reopened)
        #expect(found[keys[0]] == value(of: keys[0]))
        try reopened.close()
    }

    @Test(
        "a delete written after a pending put of its key deletes it; reads see neither until their flush"
    )
    func deleteAfterPendingPut() throws {
        let fileSystem = GatedFileSystem(base: MemoryFileSystem())
        let store = try openStore(on: fileSystem)
        let key = store.allocateKeys(1).lowerBound
        let first = fileSystem.syncCount + 1
        fileSystem.hold(sync: first)
        let threads = DispatchGroup()
        let deleted = Mutex<Int?>(nil)
        spawn(threads) { _ = try? put(key, into: store) }
        fileSystem.waitUntilHolding(sync: first)
        let pendingOffset = store.recordOffsetsAndGeneration(of: [key]).offsets[0]
        #expect(pendingOffset != nil)
        #expect(store.location(of: key) == nil)
        let writes = fileSystem.writeCount
        spawn(threads) {
            var transaction = Transaction()
            transaction.delete(key: key, entity: 1)
            let info = try? store.commit(transaction)
            deleted.withLock { $0 = info?.deleted }
        }
        fileSystem.waitForWrites(writes + 1)
        // The delete is pending too: a save's checks see the key gone, reads still nothing.
        #expect(store.recordOffsetsAndGeneration(of: [key]).offsets[0] == nil)
        fileSystem.release(sync: first)
        threads.wait()
        #expect(deleted.withLock { $0 } == 1, "the delete found its key live")
        #expect(store.location(of: key) == nil)
        #expect(store.transactionCount == 2)
        try store.close()
        let reopened = try openStore(on: fileSystem)
        #expect(try contents(of: reopened).isEmpty)
        #expect(reopened.transactionCount == 2)
        try reopened.close()
    }

    @Test(
        "a power cut during a group's flush leaves, after every outcome, a prefix of the commits that keeps the acknowledged one"
    )
    func powerLossDuringGroupFlush() throws {
        let power = PowerLossFileSystem(crashAtSync: nil)
        let fileSystem = GatedFileSystem(base: power)
        let store = try openStore(on: fileSystem)
        let keys = Array(store.allocateKeys(8))
        let first = fileSystem.syncCount + 1
        fileSystem.hold(sync: first)
        fileSystem.hold(sync: first + 1, .beforeSyncing)
        let numbers = Mutex<[ObjectKey: UInt64]>([:])
        let threads = DispatchGroup()
        func commit(_ key: ObjectKey) {
            spawn(threads) {
                if let info = try? put(key, into: store) {
                    numbers.withLock { $0[key] = info.number }
                }
            }
        }
        commit(keys[0])
        fileSystem.waitUntilHolding(sync: first)
        let writes = fileSystem.writeCount
        for key in keys.dropFirst() { commit(key) }
        fileSystem.waitForWrites(writes + 7)
        fileSystem.release(sync: first)
        // The first commit is durable; the seven others are written, their flush held.
        fileSystem.waitUntilHolding(sync: first + 1)
        // Each written commit's number: the first is 1, the others in the order they were
        // written, which the pending locations' offsets give.
        let offsets = store.recordOffsetsAndGeneration(of: keys).offsets.map { $0 ?? 0 }
        let order = keys.indices.sorted { offsets[$0] < offsets[$1] }.map { keys[$0] }
        #expect(order.first == keys[0])

        var tornInTheMiddle = 0
        for seed in 0..<48 {
            let survivor = power.afterPowerLoss(seed: UInt64(seed))
            let lastIsWhole = try lastCommitIsWhole(on: survivor)
            let reopened: LogStore
            do {
                reopened = try openStore(on: survivor)
            } catch {
                Issue.record("seed \(seed): the store does not open after the power cut: \(error)")
                continue
            }
            let live = Set(try contents(of: reopened).keys)
            let kept = order.prefix { live.contains($0) }
            #expect(kept.count >= 1, "seed \(seed): the acknowledged commit was lost")
            #expect(Set(kept) == live, "seed \(seed): not a prefix of the commits: \(live)")
            #expect(reopened.transactionCount == UInt64(kept.count), "seed \(seed)")
            if kept.count < keys.count, lastIsWhole { tornInTheMiddle += 1 }
            try reopened.close()
        }
        // Some outcomes keep a later commit of the group whole after a torn one: the case
        // that must not read as corruption.
        #expect(tornInTheMiddle > 0)
        fileSystem.release(sync: first + 1)
        threads.wait()
        try store.close()
    }
}

extension GroupCommitTests {
    @Test(
        "damage to an acknowledged transaction is corruption when a later one's durable mark covers it, a torn tail when only its own group follows"
    )
    func durableMarkTellsDamageFromTornGroup() throws {
        let fileSystem = GatedFileSystem(base: MemoryFileSystem())
        let store = try openStore(on: fileSystem)
        let keys = Array(store.allocateKeys(3))
        // X is durable before W is written; Y is written while W's flush runs, and marks the
        // log durable through X.
        let x = try put(keys[0], into: store)
        let flush = fileSystem.syncCount + 1
        fileSystem.hold(sync: flush)
        let threads = DispatchGroup()
        let numbers = Mutex<[UInt64]>([])
        spawn(threads) {
            if let info = try? put(keys[1], into: store) {
                numbers.withLock { $0.append(info.number) }
            }
        }
        fileSystem.waitUntilHolding(sync: flush)
        let writes = fileSystem.writeCount
        spawn(threads) {
            if let info = try? put(keys[2], into: store) {
                numbers.withLock { $0.append(info.number) }
            }
        }
        fileSystem.waitForWrites(writes + 1)
        fileSystem.release(sync: flush)
        threads.wait()
        #expect(numbers.withLock { $0.sorted() } == [2, 3])
        try store.close()
        let reopened = try openStore(on: fileSystem)
        #expect(try reopened.history(after: 0).transactions.map(\.number) == [1, 2, 3])
        try reopened.close()

        let original = try fileSystem.open("/group.olog", mode: .read)
        let bytes = try original.read(at: 0, count: Int(try original.size()))
        original.close()
        var readOnly = StoreOptions(fileSystem: fileSystem)
        readOnly.readOnly = true
        // Without the index, which would show every transaction was acknowledged.
        try fileSystem.remove("/group.olog" + LogFormat.indexSuffix)
        func open(damaging offsets: [UInt64]) throws -> LogStore {
            var copy = bytes
            for offset in offsets { copy[Int(offset) + 12] ^= 0x10 }
            let file = try fileSystem.open("/group.olog", mode: .readWrite)
            try file.write(copy, at: 0)
            file.close()
            return try LogStore.open(path: "/group.olog", options: readOnly)
        }
        let sector = UInt64(LogFormat.sectorSize)
        // W damaged as well as X: Y, written before W was durable, still shows X was.
        let both = #expect(throws: StoreError.self) {
            try open(damaging: [x.offset, x.offset + sector])
        }
        #expect(both?.code == .corrupt)
        // W damaged alone: only Y follows, written before W was durable, so nothing shows W
        // was acknowledged; the two are dropped as a torn group would be.
        let torn = try open(damaging: [x.offset + sector])
        #expect(torn.damageAtOpen?.kind == .tornTail)
        #expect(torn.transactionCount == 1)
        try torn.close()
        // X damaged alone: W, written after X was durable and intact, shows it was.
        let single = #expect(throws: StoreError.self) { try open(damaging: [x.offset]) }
        #expect(single?.code == .corrupt)
    }
}

extension GroupCommitTests {
    @Test(
        "commits, updates and deletes from threads beside compactions and checkpoints all land as the threads left them"
    )
    func commitsBesideCompactions() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("busy.olog")
        let store = try LogStore.open(path: path)
        let threadCount = 6
        let perThread = 30
        let keys = Array(store.allocateKeys(threadCount * perThread))
        let failures = Mutex<[String]>([])
        let writersDone = Mutex(0)
        let threads = DispatchGroup()
        for thread in 0..<threadCount {
            spawn(threads) {
                let mine = keys[(thread * perThread)..<((thread + 1) * perThread)]
                do {
                    for key in mine { try put(key, into: store) }
                    // Every other key updated, every third deleted, one commit each.
                    for key in mine where key % 2 == 0 {
                        var transaction = Transaction()
                        transaction.put(
                            key: key,
                            entity: 1,
                            payload: [1] + value(of: key),
                            isInsert: false
                        )
                        try store.commit(transaction)
                    }
                    for key in mine where key % 3 == 0 {
                        var transaction = Transaction()
                        transaction.delete(key: key, entity: 1)
                        let info = try store.commit(transaction)
                        if info.deleted != 1 { failures.withLock { $0.append("delete \(key)") } }
                    }
                } catch {
                    failures.withLock { $0.append("thread \(thread): \(error)") }
                }
                writersDone.withLock { $0 += 1 }
            }
        }
        spawn(threads) {
            var round = 0
            while writersDone.withLock({ $0 }) < threadCount {
                do {
                    if round % 2 == 0 { try store.compact() } else { try store.checkpoint() }
                } catch {
                    failures.withLock { $0.append("compaction: \(error)") }
                }
                round += 1
                Thread.sleep(forTimeInterval: 0.002)
            }
        }
        threads.wait()
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(3) })")
        var expected: [ObjectKey: [UInt8]] = [:]
        for key in keys where key % 3 != 0 {
            expected[key] = key % 2 == 0 ? [1] + value(of: key) : value(of: key)
        }
        #expect(try contents(of: store) == expected)
        let count = UInt64(
            keys.count + keys.filter { $0 % 2 == 0 }.count + keys.filter { $0 % 3 == 0 }.count
        )
        #expect(store.transactionCount == count)
        try store.close()
        let reopened = try LogStore.open(path: path)
        #expect(try contents(of: reopened) == expected)
        #expect(reopened.transactionCount == count)
        try reopened.close()
    }
}

/// Whether the store file on `fileSystem` ends with a valid commit record.
private func lastCommitIsWhole(on fileSystem: PowerLossFileSystem) throws -> Bool {
    let file = try fileSystem.open("/group.olog", mode: .read)
    let size = try file.size()
    let header = try StoreHeader.read(from: file, path: "/group.olog", fileSize: size)
    let scanner = LogScanner(file: file, path: "/group.olog", fileSize: size, header: header)
    return try scanner.commitRecord(endingAt: size) != nil
}
