import Foundation
import ObjectLog
import ObjectLogStore
import TestSupport
import Testing

@testable import ObjectLog

/// The attribute columns through a commit: the coordinator updates them beside the store's
/// commit (at the same time for a large save), and drops them when the commit fails.
@Suite("Attribute columns around a commit")
struct ColumnCommitTests {
    final class Reading: ManagedObject {
        @Attribute var value = 0
    }

    static let count = PersistentStoreCoordinator.concurrentColumnUpdateChanges + 500

    /// A container over `fileSystem` with `count` readings valued 0 to `count - 1`.
    static func container(on fileSystem: any FileSystem) throws -> PersistentContainer {
        var options = StoreOptions()
        options.fileSystem = fileSystem
        let container = try PersistentContainer(
            path: "/c.olog",
            model: try ManagedObjectModel([Reading.self]),
            options: options
        )
        let context = container.newContext()
        for index in 0..<count { Reading(context: context).value = index }
        try context.save()
        return container
    }

    /// How many readings are below `bound`, counted through the columns.
    static func below(_ bound: Int, in container: PersistentContainer) throws -> Int {
        let request = FetchRequest<Reading>(predicate: #Predicate { $0.value < bound })
        let context = container.newContext()
        context.tracer = ContextTracer()
        let counted = try context.count(request)
        #expect(context.statistics.columnScans == 1, "the columns decided the count")
        return counted
    }

    @Test(
        "a save updates the columns as the store saves it, small or large",
        arguments: [100, count]
    )
    func columnsFollowASave(changes: Int) throws {
        let container = try Self.container(on: MemoryFileSystem())
        #expect(try Self.below(1_000, in: container) == 1_000)
        // Every reading of the first `changes` moves past the bound; as many new ones below it.
        let context = container.newContext()
        var request = FetchRequest<Reading>(predicate: #Predicate { $0.value < changes })
        request.sortDescriptors = [SortDescriptor(\.value)]
        for reading in try context.fetch(request) { reading.value += Self.count }
        for index in 0..<changes { Reading(context: context).value = -1 - index }
        try context.save()
        let expected = 1_000 - min(changes, 1_000) + changes
        #expect(try Self.below(1_000, in: container) == expected)
        // The same count from the records alone.
        let all = try container.newContext().fetch(FetchRequest<Reading>())
        #expect(all.filter { $0.value < 1_000 }.count == expected)
    }

    @Test("a large save whose flush fails leaves the columns as the store is")
    func failedFlushDropsColumns() throws {
        let fileSystem = FaultyFileSystem()
        let container = try Self.container(on: fileSystem)
        #expect(try Self.below(1_000, in: container) == 1_000)
        let context = container.newContext()
        for reading in try context.fetch(FetchRequest<Reading>()) { reading.value = 0 }
        fileSystem.fail(.sync, after: 1)
        #expect(throws: ObjectLogError.self) { try context.save() }
        // The store kept the values before the save; so must the columns.
        #expect(try Self.below(1_000, in: container) == 1_000)
    }
}
