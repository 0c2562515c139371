import Foundation
import ObjectLogStore
import TestSupport
import Testing

@testable import ObjectLog

/// An entity with a uniqueness constraint, which keeps a save on one thread.
final class ParallelUniqueItem: ManagedObject {
    @Attribute(.unique) var tag = ""
    @Attribute var amount = 0
}

@Suite("Large saves encoded on two threads")
struct ParallelSaveTests {
    /// Whether this machine lets a save use two threads at all.
    static let hasTwoProcessors = ProcessInfo.processInfo.activeProcessorCount >= 2

    /// Inserts `count` objects (every seventh a `Marker`) with values from `seed`.
    static func insert(_ count: Int, into context: ManagedObjectContext, seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        for index in 0..<count {
            if index % 7 == 3 {
                Marker(context: context).weight = Double(index) / 8
            } else {
                AttributeColumnTests.randomize(Sample(context: context), &generator)
            }
        }
    }

    /// Every live record of `store`: key, offset, length and payload.
    static func records(of store: LogStore) throws -> [(UInt64, UInt64, UInt32, [UInt8])] {
        try store.liveKeys(entity: nil).map { key in
            let location = try #require(store.location(of: key) as RecordLocation?)
            let payload = try #require(try store.readObject(key)).payload
            return (key, location.offset, location.length, payload)
        }
    }

    @Test(
        "inserts and updates saved on two threads are written byte for byte as on one, at the same offsets"
    )
    func sameRecordsAsOneThread() throws {
        let directory = TemporaryDirectory()
        var stores: [LogStore] = []
        var containers: [PersistentContainer] = []
        for (name, threshold) in [("serial", Int.max), ("parallel", 2)] {
            let container = try PersistentContainer(
                path: directory.file("\(name).olog"),
                for: [Sample.self, Marker.self]
            )
            let context = container.newContext()
            context.tracer = ContextTracer()
            context.tuning.parallelEncodingThreshold = threshold
            Self.insert(3_001, into: context, seed: 5)
            try context.save()
            // A save of updates and inserts together, the updates in key order after them.
            let samples = try context.fetch(FetchRequest<Sample>())
            var generator = SeededGenerator(seed: 9)
            for sample in samples where sample.number % 3 == 0 {
                AttributeColumnTests.randomize(sample, &generator)
            }
            Self.insert(500, into: context, seed: 11)
            try context.save()
            if threshold == 2, Self.hasTwoProcessors {
                #expect(context.statistics.parallelEncodings == 2)
            } else {
                #expect(context.statistics.parallelEncodings == 0)
            }
            containers.append(container)
            stores.append(container.coordinator.logStore!)
        }
        let serial = try Self.records(of: stores[0])
        let parallel = try Self.records(of: stores[1])
        // 3,500 objects and the record of the store's model version.
        #expect(serial.count == 3_501 + 1)
        #expect(serial.count == parallel.count)
        for (left, right) in zip(serial, parallel) {
            #expect(left.0 == right.0 && left.1 == right.1 && left.2 == right.2)
            #expect(left.3 == right.3, "payload of key \(left.0)")
        }
        for container in containers { try container.close() }
    }

    @Test("a save encoded on two threads still refuses updates of objects another save changed")
    func conflictsAreStillDetected() throws {
        let container = try PersistentContainer.inMemory(for: [Sample.self, Marker.self])
        let setup = container.newContext()
        Self.insert(200, into: setup, seed: 3)
        try setup.save()
        let first = container.newContext()
        first.tracer = ContextTracer()
        first.tuning.parallelEncodingThreshold = 2
        let second = container.newContext()
        let samples = try first.fetch(FetchRequest<Sample>())
        for sample in samples { sample.number += 1 }
        let other = try #require(try second.fetch(FetchRequest<Sample>()).last)
        other.number = -1000
        try second.save()
        #expect(throws: ObjectLogError.self) { try first.save() }
        do {
            try first.save()
        } catch {
            #expect(error.code == .conflict)
        }
        #expect(first.statistics.parallelEncodings == (Self.hasTwoProcessors ? 2 : 0))
        // The refused saves wrote nothing: the other context's value stands.
        let check = container.newContext()
        let stored = try #require(
            try check.fetch(FetchRequest<Sample>()).first { $0.objectID == other.objectID }
        )
        #expect(stored.number == -1000)
    }

    @Test("a save with an entity that has uniqueness constraints stays on one thread and is whole")
    func uniquenessKeepsOneThread() throws {
        let container = try PersistentContainer.inMemory(
            for: [Sample.self, Marker.self, ParallelUniqueItem.self]
        )
        let context = container.newContext()
        context.tracer = ContextTracer()
        context.tuning.parallelEncodingThreshold = 2
        Self.insert(300, into: context, seed: 13)
        for index in 0..<50 {
            let item = ParallelUniqueItem(context: context)
            item.tag = "tag \(index)"
            item.amount = index
        }
        try context.save()
        #expect(context.statistics.parallelEncodings == 0)
        let check = container.newContext()
        #expect(try check.count(FetchRequest<ParallelUniqueItem>()) == 50)
        let scalars = try check.count(FetchRequest<Sample>()) + check.count(FetchRequest<Marker>())
        #expect(scalars == 300)
    }
}
