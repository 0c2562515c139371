import Foundation
import ObjectLogStore
import TestSupport
import Testing

@testable import ObjectLog

/// Runs `body` on the main actor, cancelled after `seconds`: a live query's `next()` then
/// returns nil, so a change that never arrives fails the test instead of hanging it.
@MainActor
func withTimeout(
    _ seconds: Double = 20,
    _ body: @MainActor @escaping () async throws -> Void
) async throws {
    let task = Task { @MainActor in try await body() }
    let watchdog = Task {
        try? await Task.sleep(for: .seconds(seconds))
        task.cancel()
    }
    defer { watchdog.cancel() }
    try await task.value
}

/// The names of `results`' objects.
@MainActor
private func names(_ results: LiveQueryResults<Configuration>) -> [String] {
    results.objects.map(\.name)
}

@MainActor
@Suite("Live queries: fetch results that follow saves")
struct LiveQueryTests {
    static var feedAbove3: FetchRequest<Configuration> {
        FetchRequest(predicate: #Predicate { $0.feed > 0.03 }, sortBy: [SortDescriptor(\.name)])
    }

    @Test("first the fetch's results, then after each insert, update, move and delete its diff")
    func diffs() async throws {
        let directory = TemporaryDirectory()
        let container = try makeContainer(directory)
        defer { try? container.close() }
        let context = container.mainContext
        func configuration(_ name: String, _ feed: Double) -> Configuration {
            let configuration = Configuration(context: context)
            configuration.name = name
            configuration.feed = feed
            return configuration
        }
        let a = configuration("a", 0.04)
        let c = configuration("c", 0.05)
        _ = configuration("low", 0.01)
        try context.save()
        try await withTimeout {
            var results = context.observe(Self.feedAbove3).makeAsyncIterator()
            let initial = try #require(try await results.next())
            #expect(initial.isInitial)
            #expect(names(initial) == ["a", "c"])
            #expect(initial.inserted == [0, 1])

            let b = configuration("b", 0.06)
            try context.save()
            let inserted = try #require(try await results.next())
            #expect(names(inserted) == ["a", "b", "c"])
            #expect(inserted.inserted == [1])
            #expect(inserted.deleted.isEmpty && inserted.moved.isEmpty && inserted.updated.isEmpty)

            c.feed = 0.07
            try context.save()
            let updated = try #require(try await results.next())
            #expect(names(updated) == ["a", "b", "c"])
            #expect(updated.updated == [2])
            #expect(updated.inserted.isEmpty && updated.deleted.isEmpty && updated.moved.isEmpty)

            a.name = "d"
            try context.save()
            let moved = try #require(try await results.next())
            #expect(names(moved) == ["b", "c", "d"])
            #expect(moved.moved == [.init(from: 0, to: 2)])
            #expect(moved.updated == [2])

            context.delete(b)
            try context.save()
            let deleted = try #require(try await results.next())
            #expect(names(deleted) == ["c", "d"])
            #expect(deleted.deleted == [0])

            c.feed = 0.01
            try context.save()
            let left = try #require(try await results.next())
            #expect(names(left) == ["d"])
            #expect(left.deleted == [0] && left.updated.isEmpty)
        }
    }

    @Test("a save of other entities or of objects that neither match nor matched yields nothing")
    func unrelatedSaves() async throws {
        let directory = TemporaryDirectory()
        let container = try makeContainer(directory)
        defer { try? container.close() }
        let context = container.mainContext
        let low = Configuration(context: context)
        low.name = "low"
        low.feed = 0.01
        try context.save()
        try await withTimeout {
            var results = context.observe(Self.feedAbove3).makeAsyncIterator()
            #expect(try await results.next()?.objects.isEmpty == true)
            let arrivals = Arrivals()
            let waiting = Task { @MainActor in
                let next = try await results.next()
                arrivals.names = next.map(names)
                arrivals.inserted = next?.inserted
            }
            // Unrelated: another entity, and an object that stays out of the results.
            let snapshot = Snapshot(context: context)
            snapshot.step = 1
            try context.save()
            low.feed = 0.02
            low.notes = "still low"
            try context.save()
            try await Task.sleep(for: .milliseconds(200))
            #expect(arrivals.names == nil, "an unrelated save yielded results")
            // A relevant save: the waiting iterator gets exactly its change.
            low.feed = 0.05
            try context.save()
            try await waiting.value
            #expect(arrivals.names == ["low"])
            #expect(arrivals.inserted == [0])
        }
    }

    @Test("saves of another context reach the main context's live query through the merge")
    func otherContexts() async throws {
        let directory = TemporaryDirectory()
        let container = try makeContainer(directory)
        defer { try? container.close() }
        try await withTimeout {
            var results = container.mainContext.observe(Self.feedAbove3).makeAsyncIterator()
            _ = try await results.next()
            let id = try await container.performBackgroundTask { context in
                let configuration = Configuration(context: context)
                configuration.name = "background"
                configuration.feed = 0.09
                try context.save()
                return configuration.objectID
            }
            let next = try #require(try await results.next())
            #expect(next.objects.map(\.objectID) == [id])
            #expect(next.inserted == [0])
        }
    }

    @Test("a read-only container on the file of a writer's sees its saves in a live query")
    func twoContainersOnOneFile() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("shared.objectlog")
        let writer = try PersistentContainer(path: path, for: testEntities)
        defer { try? writer.close() }
        let reader = try PersistentContainer(
            path: path,
            for: testEntities,
            options: .followingExisting
        )
        defer { try? reader.close() }
        let writing = writer.newContext()
        try await withTimeout {
            var results = reader.mainContext.observe(Self.feedAbove3).makeAsyncIterator()
            #expect(try await results.next()?.objects.isEmpty == true)
            let spots = Configuration(context: writing)
            spots.name = "spots"
            spots.feed = 0.04
            try writing.save()
            let inserted = try #require(try await results.next())
            #expect(names(inserted) == ["spots"])
            spots.feed = 0.08
            try writing.save()
            let updated = try #require(try await results.next())
            #expect(updated.updated == [0])
            #expect(updated.objects.first?.feed == 0.08, "the merge refreshed the object")
        }
    }

