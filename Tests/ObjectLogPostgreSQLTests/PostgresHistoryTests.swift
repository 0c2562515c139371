import Foundation
import ObjectLogStore
import StoreTestSupport
import Testing

@testable import ObjectLog
@testable import ObjectLogPostgreSQL

/// An entity without relationships, whose batch deletes are one SQL statement.
final class Memo: ManagedObject {
    @Attribute var text = ""
    @Attribute var rank = 0
}

private let historyEntities = labEntities + [Memo.self]

@Suite(
    "Persistent history and pinned reads on the PostgreSQL store",
    .enabled(if: TestServer.runs, TestServer.skipReason)
)
struct PostgresHistoryTests {
    /// Saves an insert of two labs, an update of one, and a delete of the other, after a
    /// retention of `retention`; returns the token after each save.
    static func threeSaves(
        _ container: PersistentContainer,
        retention: HistoryRetention = .all
    ) throws -> [HistoryToken] {
        try container.setHistoryRetention(retention)
        let context = container.newContext()
        context.author = "importer"
        context.name = "import"
        var tokens = [try context.currentHistoryToken]
        let spots = Lab(context: context)
        spots.name = "spots"
        spots.feed = 0.035
        let waves = Lab(context: context)
        waves.name = "waves"
        let run = Run(context: context)
        run.step = 100
        run.lab = spots
        try context.save()
        tokens.append(try context.currentHistoryToken)
        context.author = "editor"
        spots.feed = 0.04
        spots.notes = "denser"
        try context.save()
        tokens.append(try context.currentHistoryToken)
        context.delete(waves)
        try context.save()
        tokens.append(try context.currentHistoryToken)
        return tokens
    }

    @Test("by default no history is kept, as with Core Data's history tracking off")
    func offByDefault() throws {
        let container = try PersistentContainer(
            url: try TestServer.freshDatabase(),
            for: labEntities
        )
        defer { try? container.close() }
        #expect(container.historyRetention == .untilCompaction)
        let context = container.newContext()
        let before = try context.currentHistoryToken
        let lab = Lab(context: context)
        lab.name = "a"
        try context.save()
        #expect(try context.history(after: context.currentHistoryToken).isEmpty)
        #expect(throws: ObjectLogError.self) { try context.history(after: before) }
        do {
            _ = try context.history(after: before)
        } catch {
            #expect(error.code == .historyExpired)
        }
        #expect(throws: ObjectLogError.self) { try container.newContext(asOf: before) }
    }

    @Test("each save is a transaction with its author, context, and old and new values")
    func transactions() throws {
        let url = try TestServer.freshDatabase()
        let container = try PersistentContainer(url: url, for: historyEntities)
        defer { try? container.close() }
        let tokens = try Self.threeSaves(container)
        // Another process reads the same history.
        let other = try PersistentContainer(url: url, for: historyEntities)
        defer { try? other.close() }
        let history = try other.newContext().history(after: tokens[0])
        #expect(history.map(\.token) == Array(tokens.dropFirst()))
        #expect(history.map(\.author) == ["importer", "editor", "editor"])
        #expect(history.allSatisfy { $0.contextName == "import" && !$0.changesModel })

        let inserted = history[0].changes
        #expect(inserted.map(\.kind) == [.insert, .insert, .insert])
        let spots = try #require(inserted.first { $0.newValues["name"] == .string("spots") })
        #expect(spots.objectID.entityName == "Lab")
        #expect(spots.newValues["feed"] == .double(0.035))
        #expect(spots.oldValues.isEmpty)
        let run = try #require(inserted.first { $0.objectID.entityName == "Run" })
        #expect(run.newValues["lab"] == .toOne(spots.objectID.key))

        let update = try #require(history[1].changes.first)
        #expect(history[1].changes.count == 1)
        #expect(update.kind == .update)
        #expect(update.objectID == spots.objectID)
        #expect(update.changedProperties == ["feed", "notes"])
        #expect(update.oldValues == ["feed": .double(0.035), "notes": .null])
        #expect(update.newValues == ["feed": .double(0.04), "notes": .string("denser")])

        let delete = try #require(history[2].changes.first)
        #expect(delete.kind == .delete)
        #expect(delete.oldValues["name"] == .string("waves"))
        #expect(delete.newValues.isEmpty)

        #expect(try other.newContext().history(after: tokens[0], author: "editor").count == 2)
        #expect(try other.newContext().history(after: tokens[0], entities: ["Run"]).count == 1)
    }

