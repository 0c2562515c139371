import Foundation
import ObjectLogStore
import StoreTestSupport
import Testing

@testable import ObjectLog

@Suite("Contexts across isolation domains, merging and conflicts")
struct ConcurrencyTests {
    @Test(
        "a stale context that overwrites many objects, one deleted meanwhile, ends alike on every store",
        arguments: TestStoreKind.available
    )
    func overwriteAfterDelete(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let writer = container.newContext()
        // More than a database store copies in rather than lists as parameters.
        for index in 0..<100 {
            let cell = Cell(context: writer)
            cell.row = index
        }
        try writer.save()
        let stale = container.newContext()
        stale.mergePolicy = .overwrite
        let cells = try stale.fetch(FetchRequest<Cell>(sortBy: [SortDescriptor(\.row)]))
        for cell in cells { _ = cell.value }
        let deleter = container.newContext()
        deleter.delete(try deleter.existingObject(with: cells[7].objectID))
        try deleter.save()
        for cell in cells { cell.value = Double(cell.row) + 0.5 }
        try stale.save()
        let reader = container.newContext()
        let saved = try reader.fetch(FetchRequest<Cell>(sortBy: [SortDescriptor(\.row)]))
        // Overwriting puts every object's values back, the deleted one's too, as a put does.
        #expect(saved.count == 100)
        #expect(saved.allSatisfy { $0.value == Double($0.row) + 0.5 })
    }

