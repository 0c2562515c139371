import Foundation
import TestSupport
import Testing

@testable import ObjectLog

@Suite("Contexts pinned to a past transaction")
struct PinnedContextTests {
    typealias Saves = HistoryTests

    static func configurations(_ context: ManagedObjectContext) throws -> [String: Double] {
        var feeds: [String: Double] = [:]
        for configuration in try context.fetch(FetchRequest<Configuration>()) {
            feeds[configuration.name] = configuration.feed
        }
        return feeds
    }

    @Test("each token's state: objects, values and relationships as they were")
    func pastStates() throws {
        let directory = TemporaryDirectory()
        let (container, tokens) = try Saves.threeSaves(directory)
        defer { try? container.close() }
        #expect(try Self.configurations(container.newContext(asOf: tokens[0])).isEmpty)
        let afterInsert = try container.newContext(asOf: tokens[1])
        #expect(try Self.configurations(afterInsert) == ["spots": 0.035, "waves": 0.055])
        let snapshot = try #require(try afterInsert.fetch(FetchRequest<Snapshot>()).first)
        #expect(snapshot.configuration?.name == "spots")
        #expect(try afterInsert.count(FetchRequest<Configuration>()) == 2)
        let afterUpdate = try container.newContext(asOf: tokens[2])
        #expect(try Self.configurations(afterUpdate) == ["spots": 0.04, "waves": 0.055])
        let spots = try #require(
            try afterUpdate.fetch(
                FetchRequest<Configuration>(predicate: #Predicate { $0.name == "spots" })
            ).first
        )
        #expect(spots.notes == "denser")
        #expect(try Self.configurations(container.newContext(asOf: tokens[3])) == ["spots": 0.04])
        #expect(try afterUpdate.currentHistoryToken == tokens[2])
    }

    @Test("a read-only container reads a past state of a store its writer goes on saving")
    func readOnlyContainer() throws {
        let directory = TemporaryDirectory()
        let (writer, tokens) = try Saves.threeSaves(directory)
        defer { try? writer.close() }
        var options = StoreOptions()
        options.readOnly = true
        let reader = try PersistentContainer(
            path: directory.file("test.objectlog"),
            for: testEntities,
            options: options
        )
        defer { try? reader.close() }
        let then = try reader.newContext(asOf: tokens[1])
        let context = writer.newContext()
        let waves = Configuration(context: context)
        waves.name = "ripples"
        try context.save()
        #expect(try Self.configurations(then) == ["spots": 0.035, "waves": 0.055])
        #expect(try Self.configurations(reader.newContext(asOf: tokens[2]))["spots"] == 0.04)
    }

    @Test("a pinned context keeps its state while others save, and cannot save itself")
    func stableWhileOthersSave() throws {
        let directory = TemporaryDirectory()
        let (container, _) = try Saves.threeSaves(directory)
        defer { try? container.close() }
        let writer = container.newContext()
        let pinned = try container.newContext(asOf: writer.currentHistoryToken)
        let before = try Self.configurations(pinned)
        let spots = try #require(try writer.fetch(FetchRequest<Configuration>()).first)
        spots.feed = 0.07
        let added = Configuration(context: writer)
        added.name = "stripes"
        try writer.save()
        // A second container on the file, as another process would write.
        let other = try makeContainer(directory)
        let otherContext = other.newContext()
        let more = Configuration(context: otherContext)
        more.name = "mazes"
        try otherContext.save()
        try other.close()
        #expect(try Self.configurations(pinned) == before)
        #expect(try Self.configurations(container.newContext()).count == 3)

        let object = try #require(try pinned.fetch(FetchRequest<Configuration>()).first)
        object.feed = 0.01
        let refused = #expect(throws: ObjectLogError.self) { try pinned.save() }
        #expect(refused?.code == .unsupported)
    }

    @Test("past states need their history: kept across a compaction, or expired")
    func acrossCompaction() throws {
        let directory = TemporaryDirectory()
        let (container, tokens) = try Saves.threeSaves(directory)
        defer { try? container.close() }
        try container.setHistoryRetention(.all)
        _ = try container.compact()
        let afterInsert = try container.newContext(asOf: tokens[1])
        #expect(try Self.configurations(afterInsert) == ["spots": 0.035, "waves": 0.055])
        #expect(
            try afterInsert.fetch(FetchRequest<Snapshot>()).first?.configuration?.name == "spots"
        )

        try container.setHistoryRetention(.untilCompaction)
        _ = try container.compact()
        let expired = #expect(throws: ObjectLogError.self) {
            try container.newContext(asOf: tokens[1])
        }
        #expect(expired?.code == .historyExpired)
        let future = #expect(throws: ObjectLogError.self) {
            try container.newContext(asOf: HistoryToken(transaction: 1_000))
        }
        #expect(future?.code == .invalidArgument)
        let memory = try PersistentContainer.inMemory(for: testEntities)
        let unsupported = #expect(throws: ObjectLogError.self) {
            try memory.newContext(asOf: HistoryToken(transaction: 0))
        }
        #expect(unsupported?.code == .unsupported)
    }
}
