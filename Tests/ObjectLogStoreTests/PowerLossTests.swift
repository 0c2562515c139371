import Foundation
import TestSupport
import Testing

@testable import ObjectLogStore

/// What the store must show after a power cut: the state after the last acknowledged save, or
/// after the save that was in flight.
private struct Expectation {
    var acknowledged: [ObjectKey: [UInt8]] = [:]
    var acknowledgedMetadata: Metadata = [:]
    var inFlight: [ObjectKey: [UInt8]]?
    var inFlightMetadata: Metadata?
}

/// Saves, metadata writes, external blobs and compactions, until the file system "crashes".
private func runWorkload(on fileSystem: PowerLossFileSystem, seed: UInt64) -> Expectation {
    var expectation = Expectation()
    var generator = SeededGenerator(seed: seed)
    do {
        let store = try LogStore.open(
            path: "/db/s.olog",
            options: StoreOptions(fileSystem: fileSystem)
        )
        for round in 0..<24 {
            var next = expectation.acknowledged
            var nextMetadata = expectation.acknowledgedMetadata
            var transaction = Transaction()
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                if !next.isEmpty, Int.random(in: 0..<4, using: &generator) == 0 {
                    let key = next.keys.sorted()[Int.random(in: 0..<next.count, using: &generator)]
                    transaction.delete(key: key, entity: 1)
                    next[key] = nil
                } else {
                    let key = store.allocateKeys(1).lowerBound
                    var payload = (0..<Int.random(in: 0..<700, using: &generator)).map { _ in
                        UInt8.random(in: 0...255, using: &generator)
                    }
                    var blobs: [BlobID] = []
                    if round % 5 == 2 {
                        let blob = try store.writeBlob(Data(payload))
                        blobs = [blob]
                        payload = blob.bytes
                    }
                    transaction.put(
                        key: key,
                        entity: 1,
                        payload: payload,
                        blobs: blobs,
                        isInsert: true
                    )
                    next[key] = payload
                }
            }
            if round % 3 == 0 {
                nextMetadata = ["round": .integer(Int64(round))]
                transaction.metadata = nextMetadata
            }
            expectation.inFlight = next
            expectation.inFlightMetadata = nextMetadata
            try store.commit(transaction)
            expectation.acknowledged = next
            expectation.acknowledgedMetadata = nextMetadata
            expectation.inFlight = nil
            if round % 8 == 7 { try store.compact() }
        }
        try store.close()
    } catch {
        // The power was cut (PowerLossFileSystem.Crash), or a write failed after it.
    }
    return expectation
}

@Suite("Simulated power loss")
struct PowerLossTests {
    @Test("at every sync point and for several seeds, no acknowledged save is lost")
    func everySyncPoint() throws {
        let total = PowerLossFileSystem(crashAtSync: nil)
        _ = runWorkload(on: total, seed: 1)
        let syncPoints = total.syncCount
        #expect(syncPoints > 50)
        var tried = 0
        for crashAt in 1...syncPoints {
            for seed in UInt64(1)...4 {
                let fileSystem = PowerLossFileSystem(crashAtSync: crashAt)
                let expectation = runWorkload(on: fileSystem, seed: 1)
                let disk = fileSystem.afterPowerLoss(seed: seed &* 7919 &+ UInt64(crashAt))
                let options = StoreOptions(fileSystem: disk)
                let store: LogStore
                do {
                    store = try LogStore.open(path: "/db/s.olog", options: options)
                } catch let error as StoreError where error.code == .notFound {
                    // Only before the store's creation was acknowledged.
                    #expect(
                        expectation.acknowledged.isEmpty
                            && expectation.acknowledgedMetadata.isEmpty,
                        "crash at \(crashAt)"
                    )
                    tried += 1
                    continue
                }
                let state = try snapshot(store)
                let metadata = store.metadata
                let matchesAcknowledged =
                    state == expectation.acknowledged
                    && metadata == expectation.acknowledgedMetadata
                let matchesInFlight =
                    state == expectation.inFlight && metadata == expectation.inFlightMetadata
                #expect(
                    matchesAcknowledged || matchesInFlight,
                    "crash at sync \(crashAt), seed \(seed)"
                )
                // External blobs of live objects survived whole.
                for key in store.liveKeys(entity: nil) {
                    for blob in try store.readObject(key)?.blobs ?? [] {
                        #expect(throws: Never.self, "blob of key \(key), crash at \(crashAt)") {
                            _ = try store.readBlob(blob)
                        }
                    }
                }
                // The store takes new saves after the crash.
                var transaction = Transaction()
                transaction.put(
                    key: store.allocateKeys(1).lowerBound,
                    entity: 9,
                    payload: [1],
                    isInsert: true
                )
                try store.commit(transaction)
                try store.close()
                tried += 1
            }
        }
        #expect(tried == syncPoints * 4)
        print(
            "power loss: \(syncPoints) sync points × 4 seeds = \(tried) crashes, 0 acknowledged saves lost"
        )
    }
}
