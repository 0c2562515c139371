import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ObjectLogStore

@Suite("Fault injection")
struct FaultInjectionTests {
    @Test("a failed fsync poisons the handle; a reopen shows the last committed state")
    func fsyncPoisons() throws {
        let fileSystem = FaultyFileSystem()
        let options = StoreOptions(fileSystem: fileSystem)
        let store = try LogStore.open(path: "/s.olog", options: options)
        let first = try insert(store, 1)
        fileSystem.fail(.sync, after: 1)
        #expect(throws: StoreError.self) { _ = try insert(store, 2) }
        let poisoned = #expect(throws: StoreError.self) { _ = try insert(store, 3) }
        #expect(poisoned?.code == .poisoned)
        try store.close()
        let reopened = try LogStore.open(path: "/s.olog", options: options)
        // The unsynced save may or may not have reached the disk; the acknowledged one has.
        #expect(try reopened.readObject(first)?.payload == [1])
        let afterwards = try insert(reopened, 4)
        #expect(try reopened.readObject(afterwards)?.payload == [4])
    }

    @Test(
        "a large save whose flush fails leaves the handle's directory as it was before it",
        arguments: [false, true]
    )
    func failedOverlappedFlushIsUndone(putsFirst: Bool) throws {
        let fileSystem = FaultyFileSystem()
        let options = StoreOptions(fileSystem: fileSystem)
        let store = try LogStore.open(path: "/l.olog", options: options)
        // Large enough that the key directory is updated while the flush runs.
        let count = CommitWriter.overlappedSyncChanges + 100
        var first = Transaction()
        let keys = Array(store.allocateKeys(count))
        for key in keys { first.put(key: key, entity: 1, payload: [1], isInsert: true) }
        try store.commit(first)
        let before = try snapshot(store)
        let bytesBefore = store.state.liveRecordBytes
        // Half updated (one moved to entity 2, one put twice), a quarter deleted, as many new.
        // With every put ahead of the deletes, the puts keep the transaction's framing (the
        // directory's old locations are then kept apart from those of the deletes).
        var second = Transaction()
        for key in keys[..<(count / 2)] {
            second.put(key: key, entity: key == keys[0] ? 2 : 1, payload: [2, 2], isInsert: false)
        }
        second.put(key: keys[1], entity: 1, payload: [2, 2, 2], isInsert: false)
        let deletes = keys[(count / 2)..<(3 * count / 4)]
        if !putsFirst {
            for key in deletes { second.delete(key: key, entity: 1) }
        }
        for key in store.allocateKeys(count / 4) {
            second.put(key: key, entity: 1, payload: [3], isInsert: true)
        }
        if putsFirst {
            for key in deletes { second.delete(key: key, entity: 1) }
        }
        fileSystem.fail(.sync, after: 1)
        #expect(throws: StoreError.self) {
            _ = try store.commit(second)
        }
        // Reads still work on the poisoned handle, and see the state before the failed save.
        #expect(try snapshot(store) == before)
        #expect(store.liveCount(entity: 1) == count && store.liveCount(entity: 2) == 0)
        #expect(store.state.liveRecordBytes == bytesBefore)
        let poisoned = #expect(throws: StoreError.self) { _ = try insert(store, 9) }
        #expect(poisoned?.code == .poisoned)
        try store.close()
        // A reopen shows the acknowledged save (and the unsynced one only if it reached the
        // disk whole).
        let reopened = try LogStore.open(path: "/l.olog", options: options)
        #expect(try reopened.readObject(keys[count - 1])?.payload == [1])
        try reopened.close()
    }

    @Test("a failed write is cut back, so the next save follows the last commit")
    func failedWriteIsCutBack() throws {
        let fileSystem = FaultyFileSystem()
        let options = StoreOptions(fileSystem: fileSystem)
        let store = try LogStore.open(path: "/w.olog", options: options)
        let first = try insert(store, 1)
        let end = store.fileBytes
        fileSystem.fail(.write, after: 1)
        let error = #expect(throws: StoreError.self) { _ = try insert(store, 2) }
        #expect(error?.code == .io)
        #expect(store.fileBytes == end)
        let third = try insert(store, 3)
        try store.close()
        let reopened = try LogStore.open(path: "/w.olog", options: options)
        #expect(reopened.damageAtOpen == nil)
        #expect(try snapshot(reopened) == [first: [1], third: [3]])
    }

    private enum Scenario: String, CaseIterable {
        case save, metadataUpdate, compaction
    }

    /// Puts a store in its starting state; returns that state.
    private func prepare(_ fileSystem: FaultyFileSystem) throws -> [ObjectKey: [UInt8]] {
        let store = try LogStore.open(
            path: "/f.olog",
            options: StoreOptions(fileSystem: fileSystem)
        )
        for round in 0..<6 {
            var transaction = Transaction()
            transaction.put(
                key: store.allocateKeys(1).lowerBound,
                entity: 1,
                payload: [UInt8(round), 7],
                isInsert: true
            )
            if round % 2 == 1 { transaction.delete(key: ObjectKey(round), entity: 1) }
            try store.commit(transaction)
        }
        let state = try snapshot(store)
        try store.close()
        return state
    }

    private func run(_ scenario: Scenario, on store: LogStore) throws {
        switch scenario {
        case .save:
            var transaction = Transaction()
            transaction.put(
                key: store.allocateKeys(1).lowerBound,
                entity: 1,
                payload: [99],
                isInsert: true
            )
            transaction.delete(key: 2, entity: 1)
            try store.commit(transaction)
        case .metadataUpdate:
            var transaction = Transaction()
            transaction.metadata = ["changed": .bool(true)]
            try store.commit(transaction)
        case .compaction:
            try store.compact()
        }
    }

    @Test(
        "EIO and ENOSPC at every write, fsync, rename and directory sync of a save, a metadata update and a compaction",
        arguments: Scenario.allCases
    )
    private func everyFailurePoint(_ scenario: Scenario) throws {
        // Count the operations the scenario performs.
        let counting = FaultyFileSystem()
        _ = try prepare(counting)
        let store = try LogStore.open(path: "/f.olog", options: StoreOptions(fileSystem: counting))
        let before = FaultyFileSystem.Operation.allCases.map { counting.count($0) }
        try run(scenario, on: store)
        let expectedAfter = try snapshot(store)
        let expectedMetadata = store.metadata
        let counts = FaultyFileSystem.Operation.allCases.enumerated().map {
            counting.count($1) - before[$0]
        }
        #expect(counts.reduce(0, +) > 0)

        var tried = 0
        for (index, operation) in FaultyFileSystem.Operation.allCases.enumerated()
        where counts[index] > 0 {
            for call in 1...counts[index] {
                for code in [EIO, ENOSPC] {
                    let fileSystem = FaultyFileSystem()
                    let initial = try prepare(fileSystem)
                    let options = StoreOptions(fileSystem: fileSystem)
                    let store = try LogStore.open(path: "/f.olog", options: options)
                    fileSystem.fail(operation, after: call, errno: code)
                    let error = #expect(
                        throws: StoreError.self,
                        "\(scenario) \(operation) #\(call)"
                    ) { try run(scenario, on: store) }
                    #expect(error?.errno == code || error?.code == .io)
                    if operation == .sync && scenario != .compaction {
                        // A failed fdatasync poisons the handle.
                        let next = #expect(throws: StoreError.self) { try run(.save, on: store) }
                        #expect(next?.code == .poisoned, "\(scenario) \(operation) #\(call)")
                    }
                    try? store.close()
                    fileSystem.heal()
                    let reopened = try LogStore.open(path: "/f.olog", options: options)
                    let state = try snapshot(reopened)
                    // The last committed state: before the change, or (when the failure came
                    // after the change was durable, or its durability is unknown) after it.
                    #expect(
                        state == initial
                            || (state == expectedAfter && reopened.metadata == expectedMetadata),
                        "\(scenario): \(operation) #\(call) errno \(code)"
                    )
                    if operation == .write && scenario != .compaction {
                        #expect(
                            state == initial,
                            "a failed write must leave the last commit: \(scenario) #\(call)"
                        )
                    }
                    // And it takes new saves.
                    try run(.save, on: reopened)
                    try reopened.close()
                    tried += 1
                }
            }
        }
        #expect(tried > 0)
        print(
            "fault injection, \(scenario): \(tried) failure points tried (counts write/sync/rename/dirsync \(counts))"
        )
    }
}
