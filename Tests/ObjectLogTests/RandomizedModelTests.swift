import Foundation
import ObjectLogStore
import TestSupport
import Testing

@testable import ObjectLog

/// Random inserts, updates, deletes, saves, rollbacks and reopens, checked after every step
/// against a plain in-memory model of what the store and context should hold.
///
/// Set `OBJECTLOG_RANDOM_STEPS` for longer runs; the seed is in every failure message.
@Suite("Randomized model-based test")
struct RandomizedModelTests {
    struct ConfigurationState: Equatable {
        var name: String
        var feed: Double
    }

    struct SnapshotState: Equatable {
        var step: Int
        var configuration: ObjectKey?
        /// The state's fill byte and size (large sizes go to blob files).
        var fill: UInt8
        var size: Int
    }

    /// The plain model: what the context shows (`work`) and what the store holds (`saved`).
    struct Model {
        var configurations: [ObjectKey: ConfigurationState] = [:]
        var snapshots: [ObjectKey: SnapshotState] = [:]
    }

    static let seeds: [UInt64] = [1, 2, 3, 0xDEAD_BEEF, UInt64(Date().timeIntervalSince1970)]

    @Test("the engine agrees with a plain model", arguments: seeds)
    func randomOperations(seed: UInt64) throws {
        let steps =
            ProcessInfo.processInfo.environment["OBJECTLOG_RANDOM_STEPS"].flatMap(Int.init) ?? 250
        var generator = SeededGenerator(seed: seed)
        let directory = TemporaryDirectory()
        let path = directory.file("random.objectlog")
        var container = try PersistentContainer(path: path, for: testEntities)
        var context = container.newContext()
        var saved = Model()
        var work = Model()
        var nameCounter = 0

        func configuration(_ key: ObjectKey) -> Configuration {
            try! context.object(
                with: ObjectID(entityName: "Configuration", key: key),
                as: Configuration.self
            )
        }
        func snapshot(_ key: ObjectKey) -> Snapshot {
            try! context.object(with: ObjectID(entityName: "Snapshot", key: key), as: Snapshot.self)
        }

        for step in 0..<steps {
            let location = "seed \(seed), step \(step)"
            switch Int.random(in: 0..<100, using: &generator) {
            case 0..<20:
                let object = Configuration(context: context)
                nameCounter += 1
                object.name = "c\(nameCounter)"
                object.feed = Double(Int.random(in: 0..<100, using: &generator))
                work.configurations[object.objectID.key] = ConfigurationState(
                    name: object.name,
                    feed: object.feed
                )
            case 20..<40:
                let object = Snapshot(context: context)
                object.step = Int.random(in: 0..<1000, using: &generator)
                let fill = UInt8.random(in: 0...255, using: &generator)
                let size = Bool.random(using: &generator) ? ExternalStorage.minimumByteCount : 3
                object.state = Data(repeating: fill, count: size)
                if let owner = work.configurations.keys.sorted().randomElement(using: &generator) {
                    object.configuration = configuration(owner)
                }
                work.snapshots[object.objectID.key] = SnapshotState(
                    step: object.step,
                    configuration: object.configuration?.objectID.key,
                    fill: fill,
                    size: size
                )
            case 40..<50:
                guard let key = work.configurations.keys.sorted().randomElement(using: &generator)
                else { break }
                let feed = Double(Int.random(in: 0..<100, using: &generator))
                configuration(key).feed = feed
                work.configurations[key]?.feed = feed
            case 50..<60:
                guard let key = work.snapshots.keys.sorted().randomElement(using: &generator) else {
                    break
                }
                let owner = work.configurations.keys.sorted().randomElement(using: &generator)
                snapshot(key).configuration = owner.map(configuration)
                snapshot(key).step += 1
                work.snapshots[key]?.configuration = owner
                work.snapshots[key]?.step += 1
            case 60..<65:
                guard let key = work.configurations.keys.sorted().randomElement(using: &generator)
                else { break }
                context.delete(configuration(key))
                work.configurations[key] = nil
                for (snapshotKey, state) in work.snapshots where state.configuration == key {
                    work.snapshots[snapshotKey] = nil
                }
            case 65..<70:
                guard let key = work.snapshots.keys.sorted().randomElement(using: &generator) else {
                    break
                }
                context.delete(snapshot(key))
                work.snapshots[key] = nil
            case 70..<73:
                // A duplicate name must fail the save and change nothing.
                let keys = work.configurations.keys.sorted()
                guard keys.count >= 2 else { break }
                let victim = configuration(keys[0])
                let original = victim.name
                victim.name = work.configurations[keys[1]]!.name
                #expect(throws: ObjectLogError.self, "\(location)") { try context.save() }
                victim.name = original
            case 73..<88:
                try context.save()
                saved = work
            case 88..<94:
                context.rollback()
                work = saved
            default:
                try container.close()
                container = try PersistentContainer(path: path, for: testEntities)
                context = container.newContext()
                work = saved
            }
            try check(context, against: work, location)
            if step.isMultiple(of: 20) {
                for object in try context.fetch(Snapshot.self) {
                    let expected = work.snapshots[object.objectID.key]
                    #expect(object.state.count == expected?.size, "\(location)")
                    #expect(object.state.first == expected?.fill, "\(location)")
                }
            }
            if step.isMultiple(of: 25) {
                try check(container.newContext(), against: saved, location + " (saved state)")
            }
        }
    }

    func check(_ context: ManagedObjectContext, against model: Model, _ location: String) throws {
        // First, while few objects are registered in the context: a predicate and a limited
        // sort that attribute columns serve (kept up to date by every save of the run).
        let top = try context.fetch(
            FetchRequest<Configuration>(
                predicate: #Predicate { $0.feed >= 10 && $0.feed != 50 },
                sortBy: [SortDescriptor(\.feed, order: .reverse)],
                fetchLimit: 3
            )
        )
        let expectedTop = model.configurations.filter { $0.value.feed >= 10 && $0.value.feed != 50 }
            .sorted { ($0.value.feed, $1.key) > ($1.value.feed, $0.key) }.prefix(3).map(\.key)
        #expect(top.map(\.objectID.key) == expectedTop, "\(location)")
        let configurations = try context.fetch(
            FetchRequest<Configuration>(sortBy: [SortDescriptor(\.name)])
        )
        let expectedNames = model.configurations.values.map(\.name).sorted()
        #expect(configurations.map(\.name) == expectedNames, "\(location)")
        for object in configurations {
            #expect(model.configurations[object.objectID.key]?.feed == object.feed, "\(location)")
            let expectedSnapshots = Set(
                model.snapshots.filter { $0.value.configuration == object.objectID.key }.keys
            )
            #expect(Set(object.snapshots.map(\.objectID.key)) == expectedSnapshots, "\(location)")
        }
        let snapshots = try context.fetch(Snapshot.self)
        #expect(snapshots.count == model.snapshots.count, "\(location)")
        #expect(try context.count(FetchRequest<Snapshot>()) == model.snapshots.count, "\(location)")
        for object in snapshots {
            let expected = model.snapshots[object.objectID.key]
            #expect(expected?.step == object.step, "\(location)")
            #expect(expected?.configuration == object.configuration?.objectID.key, "\(location)")
        }
        let big = try context.count(
            FetchRequest<Configuration>(predicate: #Predicate { $0.feed >= 50 })
        )
        #expect(big == model.configurations.values.filter { $0.feed >= 50 }.count, "\(location)")
    }
}
