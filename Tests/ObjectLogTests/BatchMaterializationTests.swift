import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ObjectLog

/// An entity that counts the instances made of it, to see how many objects a request makes.
final class Tally: ManagedObject {
    static let made = Atomic<Int>(0)

    @Attribute var value = 0.0
    @Attribute var count = 0

    required init() {
        super.init()
        Self.made.add(1, ordering: .relaxed)
    }
}

@Suite("Batch requests make no managed object per stored object", .serialized)
struct BatchMaterializationTests {
    static let objectCount = 3_000

    /// A store of `objectCount` tallies (value = index).
    func tallies(_ directory: TemporaryDirectory) throws -> PersistentContainer {
        let container = try PersistentContainer(
            path: directory.file("tally.olog"),
            for: [Tally.self]
        )
        let context = container.newContext()
        for index in 0..<Self.objectCount {
            Tally(context: context).value = Double(index)
        }
        try context.save()
        return container
    }

    /// The instances of `Tally` made while `body` runs.
    func made(_ body: () throws -> Void) rethrows -> Int {
        let before = Tally.made.load(ordering: .relaxed)
        try body()
        return Tally.made.load(ordering: .relaxed) - before
    }

    @Test(
        "a batch update and a batch delete of a third of the objects make a handful of objects",
        arguments: [false, true]
    )
    func fewObjects(parallel: Bool) throws {
        let directory = TemporaryDirectory()
        let container = try tallies(directory)
        let context = container.newContext()
        if parallel {
            context.tuning.parallelBatchThreshold = 2
            context.tuning.parallelPlanThreshold = 2
        }
        let third = #Predicate<Tally> { $0.value < 1_000 }
        // The first filter builds the attribute columns (a scratch object or two), as an
        // application's first fetch does.
        #expect(try context.count(FetchRequest(predicate: third)) == 1_000)
        let updating = try made {
            let updated = try context.execute(
                BatchUpdateRequest(predicate: third, updates: [.set(\.count, to: 7)])
            )
            #expect(updated.updated.count == 1_000)
        }
        // The scratch objects that encode the new values: a few, not one per object.
        #expect(updating <= 4, "a batch update of 1,000 objects made \(updating) objects")
        let deleting = try made {
            let deleted = try context.execute(
                BatchDeleteRequest(predicate: #Predicate<Tally> { $0.value >= 2_000 })
            )
            #expect(deleted.deleted.count == Self.objectCount - 2_000)
        }
        #expect(deleting <= 4, "a batch delete of 1,000 objects made \(deleting) objects")
        // The same work through a context makes one object per stored object, which is what
        // the counts above are held against.
        let fetching = try made {
            for tally in try context.fetch(FetchRequest(predicate: third)) { tally.count = 8 }
            try context.save()
        }
        #expect(fetching >= 1_000)
        let check = container.newContext()
        #expect(try check.count(FetchRequest<Tally>()) == 2_000)
        let eights = FetchRequest<Tally>(predicate: #Predicate { $0.count == 8 })
        #expect(try check.count(eights) == 1_000)
        try container.close()
    }
}
