import Foundation
import TestSupport
import Testing

@testable import ObjectLogStore

/// Builds a store of `transactions` small transactions and records the live state after each.
private func makeHistory(
    path: String,
    transactions: Int,
    seed: UInt64
) throws -> (states: [[ObjectKey: [UInt8]]], ends: [UInt64]) {
    let store = try LogStore.open(path: path)
    var generator = SeededGenerator(seed: seed)
    var model: [ObjectKey: [UInt8]] = [:]
    var states: [[ObjectKey: [UInt8]]] = [model]
    var ends: [UInt64] = [store.fileBytes]
    for number in 0..<transactions {
        var transaction = Transaction()
        for _ in 0..<Int.random(in: 1...3, using: &generator) {
            if !model.isEmpty, Int.random(in: 0..<4, using: &generator) == 0 {
                let key = model.keys.sorted()[Int.random(in: 0..<model.count, using: &generator)]
                transaction.delete(key: key, entity: 1)
                model[key] = nil
            } else if !model.isEmpty, Bool.random(using: &generator) {
                let key = model.keys.sorted()[Int.random(in: 0..<model.count, using: &generator)]
                let payload = [UInt8(number & 0xFF), 1, 2]
                transaction.put(key: key, entity: 1, payload: payload, isInsert: false)
                model[key] = payload
            } else {
                let key = store.allocateKeys(1).lowerBound
                let payload = (0..<Int.random(in: 0..<24, using: &generator)).map { _ in
                    UInt8.random(in: 0...255, using: &generator)
                }
                transaction.put(key: key, entity: 1, payload: payload, isInsert: true)
                model[key] = payload
            }
        }
        if number % 7 == 0 { transaction.metadata = ["n": .integer(Int64(number))] }
        try store.commit(transaction)
        states.append(model)
        ends.append(store.fileBytes)
    }
    try store.close()
    try FileManager.default.removeItem(atPath: path + "-index")
    return (states, ends)
}

/// The long forms (as RELIABILITY.md reports them) run with `OBJECTLOG_LONG_TESTS=1`; the
/// default quick forms keep `swift test` fast on a two-core machine.
let longTests = ProcessInfo.processInfo.environment["OBJECTLOG_LONG_TESTS"] == "1"

@Suite("Crash consistency")
struct CrashConsistencyTests {
    @Test(
        "cutting the file at every byte of the last transactions leaves exactly the last complete commit"
    )
    func truncationAtEveryByte() throws {
        let directory = TemporaryDirectory()
        let original = directory.file("original.olog")
        let (states, ends) = try makeHistory(
            path: original,
            transactions: longTests ? 300 : 60,
            seed: 11
        )
        let bytes = readBytes(original)
        let firstCut = Int(ends[ends.count - (longTests ? 21 : 9)])
        var cuts = 0
        // The cut files live in memory (the store's file-system seam): the same code paths
        // as on disk, without tens of thousands of fsyncs.
        let path = "/cut.olog"
        for cut in firstCut..<bytes.count {
            let fileSystem = MemoryFileSystem()
            let options = StoreOptions(fileSystem: fileSystem)
            let file = try fileSystem.open(path, mode: .create(permissions: 0o600))
            try file.write(Array(bytes[0..<cut]), at: 0)
            file.close()
            // The state is that of the last commit wholly before the cut.
            let committed = ends.lastIndex { $0 <= UInt64(cut) }!
            let store = try LogStore.open(path: path, options: options)
            #expect(try snapshot(store) == states[committed], "cut at \(cut)")
            #expect(store.transactionCount == UInt64(committed))
            #expect(store.fileBytes == ends[committed])
            // Appending after the cut works, and survives a reopen (without the index, so the
            // whole log is replayed).
            var transaction = Transaction()
            let key = store.allocateKeys(1).lowerBound
            transaction.put(key: key, entity: 2, payload: [0xAB], isInsert: true)
            try store.commit(transaction)
            try store.close()
            var replay = options
            replay.usesIndex = false
            let reopened = try LogStore.open(path: path, options: replay)
            var expected = states[committed]
            expected[key] = [0xAB]
            #expect(try snapshot(reopened) == expected, "cut at \(cut), after appending")
            try reopened.close()
            cuts += 1
        }
        #expect(cuts == bytes.count - firstCut)
        print(
            "truncation: \(cuts) cuts over the last \(ends.count - 1 - ends.firstIndex(of: UInt64(firstCut))!) transactions"
        )
    }

    @Test("a flipped bit or a 0xFF byte anywhere is detected, never a crash")
    func bitFlips() throws {
        let directory = TemporaryDirectory()
        let original = directory.file("flip-original.olog")
        let (states, ends) = try makeHistory(
            path: original,
            transactions: longTests ? 60 : 16,
            seed: 5
        )
        let bytes = readBytes(original)
        let path = directory.file("flip.olog")
        var readOnly = StoreOptions()
        readOnly.readOnly = true
        let lastTransactionStart = Int(ends[ends.count - 2])
        var detected = 0
        for position in 0..<bytes.count {
            for damage in 0..<2 {
                var copy = bytes
                if damage == 0 {
                    copy[position] ^= 1 << UInt8(position % 8)
                } else {
                    copy[position] = 0xFF
                }
                if copy == bytes { continue }
                writeBytes(copy, to: path)
                do {
                    let store = try LogStore.open(path: path, options: readOnly)
                    let state = try snapshot(store)
                    // Damage inside the last transaction is indistinguishable from a torn write
                    // and drops that transaction; anywhere else it must be reported.
                    if position >= lastTransactionStart {
                        #expect(
                            state == states[states.count - 2] || state == states.last!,
                            "damage at \(position)"
                        )
                    } else {
                        Issue.record("damage at \(position) went unnoticed")
                    }
                } catch let error as StoreError {
                    #expect(
                        [.corrupt, .notAStore, .unsupportedVersion].contains(error.code),
                        "\(error)"
                    )
                    if error.code == .corrupt { #expect(error.offset != nil) }
                    detected += 1
                }
            }
        }
        #expect(detected > 0)
        print(
            "bit flips: \(bytes.count) bytes × 2 kinds of damage, \(detected) detected as errors, the rest (inside the last transaction) read as an earlier commit"
        )
    }
}
