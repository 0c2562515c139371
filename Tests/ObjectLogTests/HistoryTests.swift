import Foundation
import ObjectLogStore
import TestSupport
import Testing

@testable import ObjectLog

@Suite("Persistent history: transactions with old and new values")
struct HistoryTests {
    /// A store with three saves: an insert of two configurations and a snapshot, an update
    /// of one's feed and notes, and a delete of the other.
    static func threeSaves(
        _ directory: TemporaryDirectory
    ) throws -> (PersistentContainer, [HistoryToken]) {
        let container = try makeContainer(directory)
        let context = container.newContext()
        var tokens = [try context.currentHistoryToken]
        let spots = Configuration(context: context)
        spots.name = "spots"
        spots.feed = 0.035
        let waves = Configuration(context: context)
        waves.name = "waves"
        let snapshot = Snapshot(context: context)
        snapshot.step = 100
        snapshot.configuration = spots
        try context.save()
        tokens.append(try context.currentHistoryToken)
        spots.feed = 0.04
        spots.notes = "denser"
        try context.save()
        tokens.append(try context.currentHistoryToken)
        context.delete(waves)
        try context.save()
        tokens.append(try context.currentHistoryToken)
        return (container, tokens)
    }

    @Test("each save is a transaction: inserts with their values, updates old → new, deletes")
    func transactions() throws {
        let directory = TemporaryDirectory()
        let (container, tokens) = try Self.threeSaves(directory)
        defer { try? container.close() }
        // The store's first transaction recorded its model version.
        #expect(tokens.map(\.transaction) == [1, 2, 3, 4])
        let all = try container.newContext().history()
        #expect(all.map(\.token) == tokens)
        #expect(all[0].changesModel && all[0].changes.isEmpty)
        let history = Array(all.dropFirst())
        #expect(history.allSatisfy { !$0.changesModel })

        let inserted = history[0].changes
        #expect(inserted.map(\.kind) == [.insert, .insert, .insert])
        let spots = try #require(inserted.first { $0.newValues["name"] == .string("spots") })
        #expect(spots.objectID.entityName == "Configuration")
        #expect(spots.newValues["feed"] == .double(0.035))
        #expect(spots.oldValues.isEmpty)
        #expect(spots.changedProperties.contains("name"))
        let snapshot = try #require(inserted.first { $0.objectID.entityName == "Snapshot" })
        #expect(snapshot.newValues["step"] == .int(100))
        #expect(snapshot.newValues["configuration"] == .toOne(spots.objectID.key))

        let update = try #require(history[1].changes.first)
        #expect(history[1].changes.count == 1)
        #expect(update.kind == .update)
        #expect(update.objectID == spots.objectID)
        #expect(update.changedProperties == ["feed", "notes"])
        #expect(update.oldValues == ["feed": .double(0.035), "notes": .null])
        #expect(update.newValues == ["feed": .double(0.04), "notes": .string("denser")])

        let delete = try #require(history[2].changes.first)
        #expect(history[2].changes.count == 1)
        #expect(delete.kind == .delete)
        #expect(delete.oldValues["name"] == .string("waves"))
        #expect(delete.newValues.isEmpty)
        #expect(delete.changedProperties.isEmpty)
    }

