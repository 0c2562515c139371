import Foundation
import ObjectLogStore
import TestSupport
import Testing

@testable import ObjectLog

@Suite("Bulk fault loads decoded on two threads")
struct ParallelFaultLoadTests {
    /// Writes 3,001 objects (every seventh a `Marker`), then updates every fourth `Sample`, so
    /// that the log's order is not the keys' order.
    static func makeStore(at path: String, options: StoreOptions) throws {
        let container = try PersistentContainer(
            path: path,
            for: [Sample.self, Marker.self],
            options: options
        )
        let context = container.newContext()
        ParallelSaveTests.insert(3_001, into: context, seed: 21)
        try context.save()
        var generator = SeededGenerator(seed: 4)
        for sample in try context.fetch(FetchRequest<Sample>()) where sample.number % 4 == 0 {
            AttributeColumnTests.randomize(sample, &generator)
        }
        try context.save()
        try container.close()
    }

    /// A new directory holding a store made by ``makeStore(at:options:)``, and the store's path.
    static func madeStore() throws -> (TemporaryDirectory, String) {
        let directory = TemporaryDirectory()
        let path = directory.file("store.olog")
        try makeStore(at: path, options: StoreOptions())
        return (directory, path)
    }

    /// Fetches every `Sample` with its values loaded, decoding on two threads from
    /// `threshold` live objects on.
    static func loadAll(
        _ container: PersistentContainer,
        threshold: Int,
        partSize: Int = 16_384
    ) throws -> (ManagedObjectContext, [Sample]) {
        let context = container.newContext()
        context.tracer = ContextTracer()
        context.tuning.parallelDecodingThreshold = threshold
        context.tuning.parallelPartSize = partSize
        var request = FetchRequest<Sample>()
        request.returnsObjectsAsFaults = false
        return (context, try context.fetch(request))
    }

