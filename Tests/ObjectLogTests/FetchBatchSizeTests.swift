import Foundation
import TestSupport
import Testing

@testable import ObjectLog

@Suite("fetchBatchSize: faults that load a batch at a time as the results are walked")
struct FetchBatchSizeTests {
    /// 1,000 saved items named by their number, with a count that runs backwards.
    func makeItems() throws -> PersistentContainer {
        let container = try PersistentContainer.inMemory(for: [
            TruthItem.self, TruthOwner.self, TruthLabel.self,
        ])
        let context = container.newContext()
        for index in 0..<1000 {
            let item = TruthItem(context: context)
            item.name = "item \(index)"
            item.count = 1000 - index
        }
        try context.save()
        return container
    }

    @Test("reading one object loads its batch and no other; walking loads batch after batch")
    func batches() throws {
        let container = try makeItems()
        let context = container.newContext()
        context.tracer = ContextTracer()
        var request = FetchRequest<TruthItem>()
        request.fetchBatchSize = 100
        let items = try context.fetch(request)
        #expect(items.count == 1000)
        #expect(items.allSatisfy { $0.isFault })
        #expect(items[150].name == "item 150")
        #expect(items[100..<200].allSatisfy { !$0.isFault })
        #expect(items[..<100].allSatisfy { $0.isFault })
        #expect(items[200...].allSatisfy { $0.isFault })
        #expect(context.statistics.batchFaultLoads == 1)
        var names: [String] = []
        for item in items { names.append(item.name) }
        #expect(names == (0..<1000).map { "item \($0)" })
        #expect(context.statistics.batchFaultLoads == 10)
        #expect(context.statistics.bulkFaultLoads == 0, "never every fault at once")
    }

    @Test(
        "batches follow the results' order, with a predicate and a sort, unsaved objects included"
    )
    func sortedBatches() throws {
        let container = try makeItems()
        let context = container.newContext()
        let unsaved = TruthItem(context: context)
        unsaved.name = "unsaved"
        unsaved.count = 2000
        var request = FetchRequest<TruthItem>(
            predicate: #Predicate { $0.count > 500 },
            sortBy: [SortDescriptor(\.count, order: .reverse)]
        )
        request.fetchBatchSize = 50
        let items = try context.fetch(request)
        #expect(items.count == 501)
        #expect(items.first === unsaved)
        // The third object of the results, which loads the first 50.
        #expect(items[2].count == 999)
        #expect(items[..<50].allSatisfy { !$0.isFault })
        #expect(items[50...].allSatisfy { $0.isFault })
        #expect(items.map(\.count) == [2000] + (501...1000).reversed())
        // Changed and saved as any object.
        items[300].name = "changed"
        try context.save()
        #expect(
            try container.newContext().fetch(
                FetchRequest<TruthItem>(predicate: #Predicate { $0.name == "changed" })
            ).count == 1
        )
    }

    @Test("a batch turned back into faults frees its values; the next read loads it again")
    func refaulting() throws {
        let container = try makeItems()
        let context = container.newContext()
        var request = FetchRequest<TruthItem>()
        request.fetchBatchSize = 100
        let items = try context.fetch(request)
        for item in items[..<100] { _ = item.count }
        for item in items[..<100] { context.refresh(item, mergeChanges: false) }
        #expect(items[..<100].allSatisfy { $0.isFault })
        #expect(items[5].count == 995)
        context.reset()
        #expect(context.faultBatches.isEmpty)
    }
}

@Suite("fetch(_:batchSize:): results made a batch at a time, the last batch let go")
struct FetchResultsCollectionTests {
    func makeItems() throws -> PersistentContainer {
        try FetchBatchSizeTests().makeItems()
    }

    @Test("walking keeps about one batch of objects; values and order are the fetch's")
    func walk() throws {
        let container = try makeItems()
        let context = container.newContext()
        context.tracer = ContextTracer()
        let results = try context.fetch(FetchRequest<TruthItem>(), batchSize: 100)
        #expect(results.count == 1000)
        #expect(context.registeredObjects.isEmpty, "nothing is made before it is read")
        var names: [String] = []
        var mostRegistered = 0
        for item in results {
            names.append(item.name)
            mostRegistered = max(mostRegistered, context.registeredObjects.count)
        }
        #expect(names == (0..<1000).map { "item \($0)" })
        #expect(mostRegistered == 100)
        #expect(context.statistics.batchFaultLoads == 10)
        #expect(context.statistics.bulkFaultLoads == 0)
    }

    @Test("an object held elsewhere or changed stays the context's; its changes are saved")
    func heldAndChanged() throws {
        let container = try makeItems()
        let context = container.newContext()
        let results = try context.fetch(FetchRequest<TruthItem>(), batchSize: 100)
        let held = results[3]
        results[10].name = "changed"
        for item in results { _ = item.count }
        #expect(results[3] === held)
        #expect(try context.object(with: held.objectID) === held)
        #expect(context.hasChanges)
        try context.save()
        let check = container.newContext()
        #expect(
            try check.count(FetchRequest<TruthItem>(predicate: #Predicate { $0.name == "changed" }))
                == 1
        )
    }

    @Test("a predicate, a sort and unsaved objects, as fetch gives them")
    func sameAsFetch() throws {
        let container = try makeItems()
        let context = container.newContext()
        let unsaved = TruthItem(context: context)
        unsaved.count = 700
        unsaved.name = "unsaved"
        let request = FetchRequest<TruthItem>(
            predicate: #Predicate { $0.count > 600 },
            sortBy: [SortDescriptor(\.count), SortDescriptor(\.name)]
        )
        let batched = try context.fetch(request, batchSize: 7)
        let fetched = try container.newContext().fetch(request).map(\.name)
        #expect(
            batched.map(\.name)
                == (fetched + ["unsaved"]).sorted { lhs, rhs in
                    let left = lhs == "unsaved" ? 700 : 1000 - Int(lhs.dropFirst(5))!
                    let right = rhs == "unsaved" ? 700 : 1000 - Int(rhs.dropFirst(5))!
                    return (left, lhs) < (right, rhs)
                }
        )
        #expect(batched.contains { $0 === unsaved })
    }
}
