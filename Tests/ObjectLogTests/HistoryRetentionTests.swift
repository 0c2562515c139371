import Foundation
import TestSupport
import Testing

@testable import ObjectLog
@testable import ObjectLogStore

@Suite("History retention across compaction, and purging")
struct HistoryRetentionTests {
    typealias Saves = HistoryTests

    @Test("with every transaction kept, a compaction and a reopen keep the old values")
    func keepAll() throws {
        let directory = TemporaryDirectory()
        let (container, tokens) = try Saves.threeSaves(directory)
        #expect(container.historyRetention == .untilCompaction)
        try container.setHistoryRetention(.all)
        #expect(container.historyRetention == .all)
        let before = try container.newContext().history(after: tokens[1])
        _ = try container.compact()
        let after = try container.newContext().history(after: tokens[1])
        // The retention's own save is a transaction too.
        #expect(after.map(\.token) == before.map(\.token))
        #expect(after.count == 3)
        let update = try #require(after.first?.changes.first)
        #expect(update.oldValues == ["feed": .double(0.035), "notes": .null])
        #expect(update.newValues == ["feed": .double(0.04), "notes": .string("denser")])
        #expect(after[1].changes.first?.kind == .delete)
        #expect(after[1].changes.first?.oldValues["name"] == .string("waves"))
        try container.close()

        let reopened = try makeContainer(directory)
        defer { try? reopened.close() }
        #expect(reopened.historyRetention == .all)
        let context = reopened.newContext()
        #expect(try context.history(after: tokens[1]).map(\.token) == after.map(\.token))
        // Later saves follow the kept history, and a second compaction keeps both.
        let configuration = try #require(try context.fetch(FetchRequest<Configuration>()).first)
        configuration.kill = 0.05
        try context.save()
        _ = try reopened.compact()
        let all = try context.history()
        #expect(all.first?.token.transaction == 1)
        #expect(all.last?.changes.first?.oldValues == ["kill": .double(0.062)])
        #expect(all.map(\.token.transaction) == Array(1...all.last!.token.transaction))
    }

    @Test("the last N transactions, or those within a duration, are what a compaction keeps")
    func lastTransactionsAndDuration() throws {
        let directory = TemporaryDirectory()
        let (container, tokens) = try Saves.threeSaves(directory)
        defer { try? container.close() }
        try container.setHistoryRetention(.lastTransactions(2))
        let latest = try container.newContext().currentHistoryToken
        _ = try container.compact()
        let context = container.newContext()
        let kept = try context.history(after: HistoryToken(transaction: latest.transaction - 2))
        #expect(kept.count == 2)
        #expect(kept.first?.token == tokens[3])
        #expect(try context.history(after: tokens[2]).map(\.token) == kept.map(\.token))
        let expired = #expect(throws: ObjectLogError.self) {
            try context.history(after: tokens[1])
        }
        #expect(expired?.code == .historyExpired)

