import Foundation
import TestSupport
import Testing

@testable import ObjectLogStore

@Suite("Automatic compaction past a reclaimable share")
struct AutoCompactionTests {
    /// Rewrites the same 20 objects of 2 KB again and again.
    func churn(_ store: LogStore, rounds: Int) throws {
        for round in 0..<rounds {
            var transaction = Transaction()
            for key in ObjectKey(1)...20 {
                transaction.put(
                    key: key,
                    entity: 1,
                    payload: [UInt8](repeating: UInt8(truncatingIfNeeded: round), count: 2048),
                    isInsert: round == 0
                )
            }
            _ = try store.commit(transaction)
        }
    }

    @Test("updates keep the file within the share, and every object keeps its latest value")
    func keepsShare() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("churn.olog")
        var options = StoreOptions()
        options.autoCompactionThreshold = 0.5
        options.autoCompactionMinimumBytes = 64 << 10
        let store = try LogStore.open(path: path, options: options)
        _ = store.allocateKeys(20)
        try churn(store, rounds: 60)
        #expect(store.statistics.autoCompactions > 0)
        #expect(store.generation > 1)
        // After any commit the file is at most what one more round adds beyond the share.
        let reclaimable = Double(store.fileBytes - store.liveBytes) / Double(store.fileBytes)
        #expect(reclaimable < 0.5 + 0.2, "reclaimable share \(reclaimable)")
        #expect(store.fileBytes < 4 * store.liveBytes)
        for key in ObjectKey(1)...20 {
            #expect(try store.readObject(key)?.payload == [UInt8](repeating: 59, count: 2048))
        }
        try store.close()
        let reopened = try LogStore.open(path: path)
        #expect(try reopened.readObject(7)?.payload.first == 59)
        try reopened.close()
    }

    @Test("without the option, or below the minimum size, nothing is compacted")
    func offByDefault() throws {
        let directory = TemporaryDirectory()
        let plain = try LogStore.open(path: directory.file("plain.olog"))
        _ = plain.allocateKeys(20)
        try churn(plain, rounds: 30)
        #expect(plain.statistics.autoCompactions == 0)
        #expect(plain.generation == 1)
        try plain.close()
        var options = StoreOptions()
        options.autoCompactionThreshold = 0.5
        options.autoCompactionMinimumBytes = 64 << 20
        let small = try LogStore.open(path: directory.file("small.olog"), options: options)
        _ = small.allocateKeys(20)
        try churn(small, rounds: 30)
        #expect(small.statistics.autoCompactions == 0)
        try small.close()
    }
}