    @Test("after a token only later transactions come; filters by entity and date")
    func tokensAndFilters() throws {
        let directory = TemporaryDirectory()
        let (container, tokens) = try Self.threeSaves(directory)
        defer { try? container.close() }
        let context = container.newContext()
        #expect(try context.history(after: tokens[1]).map(\.token) == [tokens[2], tokens[3]])
        #expect(try context.history(after: tokens[3]).isEmpty)
        let snapshots = try context.history(entities: ["Snapshot"])
        #expect(snapshots.map(\.token) == [tokens[1]])
        #expect(snapshots[0].changes.map(\.objectID.entityName) == ["Snapshot"])
        #expect(try context.history(from: Date.distantFuture).isEmpty)
        #expect(try context.history(from: Date.distantPast).count == 4)
        let unknown = #expect(throws: ObjectLogError.self) {
            try context.history(entities: ["Nothing"])
        }
        #expect(unknown?.code == .entityNotInModel)
    }

    @Test("a token survives encoding and reopening the store")
    func tokenAcrossReopen() throws {
        let directory = TemporaryDirectory()
        let (container, tokens) = try Self.threeSaves(directory)
        try container.close()
        let encoded = try JSONEncoder().encode(tokens[2])
        let decoded = try JSONDecoder().decode(HistoryToken.self, from: encoded)
        #expect(decoded == tokens[2])
        let reopened = try makeContainer(directory)
        defer { try? reopened.close() }
        let history = try reopened.newContext().history(after: decoded)
        #expect(history.map(\.token) == [tokens[3]])
        #expect(history[0].changes.first?.kind == .delete)
    }

    @Test("a batch update is a transaction of its own, old values included")
    func batchUpdate() throws {
        let directory = TemporaryDirectory()
        let (container, tokens) = try Self.threeSaves(directory)
        defer { try? container.close() }
        let context = container.newContext()
        _ = try context.execute(
            BatchUpdateRequest<Configuration>(
                predicate: #Predicate { $0.name == "spots" },
                updates: [.set(\.kill, to: 0.07)]
            )
        )
        let history = try context.history(after: tokens[3])
        #expect(history.count == 1)
        let change = try #require(history.first?.changes.first)
        #expect(change.kind == .update)
        #expect(change.changedProperties == ["kill"])
        #expect(change.oldValues == ["kill": .double(0.062)])
        #expect(change.newValues == ["kill": .double(0.07)])
    }

    @Test("after a compaction, tokens before it have expired; later ones still work")
    func compactionExpires() throws {
        let directory = TemporaryDirectory()
        let (container, tokens) = try Self.threeSaves(directory)
        defer { try? container.close() }
        _ = try container.compact()
        let context = container.newContext()
        let expired = #expect(throws: ObjectLogError.self) {
            try context.history(after: tokens[1])
        }
        #expect(expired?.code == .historyExpired)
        #expect(try context.currentHistoryToken == tokens[3])
        #expect(try context.history(after: tokens[3]).isEmpty)
        let configuration = try #require(
            try context.fetch(FetchRequest<Configuration>()).first
        )
        configuration.feed = 0.05
        try context.save()
        let later = try context.history(after: tokens[3])
        #expect(later.count == 1)
        #expect(later[0].changes.first?.oldValues == ["feed": .double(0.04)])
        // Without a token, the history starts where the store has it.
        #expect(try context.history().map(\.token) == later.map(\.token))
    }

    @Test("a child context reads the store's history; its own saves are not in it")
    func childContext() throws {
        let directory = TemporaryDirectory()
        let (container, tokens) = try Self.threeSaves(directory)
        defer { try? container.close() }
        let parent = container.newContext()
        let child = parent.newChildContext()
        #expect(try child.currentHistoryToken == tokens[3])
        let configuration = try #require(try child.fetch(FetchRequest<Configuration>()).first)
        configuration.feed = 0.09
        try child.save()
        #expect(try child.currentHistoryToken == tokens[3])
        #expect(try child.history(after: tokens[2]).map(\.token) == [tokens[3]])
        try parent.save()
        let saved = try child.history(after: tokens[3])
        #expect(saved.count == 1)
        #expect(saved.first?.changes.first?.newValues == ["feed": .double(0.09)])
    }

    @Test("each transaction names its author and context; the history filters by author")
    func authors() throws {
        let directory = TemporaryDirectory()
        let container = try makeContainer(directory)
        defer { try? container.close() }
        let editor = container.newContext()
        editor.name = "editor"
        editor.author = "ada"
        let importer = container.newContext()
        importer.author = "importer"
        let start = try editor.currentHistoryToken
        for (context, name) in [(editor, "spots"), (importer, "waves"), (editor, "mazes")] {
            let configuration = Configuration(context: context)
            configuration.name = name
            try context.save()
        }
        _ = try importer.execute(
            BatchUpdateRequest<Configuration>(updates: [.set(\.kill, to: 0.05)])
        )
        let all = try editor.history(after: start)
        #expect(all.map(\.author) == ["ada", "importer", "ada", "importer"])
        #expect(all.map(\.contextName) == ["editor", nil, "editor", nil])
        let ada = try editor.history(after: start, author: "ada")
        #expect(ada.map(\.token) == [all[0].token, all[2].token])
        // Kept across a compaction too.
        try container.setHistoryRetention(.all)
        _ = try container.compact()
        let kept = try editor.history(after: start)
        #expect(kept.prefix(4).map(\.author) == ["ada", "importer", "ada", "importer"])
        #expect(kept.prefix(4).map(\.contextName) == ["editor", nil, "editor", nil])
        #expect(try editor.history(after: start, author: "nobody").isEmpty)
    }

    @Test("a store without history says so")
    func memoryStoreHasNone() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let context = container.newContext()
        let error = #expect(throws: ObjectLogError.self) { try context.history() }
        #expect(error?.code == .unsupported)
    }
}
