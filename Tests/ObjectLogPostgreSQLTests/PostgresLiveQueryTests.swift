import Foundation
import ObjectLogStore
import StoreTestSupport
import Testing

@testable import ObjectLog
@testable import ObjectLogPostgreSQL

@Suite(
    "Live queries on the PostgreSQL store",
    .enabled(if: TestServer.runs, TestServer.skipReason)
)
struct PostgresLiveQueryTests {
    @Test("another process's saves reach a live query of the main context, through NOTIFY")
    @MainActor
    func otherProcess() async throws {
        let url = try TestServer.freshDatabase()
        // Two containers of one database, each with its own connections: as two processes.
        let writer = try PersistentContainer(url: url, for: labEntities)
        let reader = try PersistentContainer(url: url, for: labEntities)
        defer {
            try? writer.close()
            try? reader.close()
        }
        let request = FetchRequest<Lab>(
            predicate: #Predicate { $0.feed > 0.03 },
            sortBy: [SortDescriptor(\.name)]
        )
        let task = Task { @MainActor in
            var results = reader.mainContext.observe(request).makeAsyncIterator()
            #expect(try await results.next()?.objects.isEmpty == true)
            let writing = writer.newContext()
            let low = Lab(context: writing)
            low.name = "low"
            low.feed = 0.01
            let high = Lab(context: writing)
            high.name = "high"
            high.feed = 0.05
            try writing.save()
            let inserted = try #require(try await results.next())
            #expect(inserted.objects.map(\.name) == ["high"])
            #expect(inserted.inserted == [0])
            low.feed = 0.04
            try writing.save()
            let joined = try #require(try await results.next())
            #expect(joined.objects.map(\.name) == ["high", "low"])
            #expect(joined.inserted == [1])
        }
        let watchdog = Task {
            try? await Task.sleep(for: .seconds(20))
            task.cancel()
        }
        defer { watchdog.cancel() }
        try await task.value
    }

    @Test("incomplete changes make a live query fetch anew")
    @MainActor
    func incompleteChanges() async throws {
        let url = try TestServer.freshDatabase()
        let writer = try PersistentContainer(url: url, for: labEntities)
        let reader = try PersistentContainer(url: url, for: labEntities)
        defer {
            try? writer.close()
            try? reader.close()
        }
        let request = FetchRequest<Lab>(sortBy: [SortDescriptor(\.name)])
        // A context of its own, which merges nothing by itself: only the incomplete changes
        // below can tell its query of the other container's save.
        let context = reader.newContext()
        let task = Task { @MainActor in
            var results = context.observe(request).makeAsyncIterator()
            #expect(try await results.next()?.objects.isEmpty == true)
            let writing = writer.newContext()
            Lab(context: writing).name = "saved elsewhere"
            try writing.save()
            context.mergeChanges(from: ObjectChanges(isIncomplete: true))
            let fetched = try #require(try await results.next())
            #expect(fetched.objects.map(\.name) == ["saved elsewhere"])
        }
        let watchdog = Task {
            try? await Task.sleep(for: .seconds(20))
            task.cancel()
        }
        defer { watchdog.cancel() }
        try await task.value
    }
}