    @Test("a background save reaches the main context by automatic merging")
    @MainActor
    func backgroundSaveMergesIntoMain() async throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let main = container.mainContext
        let cell = Cell(context: main)
        cell.row = 1
        try main.save()
        #expect(cell.value == 0)
        let id = cell.objectID
        var changes: [ObjectChanges] = []
        main.onObjectsDidChange { changes.append($0) }
        let inserted = try await container.performBackgroundTask { context in
            let mine = try context.existingObject(with: id) as? Cell
            mine?.value = 7
            let fresh = Cell(context: context)
            fresh.row = 2
            try context.save()
            return fresh.objectID
        }
        for _ in 0..<2000 where changes.isEmpty { try await Task.sleep(for: .milliseconds(1)) }
        #expect(changes.first?.updated == [id])
        #expect(changes.first?.inserted == [inserted])
        #expect(cell.value == 7)
        #expect(try main.count(FetchRequest<Cell>()) == 2)
    }

    @Test(
        "fetches served by attribute columns run beside saves in other contexts",
        arguments: TestStoreKind.available
    )
    func columnFetchesDuringSaves(kind: TestStoreKind) async throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        @Sendable func request() -> FetchRequest<Cell> {
            FetchRequest<Cell>(
                predicate: #Predicate { $0.value < 500 },
                sortBy: [SortDescriptor(\.value)],
                fetchLimit: 10
            )
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<2 {
                group.addTask {
                    for round in 0..<20 {
                        try await container.performBackgroundTask { context in
                            for index in 0..<50 {
                                let cell = Cell(context: context)
                                cell.row = writer * 100_000 + round * 50 + index
                                cell.value = Double(
                                    (writer * 7919 + round * 131 + index * 37) % 1000
                                )
                            }
                            try context.save()
                        }
                    }
                }
            }
            for _ in 0..<2 {
                group.addTask {
                    for _ in 0..<40 {
                        let values = try await container.performBackgroundTask { context in
                            try context.fetch(request()).map(\.value)
                        }
                        #expect(values.count <= 10)
                        #expect(values.allSatisfy { $0 < 500 })
                        #expect(values == values.sorted())
                    }
                }
            }
            try await group.waitForAll()
        }
        let context = container.newContext()
        let everything = try context.fetch(FetchRequest<Cell>())
        #expect(everything.count == 2000)
        let expected = everything.filter { $0.value < 500 }
            .sorted { ($0.value, $0.objectID.key) < ($1.value, $1.objectID.key) }.prefix(10)
        #expect(
            try container.newContext().fetch(request()).map(\.objectID)
                == expected.map(\.objectID)
        )
    }

    @Test("saves are published as an async sequence of IDs", arguments: TestStoreKind.available)
    func savesStream(kind: TestStoreKind) async throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let stream = container.saves()
        let saved = try await container.performBackgroundTask { context in
            let tag = Tag(context: context)
            try context.save()
            return tag.objectID
        }
        var iterator = stream.makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.inserted == [saved])
    }

    @Test(
        "a stale update fails with a conflict by default and the store keeps the other save",
        arguments: TestStoreKind.available
    )
    func optimisticLocking(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let setup = container.newContext()
        let cell = Cell(context: setup)
        cell.value = 1
        try setup.save()
        let first = container.newContext()
        let second = container.newContext()
        let mine = try #require(try first.fetch(Cell.self).first)
        let theirs = try #require(try second.fetch(Cell.self).first)
        #expect(mine.value == 1 && theirs.value == 1)
        theirs.value = 2
        try second.save()
        mine.value = 3
        do {
            try first.save()
            Issue.record("a stale update must conflict")
        } catch {
            #expect(error.code == .conflict)
            #expect(error.objectID == mine.objectID)
        }
        let checker = container.newContext()
        #expect(try checker.fetch(Cell.self).first?.value == 2)
        #expect(first.hasChanges)

        first.mergePolicy = .overwrite
        try first.save()
        checker.reset()
        #expect(try checker.fetch(Cell.self).first?.value == 3)
    }

    @Test(
        "the rollback merge policy keeps the store's version of conflicting objects",
        arguments: TestStoreKind.available
    )
    func rollbackPolicy(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let setup = container.newContext()
        for row in 0..<2 {
            let cell = Cell(context: setup)
            cell.row = row
        }
        try setup.save()
        let first = container.newContext()
        first.mergePolicy = .rollback
        let second = container.newContext()
        let mine = try first.fetch(FetchRequest<Cell>(sortBy: [SortDescriptor(\.row)]))
        let theirs = try second.fetch(FetchRequest<Cell>(sortBy: [SortDescriptor(\.row)]))
        theirs[0].value = 10
        try second.save()
        mine[0].value = 20
        mine[1].value = 30
        try first.save()
        #expect(!first.hasChanges)
        #expect(mine[0].value == 10)
        let checker = container.newContext()
        let check = try checker.fetch(FetchRequest<Cell>(sortBy: [SortDescriptor(\.row)]))
        #expect(check.map(\.value) == [10, 30])
    }

    @Test(
        "mergeChanges(from:) removes objects deleted elsewhere",
        arguments: TestStoreKind.available
    )
    func mergeDeletes(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let first = container.newContext()
        let tag = Tag(context: first)
        try first.save()
        let second = container.newContext()
        var received: ObjectChanges?
        second.onDidSave { received = $0 }
        let theirs = try #require(try second.fetch(Tag.self).first)
        second.delete(theirs)
        try second.save()
        first.mergeChanges(from: try #require(received))
        #expect(tag.managedObjectContext == nil)
        #expect(first.registeredObjects.isEmpty)
        #expect(try first.count(FetchRequest<Tag>()) == 0)
    }
}

@Suite("Background contexts")
struct BackgroundContextTests {
    @Test(
        "perform keeps one context across calls and its saves reach other contexts",
        arguments: TestStoreKind.available
    )
    func perform(kind: TestStoreKind) async throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let background = container.newBackgroundContext()
        let id = try await background.perform { context in
            let tag = Tag(context: context)
            tag.label = "first"
            try context.save()
            return tag.objectID
        }
        let registered = await background.perform { context in
            context.registeredObjects.map(\.objectID)
        }
        #expect(registered == [id])
        let label = try await background.perform { context in
            let tag = try context.existingObject(with: id) as? Tag
            tag?.label = "second"
            try context.save()
            return tag?.label
        }
        #expect(label == "second")
        let reader = container.newContext()
        #expect((try reader.existingObject(with: id) as? Tag)?.label == "second")
    }
}