    @Test(
        "every fault gets the values a load on one thread gives it, with the log read in large or small windows, in two parts or sixteen",
        arguments: [UInt64(23), 12],
        [16_384, 100]
    )
    func sameValuesAsOneThread(windowShift: UInt64, partSize: Int) throws {
        let directory = TemporaryDirectory()
        let path = directory.file("store.olog")
        var options = StoreOptions()
        options.bulkReadWindowShift = windowShift
        try Self.makeStore(at: path, options: options)
        let container = try PersistentContainer(
            path: path,
            for: [Sample.self, Marker.self],
            options: options
        )
        let (serialContext, serial) = try Self.loadAll(container, threshold: .max)
        let (parallelContext, parallel) = try Self.loadAll(
            container,
            threshold: 2,
            partSize: partSize
        )
        #expect(parallelContext.tuning.parts(for: serial.count) == (partSize == 100 ? 16 : 2))
        #expect(serialContext.statistics.parallelDecodings == 0)
        #expect(
            parallelContext.statistics.parallelDecodings
                == (ParallelSaveTests.hasTwoProcessors ? 1 : 0)
        )
        #expect(parallelContext.statistics.bulkFaultLoads == 1)
        #expect(serial.count > 2_500)
        #expect(parallel.count == serial.count)
        #expect(parallel.allSatisfy { !$0.isFault })
        #expect(parallelContext.registeredFaults == 0, "the loaded faults are counted")
        #expect(parallelContext.faultError == nil)
        for (left, right) in zip(serial, parallel) {
            #expect(left.objectID == right.objectID)
            #expect(
                left.number == right.number && left.wide == right.wide
                    && left.value.bitPattern == right.value.bitPattern
                    && left.label == right.label && left.when == right.when
                    && left.flag == right.flag,
                "values of \(left.objectID)"
            )
        }
        try container.close()
    }

    @Test(
        "a fetch through the attribute columns lists and locates its objects on two threads or more: the same objects as on one, registered ones included",
        arguments: [2, 16]
    )
    func columnPlanOnTwoThreads(parts: Int) throws {
        let (directory, path) = try Self.madeStore()
        defer { withExtendedLifetime(directory) {} }
        let container = try PersistentContainer(path: path, for: [Sample.self, Marker.self])
        let predicates = [
            #Predicate<Sample> { $0.number >= 10 },
            #Predicate<Sample> { !($0.number < 0) },
            #Predicate<Sample> { $0.number < 25 },
            // A negative constant is decided by the columns as well.
            #Predicate<Sample> { $0.number > -30 && $0.number < 40 },
        ]
        // The first filter builds the attribute columns from the store, without them.
        _ = try container.newContext().count(
            FetchRequest<Sample>(predicate: #Predicate { $0.number < 0 })
        )
        for (number, predicate) in predicates.enumerated() {
            let serial = container.newContext()
            serial.tracer = ContextTracer()
            serial.tuning.parallelPlanThreshold = .max
            let expected = try serial.fetchIdentifiers(FetchRequest(predicate: predicate))

            let context = container.newContext()
            context.tracer = ContextTracer()
            context.tuning.parallelPlanThreshold = 2
            context.tuning.parallelPartSize = parts == 2 ? 1 << 20 : 10
            // A few objects registered first: the columns leave them to the registry.
            let registered = try context.fetch(
                FetchRequest<Sample>(predicate: #Predicate { $0.number == 7 })
            )
            #expect(!registered.isEmpty)
            let before = context.statistics.parallelPlans
            let found = try context.fetchIdentifiers(FetchRequest(predicate: predicate))
            #expect(
                context.statistics.parallelPlans - before
                    == (ParallelSaveTests.hasTwoProcessors ? 1 : 0),
                "predicate \(number)"
            )
            #expect(serial.statistics.parallelPlans == 0)
            #expect(expected.count > 100)
            #expect(Set(found) == Set(expected))
            #expect(found.count == expected.count)
        }
        try container.close()
    }

    @Test(
        "a large fetch makes its faults on two threads: the same objects in the same order as on one, registered objects and pending inserts kept"
    )
    func faultsMadeOnTwoThreads() throws {
        let (directory, path) = try Self.madeStore()
        defer { withExtendedLifetime(directory) {} }
        let container = try PersistentContainer(path: path, for: [Sample.self, Marker.self])
        let serial = try container.newContext().fetch(FetchRequest<Sample>())

        let context = container.newContext()
        context.tracer = ContextTracer()
        context.tuning.parallelDecodingThreshold = 2
        // Objects registered before the fetch, one of them changed, and an unsaved insert.
        let registered = try context.fetch(
            FetchRequest<Sample>(predicate: #Predicate { $0.number > 40 })
        )
        #expect(registered.count > 10)
        registered[0].label = "changed"
        let pending = Sample(context: context)
        pending.number = 1_000
        let fetched = try context.fetch(FetchRequest<Sample>())

        #expect(
            context.statistics.parallelFaultBatches == (ParallelSaveTests.hasTwoProcessors ? 1 : 0)
        )
        #expect(fetched.count == serial.count + 1)
        #expect(Array(fetched.prefix(serial.count).map(\.objectID)) == serial.map(\.objectID))
        #expect(fetched.last === pending)
        let byKey = Dictionary(uniqueKeysWithValues: fetched.map { ($0.key, $0) })
        for object in registered { #expect(byKey[object.key] === object) }
        #expect(registered[0].label == "changed")
        #expect(context.registeredObjects.count == fetched.count)
        // The new faults are set up as on one thread, and load their values.
        let made = fetched.filter { object in !registered.contains { $0 === object } }.dropLast()
        #expect(made.allSatisfy { $0.isFault && $0.managedObjectContext === context })
        #expect(context.registeredFaults == made.count)
        for (object, expected) in zip(fetched, serial) {
            #expect(
                object.number == expected.number && object.label == expected.label
                    || object === registered[0]
            )
        }
        try container.close()
    }

    /// A reference that does not keep its object alive.
    final class WeakReference {
        weak var object: ManagedObject?
        init(_ object: ManagedObject) { self.object = object }
    }

    @Test(
        "faults made on two threads belong to their context, and a context going away releases them all on two threads, while one kept elsewhere still loads"
    )
    func workerLinksAndParallelRelease() throws {
        let (directory, path) = try Self.madeStore()
        defer { withExtendedLifetime(directory) {} }
        let container = try PersistentContainer(path: path, for: [Sample.self, Marker.self])
        let expected = try container.newContext().fetch(FetchRequest<Sample>())
            .map { ($0.key, $0.number, $0.label) }

        var references: [WeakReference] = []
        var kept: Sample?
        do {
            let context = container.newContext()
            context.tracer = ContextTracer()
            context.tuning.parallelDecodingThreshold = 2
            // Sixteen parts, each with a link of its own.
            context.tuning.parallelPartSize = 100
            context.registry.parallelReleaseThreshold = 2
            let objects = try context.fetch(FetchRequest<Sample>())
            #expect(
                context.statistics.parallelFaultBatches
                    == (ParallelSaveTests.hasTwoProcessors ? 1 : 0)
            )
            #expect(objects.count == expected.count)
            for object in [objects[0], objects[objects.count - 1]] {
                #expect(object.managedObjectContext === context)
                // Already the context's own: inserting it again changes nothing.
                try context.insert(object)
                #expect(!object.isInserted && !context.hasChanges)
            }
            // A change to a fault of each worker's half saves.
            objects[1].label = "first half"
            objects[objects.count - 2].label = "second half"
            try context.save()
            references = objects.map(WeakReference.init)
            kept = objects[objects.count * 3 / 4]
        }
        // Only the object kept here outlives the context.
        #expect(references.filter { $0.object != nil }.count == 1)
        let object = try #require(kept)
        #expect(object.managedObjectContext == nil)
        let (key, number, label) = expected[expected.count * 3 / 4]
        #expect(object.key == key && object.number == number && object.label == label)

        let saved = try container.newContext().fetch(FetchRequest<Sample>())
        #expect(saved[1].label == "first half" && saved[saved.count - 2].label == "second half")
        try container.close()
    }

    @Test(
        "damaged records in both halves: the first the scan meets is reported, and each worker loads its half up to its damaged record"
    )
    func damagedRecords() throws {
        let (directory, path) = try Self.madeStore()
        defer { withExtendedLifetime(directory) {} }
        // One damaged record a quarter into the Samples' records in the order a full scan
        // reads them (window by window), one three quarters in: one in each worker's half.
        let store = try LogStore.open(path: path, options: StoreOptions())
        var locations: [(key: ObjectKey, location: RecordLocation)] = []
        try store.forEachLiveObject(entity: nil) { key, _, _ in
            if let location = store.location(of: key) { locations.append((key, location)) }
        }
        try store.close()
        let sampleTag = try #require(
            try ManagedObjectModel([Sample.self, Marker.self]).entity(for: Sample.self)?.tag
        )
        let samples = locations.filter { $0.location.entity == sampleTag }
        let damaged = [samples[samples.count / 4], samples[samples.count * 3 / 4]]
        let file = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        for target in damaged {
            let at = target.location.offset + UInt64(target.location.length) - 1
            try file.seek(toOffset: at)
            let byte = try #require(try file.read(upToCount: 1))
            try file.seek(toOffset: at)
            try file.write(contentsOf: [byte[0] ^ 0x10])
        }
        try file.close()

        let container = try PersistentContainer(
            path: path,
            for: [Sample.self, Marker.self],
            options: .readOnlyExisting
        )
        let context = container.newContext()
        context.tracer = ContextTracer()
        context.tuning.parallelDecodingThreshold = 2
        let objects = try context.fetch(FetchRequest<Sample>())
        context.loadAllFaults(of: try #require(context.model.entity(for: Sample.self)))
        #expect(
            context.statistics.parallelDecodings == (ParallelSaveTests.hasTwoProcessors ? 1 : 0)
        )
        let error = try #require(context.faultError)
        #expect(
            error.message.contains("offset \(damaged[0].location.offset)"),
            "the first damaged record in the scan: \(error.message)"
        )
        let byKey = Dictionary(uniqueKeysWithValues: objects.map { ($0.key, $0) })
        for target in damaged { #expect(byKey[target.key]?.isFault == true) }
        // Each worker stops at its first damaged record: what comes before it in its half is
        // loaded, the rest stays faults.
        let count = samples.count
        let loadedBefore = samples.prefix(while: { $0.key != damaged[0].key })
        #expect(loadedBefore.count == count / 4)
        #expect(loadedBefore.allSatisfy { byKey[$0.key]?.isFault == false })
        #expect(
            samples[(count / 4)..<(count * 9 / 20)].allSatisfy { byKey[$0.key]?.isFault == true }
        )
        let secondHalf = samples[(count * 11 / 20)..<(count * 3 / 4)]
        #expect(
            secondHalf.allSatisfy {
                byKey[$0.key]?.isFault == (context.statistics.parallelDecodings == 0)
            }
        )
        try container.close()
    }
}