    @Test("batch updates and deletes are transactions of their own, old values included")
    func batchRequests() throws {
        let container = try PersistentContainer(
            url: try TestServer.freshDatabase(),
            for: historyEntities
        )
        defer { try? container.close() }
        try container.setHistoryRetention(.all)
        let context = container.newContext()
        for rank in 0..<4 {
            let memo = Memo(context: context)
            memo.text = "memo \(rank)"
            memo.rank = rank
        }
        try context.save()
        let token = try context.currentHistoryToken
        _ = try context.execute(
            BatchUpdateRequest<Memo>(
                predicate: #Predicate { $0.rank < 2 },
                updates: [.set(\.text, to: "low")]
            )
        )
        _ = try context.execute(BatchDeleteRequest<Memo>(predicate: #Predicate { $0.rank == 3 }))
        let history = try context.history(after: token)
        #expect(history.count == 2)
        let updates = history[0].changes
        #expect(updates.map(\.kind) == [.update, .update])
        #expect(
            Set(updates.map { $0.oldValues["text"] }) == [.string("memo 0"), .string("memo 1")]
        )
        #expect(updates.allSatisfy { $0.newValues == ["text": .string("low")] })
        let delete = try #require(history[1].changes.first)
        #expect(history[1].changes.count == 1)
        #expect(delete.kind == .delete)
        #expect(delete.oldValues["rank"] == .int(3))
    }

    @Test("the last N transactions are kept; a purge drops what is before its token")
    func retentionAndPurge() throws {
        let url = try TestServer.freshDatabase()
        let container = try PersistentContainer(url: url, for: historyEntities)
        defer { try? container.close() }
        let tokens = try Self.threeSaves(container, retention: .lastTransactions(2))
        let context = container.newContext()
        do {
            _ = try context.history(after: tokens[0])
            Issue.record("a token older than the last two transactions did not expire")
        } catch {
            #expect(error.code == .historyExpired)
        }
        #expect(try context.history(after: tokens[1]).map(\.token) == [tokens[2], tokens[3]])

        try container.setHistoryRetention(.all)
        let last = try context.currentHistoryToken
        let lab = try #require(try context.fetch(Lab.self).first)
        lab.steps = 7
        try context.save()
        try container.purgeHistory(before: last)
        #expect(throws: ObjectLogError.self) { try context.history(after: tokens[2]) }
        let kept = try context.history(after: last)
        #expect(kept.first?.changes.first?.newValues["steps"] == .int(7))

        // A retention that keeps none empties the history.
        try container.setHistoryRetention(.untilCompaction)
        let admin = try PostgresConnection(url: url)
        #expect(try admin.execute("SELECT count(*) FROM objectlog_history").rows == [["0"]])
    }

    @Test("a pinned context reads the state of its token while another process saves")
    func pinnedContext() throws {
        let url = try TestServer.freshDatabase()
        let container = try PersistentContainer(url: url, for: historyEntities)
        defer { try? container.close() }
        let tokens = try Self.threeSaves(container)
        func labs(_ context: ManagedObjectContext) throws -> [String: Double] {
            Dictionary(uniqueKeysWithValues: try context.fetch(Lab.self).map { ($0.name, $0.feed) })
        }
        #expect(try labs(container.newContext(asOf: tokens[0])).isEmpty)
        #expect(
            try labs(container.newContext(asOf: tokens[1])) == ["spots": 0.035, "waves": 0.055]
        )
        #expect(try labs(container.newContext(asOf: tokens[2])) == ["spots": 0.04, "waves": 0.055])

        let pinned = try container.newContext(asOf: tokens[3])
        let other = try PersistentContainer(url: url, for: historyEntities)
        defer { try? other.close() }
        let writing = other.newContext()
        let spots = try #require(try writing.fetch(Lab.self).first)
        spots.feed = 0.09
        let added = Lab(context: writing)
        added.name = "added"
        try writing.save()
        #expect(try labs(pinned) == ["spots": 0.04])
        let run = try #require(try pinned.fetch(Run.self).first)
        #expect(run.lab?.name == "spots" && run.step == 100)

        let lab = try #require(try pinned.fetch(Lab.self).first)
        lab.notes = "changed"
        #expect(throws: ObjectLogError.self) { try pinned.save() }
        do {
            _ = try container.newContext(asOf: HistoryToken(transaction: 1_000))
            Issue.record("a context was pinned to a transaction not committed yet")
        } catch {
            #expect(error.code == .invalidArgument)
        }
    }