    @Test("the difference's moves are the fewest that explain the new order")
    func fewestMoves() {
        let difference = LiveQueryDifference(
            from: [1, 2, 3, 4, 5],
            to: [2, 3, 6, 1, 5],
            updated: [5]
        )
        #expect(difference.deleted == [3])
        #expect(difference.inserted == [2])
        #expect(difference.moved.map { [$0.from, $0.to] } == [[0, 3]])
        #expect(difference.updated == [4])
    }
}

/// What a waiting iterator received, read after the task that waited.
@MainActor
private final class Arrivals {
    var names: [String]?
    var inserted: [Int]?
}

@MainActor
@Suite("Following another process's store file")
struct FollowingTests {
    @Test("a read-only container gets a writer's transactions as they commit, and merges them")
    func transactionsAndMerges() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("followed.objectlog")
        let writer = try PersistentContainer(path: path, for: testEntities)
        defer { try? writer.close() }
        let writing = writer.newContext()
        let spots = Configuration(context: writing)
        spots.name = "spots"
        try writing.save()
        let reader = try PersistentContainer(
            path: path,
            for: testEntities,
            options: .followingExisting
        )
        defer { try? reader.close() }
        let reading = reader.mainContext
        let seen = try #require(try reading.existingObject(with: spots.objectID) as? Configuration)
        #expect(seen.feed == 0.055)
        try await withTimeout {
            var transactions = reader.transactions().makeAsyncIterator()
            spots.feed = 0.02
            try writing.save()
            let waves = Configuration(context: writing)
            waves.name = "waves"
            try writing.save()
            let first = try #require(try await transactions.next())
            #expect(first.changes.map(\.kind) == [.update])
            #expect(first.changes.first?.newValues["feed"] == .double(0.02))
            let second = try #require(try await transactions.next())
            #expect(second.changes.map(\.objectID) == [waves.objectID])
            #expect(second.token.transaction == first.token.transaction + 1)
            // The main context merged the update (on the main actor, after the notice).
            while seen.feed != 0.02 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(try reading.count(FetchRequest<Configuration>()) == 2)
        }
    }

    @Test("after the writer compacts, the reader moves to the new file and goes on following")
    func followsAcrossCompaction() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("compacted.objectlog")
        let writer = try PersistentContainer(path: path, for: testEntities)
        defer { try? writer.close() }
        let writing = writer.newContext()
        let spots = Configuration(context: writing)
        spots.name = "spots"
        try writing.save()
        let reader = try PersistentContainer(
            path: path,
            for: testEntities,
            options: .followingExisting
        )
        defer { try? reader.close() }
        let saves = reader.saves()
        try await withTimeout {
            var changes = saves.makeAsyncIterator()
            try writer.compact()
            spots.feed = 0.03
            try writing.save()
            var updated: [ObjectID] = []
            while !updated.contains(spots.objectID) {
                updated += try #require(await changes.next()).updated
            }
            let reading = reader.newContext()
            let seen = try reading.existingObject(with: spots.objectID) as? Configuration
            #expect(seen?.feed == 0.03)
        }
    }
}