        try container.setHistoryRetention(.duration(3600))
        _ = try container.compact()
        #expect(try context.history(after: tokens[3]).count >= 2)
        try container.setHistoryRetention(.duration(0))
        let now = try context.currentHistoryToken
        _ = try container.compact()
        #expect(try context.history(after: now).isEmpty)
        #expect(throws: ObjectLogError.self) { try context.history(after: tokens[3]) }
        let negative = #expect(throws: ObjectLogError.self) {
            try container.setHistoryRetention(.lastTransactions(-1))
        }
        #expect(negative?.code == .invalidArgument)
    }

    @Test("a purge drops what is before its token, in the history file and in the log")
    func purge() throws {
        let directory = TemporaryDirectory()
        let (container, tokens) = try Saves.threeSaves(directory)
        defer { try? container.close() }
        try container.setHistoryRetention(.all)
        _ = try container.compact()
        let path = directory.file("test.objectlog") + "-history"
        let sizeBefore = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int
        try container.purgeHistory(before: tokens[2])
        let sizeAfter = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int
        #expect(try #require(sizeAfter) < #require(sizeBefore))
        let context = container.newContext()
        let expired = #expect(throws: ObjectLogError.self) {
            try context.history(after: tokens[1])
        }
        #expect(expired?.code == .historyExpired)
        let kept = try context.history(after: tokens[2])
        #expect(kept.first?.token == tokens[3])
        #expect(kept.first?.changes.first?.kind == .delete)
        // A purge past the compaction's transactions holds for those still in the log.
        let latest = try context.currentHistoryToken
        try container.purgeHistory(before: latest)
        #expect(throws: ObjectLogError.self) { try context.history(after: tokens[3]) }
        #expect(try context.history(after: latest).count == 1)  // the purge's own save
    }

    @Test("the data of a deleted object's external attribute outlives the compaction")
    func externalDataKept() throws {
        let directory = TemporaryDirectory()
        let container = try makeContainer(directory)
        defer { try? container.close() }
        try container.setHistoryRetention(.all)
        let context = container.newContext()
        let thumbnail = Data(
            (0..<(ExternalStorage.minimumByteCount + 100)).map {
                UInt8(truncatingIfNeeded: $0 &* 7)
            }
        )
        let configuration = Configuration(context: context)
        configuration.name = "spots"
        configuration.thumbnail = thumbnail
        try context.save()
        let start = try context.currentHistoryToken
        context.delete(configuration)
        try context.save()
        let report = try container.compact()
        #expect(report.blobsRemoved == 0)
        let deleted = try #require(try context.history(after: start).first?.changes.first)
        guard case .externalData(let blob, let count)? = deleted.oldValues["thumbnail"] else {
            Issue.record("the thumbnail is not external data: \(deleted.oldValues)")
            return
        }
        #expect(count == thumbnail.count)
        let inspector = try StoreInspector(store: container.coordinator.store)
        #expect(try inspector.data(of: blob) == thumbnail)

        // Once the history no longer names it, the next compaction removes it.
        try container.setHistoryRetention(.untilCompaction)
        #expect(try container.compact().blobsRemoved == 1)
    }

    @Test("a history file that overlaps the log after a crash gives each transaction once")
    func overlapAfterCrash() throws {
        let directory = TemporaryDirectory()
        let (container, tokens) = try Saves.threeSaves(directory)
        defer { try? container.close() }
        try container.setHistoryRetention(.all)
        _ = try container.compact()
        let context = container.newContext()
        let configuration = try #require(try context.fetch(FetchRequest<Configuration>()).first)
        configuration.kill = 0.05
        try context.save()
        // What a compaction that crashed after writing the history file leaves.
        let store = try #require(container.coordinator.store as? LogStore)
        store.lock.lock()
        _ = try store.keepHistoryForCompaction()
        store.lock.unlock()
        let history = try context.history(after: tokens[0])
        let numbers = history.map(\.token.transaction)
        #expect(numbers == Array(numbers.first!...numbers.last!))
        #expect(history.last?.changes.first?.newValues == ["kill": .double(0.05)])
    }

    @Test("a backup carries the kept history")
    func backup() throws {
        let directory = TemporaryDirectory()
        let (container, tokens) = try Saves.threeSaves(directory)
        defer { try? container.close() }
        try container.setHistoryRetention(.all)
        _ = try container.compact()
        let copy = directory.file("copy.objectlog")
        _ = try container.backup(to: copy)
        let restored = try makeContainer(directory, name: "copy.objectlog")
        defer { try? restored.close() }
        let history = try restored.newContext().history(after: tokens[1])
        #expect(history.first?.token == tokens[2])
        #expect(history.first?.changes.first?.newValues["notes"] == .string("denser"))
    }

    @Test("stores without history refuse a retention")
    func unsupported() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let error = #expect(throws: ObjectLogError.self) {
            try container.setHistoryRetention(.all)
        }
        #expect(error?.code == .unsupported)
    }
}