    @Test("the external data of replaced and deleted values stays readable through the history")
    func externalData() throws {
        let url = try TestServer.freshDatabase()
        let container = try PersistentContainer(url: url, for: historyEntities)
        defer { try? container.close() }
        try container.setHistoryRetention(.lastTransactions(2))
        let context = container.newContext()
        let first = Data((0..<40_000).map { UInt8(truncatingIfNeeded: $0 * 7) })
        let second = Data((0..<40_000).map { UInt8(truncatingIfNeeded: $0 * 11) })
        let lab = Lab(context: context)
        lab.name = "big"
        lab.thumbnail = first
        try context.save()
        let inserted = try context.currentHistoryToken
        lab.thumbnail = second
        try context.save()
        context.delete(lab)
        try context.save()
        let history = try context.history(after: inserted)
        guard
            case .externalData(let replaced, let count)? = history[0].changes[0].oldValues[
                "thumbnail"
            ]
        else {
            Issue.record("the old thumbnail is not external data")
            return
        }
        #expect(count == first.count)
        #expect(try context.externalData(replaced) == first)
        guard case .externalData(let deleted, _)? = history[1].changes[0].oldValues["thumbnail"]
        else {
            Issue.record("the deleted thumbnail is not external data")
            return
        }
        #expect(try context.externalData(deleted) == second)
        let pinned = try container.newContext(asOf: inserted)
        #expect(try pinned.fetch(Lab.self).first?.thumbnail == first)

        // Once its transaction leaves the history, so does the data only it kept.
        for step in 0..<2 {
            let memo = Memo(context: context)
            memo.rank = step
            try context.save()
        }
        #expect(throws: ObjectLogError.self) { try context.externalData(replaced) }
        let admin = try PostgresConnection(url: url)
        defer { admin.close() }
        #expect(try admin.execute("SELECT count(*) FROM objectlog_history_blobs").rows == [["0"]])
    }

    @Test("a migration is a transaction of the history; earlier values read in their version")
    func migration() throws {
        let url = try TestServer.freshDatabase()
        let tokens: [HistoryToken]
        do {
            let container = try PersistentContainer(url: url, for: labEntities)
            tokens = try Self.threeSaves(container)
            try container.close()
        }
        let later = try PersistentContainer(url: url, for: LaterModel.entities)
        defer { try? later.close() }
        let context = later.newContext()
        let history = try context.history(after: tokens[0])
        #expect(history.count == 4)
        #expect(history.last?.changesModel == true)
        #expect(history.last?.changes.isEmpty == true)
        #expect(history[1].changes.first?.oldValues["feed"] == .double(0.035))
        do {
            _ = try later.newContext(asOf: tokens[2])
            Issue.record("a context was pinned to a state before a migration")
        } catch {
            #expect(error.code == .unsupported)
        }
    }

    @Test("another process's transactions arrive in order through the transactions sequence")
    func followsOtherProcess() async throws {
        let url = try TestServer.freshDatabase()
        let writer = try PersistentContainer(url: url, for: historyEntities)
        let reader = try PersistentContainer(url: url, for: historyEntities)
        defer {
            try? writer.close()
            try? reader.close()
        }
        try writer.setHistoryRetention(.all)
        let start = try reader.newContext().currentHistoryToken
        let task = Task {
            var received: [[String]] = []
            for try await transaction in reader.transactions(after: start) {
                received.append(
                    transaction.changes.compactMap {
                        if case .string(let name)? = $0.newValues["name"] { name } else { nil }
                    }
                )
                if received.count == 2 { break }
            }
            return received
        }
        let context = writer.newContext()
        for name in ["first", "second"] {
            let lab = Lab(context: context)
            lab.name = name
            try context.save()
        }
        let watchdog = Task {
            try? await Task.sleep(for: .seconds(20))
            task.cancel()
        }
        defer { watchdog.cancel() }
        #expect(try await task.value == [["first"], ["second"]])
    }
}
