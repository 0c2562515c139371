import Foundation
import ObjectLogStore
import TestSupport
import Testing

@testable import ObjectLog

/// A batch update splices the new encodings into each record's bytes; these tests hold the
/// result to a full re-encode of the changed objects (a fetch, the change and a save).
@Suite("Batch updates splice exactly the bytes a full re-encode writes")
struct BatchUpdateSpliceTests {
    /// Where the copies of the store go: one for the batch updates, one changed one by one.
    enum Way: CaseIterable {
        case serial, parallel, oneByOne
    }

    /// A store of `count` configurations with values of every kind, some thumbnails in blobs
    /// (from 64 bytes on), built the same way for every call (the same keys, the same bytes).
    func makeStore(
        _ directory: TemporaryDirectory,
        _ name: String,
        count: Int
    ) throws
        -> PersistentContainer
    {
        var options = StoreOptions()
        options.externalStorageMinimumByteCount = 64
        let container = try PersistentContainer(
            path: directory.file(name),
            model: try ManagedObjectModel([Configuration.self, Snapshot.self]),
            options: options
        )
        let context = container.newContext()
        var random = SeededGenerator(seed: 0x5EED_BA7C)
        for index in 0..<count {
            let item = Configuration(context: context)
            item.name = "configuration \(index)"
            item.model = index % 3 == 0 ? "GrayScott" : String(repeating: "é", count: index % 40)
            item.feed = Double.random(in: -1...1, using: &random)
            item.kill = Double(index)
            item.timestep = Float.random(in: 0...1, using: &random)
            item.width = Int32.random(in: .min ... .max, using: &random)
            item.seed = random.next()
            item.isFavorite = index % 2 == 0
            item.created = Date(timeIntervalSince1970: Double(index) * 1000.5)
            item.identifier = UUID(
                uuid: (UInt8(index % 256), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
            )
            item.homepage = index % 4 == 0 ? nil : URL(string: "https://example.org/\(index)")
            item.notes = index % 5 == 0 ? nil : String(repeating: "n", count: index % 300)
            item.render = RenderSettings(palette: "p\(index % 7)", gamma: Double(index) / 10)
            switch index % 3 {
            case 0: item.thumbnail = nil
            case 1: item.thumbnail = Data(repeating: UInt8(index % 256), count: 10)
            default: item.thumbnail = Data((0..<200).map { UInt8(($0 + index) % 256) })
            }
            if index % 6 == 0 {
                let snapshot = Snapshot(context: context)
                snapshot.step = index
                snapshot.configuration = item
            }
        }
        try context.save()
        return container
    }

    /// Every live configuration's stored value, by key.
    func values(_ container: PersistentContainer) throws -> [ObjectKey: [UInt8]] {
        let tag = try #require(container.coordinator.model.entity(named: "Configuration")?.tag)
        var values: [ObjectKey: [UInt8]] = [:]
        try container.coordinator.logStore!.forEachLiveObject(entity: tag) { key, _, value in
            values[key] = Array(value)
        }
        return values
    }

    @Test(
        "spliced values equal a re-encode, on one thread and on several",
        arguments: [
            "feed", "notes", "notes nil", "homepage and width", "model and isFavorite",
            "identifier, timestep and created",
        ]
    )
    func splicedValuesEqualReencoding(_ change: String) throws {
        let directory = TemporaryDirectory()
        let predicate = #Predicate<Configuration> { $0.kill < 150 || $0.kill >= 200 }
        var results: [Way: [ObjectKey: [UInt8]]] = [:]
        for way in Way.allCases {
            let container = try makeStore(directory, "\(way).olog", count: 300)
            let context = container.newContext()
            context.tracer = ContextTracer()
            if way == .parallel {
                context.tuning.parallelBatchThreshold = 2
                context.tuning.parallelPlanThreshold = 2
                context.tuning.parallelPartSize = 16
            } else {
                context.tuning.parallelBatchThreshold = .max
            }
            let updates: [PropertyUpdate<Configuration>] =
                switch change {
                case "feed": [.set(\.feed, to: 0.125)]
                case "notes": [.set(\.notes, to: "a note of some length")]
                case "notes nil": [.set(\.notes, to: nil)]
                case "homepage and width":
                    [
                        .set(\.homepage, to: URL(string: "https://example.com")),
                        .set(\.width, to: -7),
                    ]
                case "model and isFavorite": [.set(\.model, to: ""), .set(\.isFavorite, to: true)]
                default:
                    [
                        .set(
                            \.identifier,
                            to: UUID(uuid: (9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6))
                        ),
                        .set(\.timestep, to: 0.5),
                        .set(\.created, to: Date(timeIntervalSince1970: 12)),
                    ]
                }
            if way == .oneByOne {
                for item in try context.fetch(FetchRequest(predicate: predicate)) {
                    for update in updates { update.assign(item) }
                }
                try context.save()
            } else {
                let changed = try context.execute(
                    BatchUpdateRequest(predicate: predicate, updates: updates)
                )
                #expect(changed.updated.count == 250)
                #expect(context.statistics.parallelBatchUpdates == (way == .parallel ? 1 : 0))
            }
            results[way] = try values(container)
            // The kept blobs are listed in the new records: compaction keeps them.
            try container.coordinator.logStore!.compact()
            let thumbnails = try container.newContext().fetch(FetchRequest<Configuration>())
                .filter { $0.kill.truncatingRemainder(dividingBy: 3) == 2 }
            #expect(thumbnails.count == 100)
            for item in thumbnails {
                #expect(item.thumbnail?.count == 200)
            }
            try container.close()
        }
        let reference = try #require(results[.oneByOne])
        #expect(reference.count == 300)
        for way in [Way.serial, .parallel] {
            let values = try #require(results[way])
            #expect(values.keys.sorted() == reference.keys.sorted())
            let differing = reference.keys.filter { values[$0] != reference[$0] }.sorted()
            #expect(differing.isEmpty, "\(way): the values of \(differing.count) objects differ")
        }
    }

    @Test("the splice of each value equals the value written property by property")
    func spliceEqualsReference() throws {
        let directory = TemporaryDirectory()
        let container = try makeStore(directory, "store.olog", count: 120)
        let entity = try #require(container.coordinator.model.entity(named: "Configuration"))
        let shapes = entity.schema.properties.map(ValueShape.init)
        let byName = Dictionary(
            uniqueKeysWithValues: entity.schema.properties.enumerated().map { ($1.name, $0) }
        )
        let sets: [[String: [UInt8]]] = [
            ["feed": [1, 2, 3, 4, 5, 6, 7, 8]],
            ["name": [0], "notes": [0]],
            [
                "notes": [1, 3, 0x61, 0x62, 0x63], "seed": [0x80, 0x01], "render": [2, 0x7B, 0x7D],
            ],
            ["thumbnail": [0], "homepage": [0]],
            ["snapshots": [0], "name": [3, 0x61, 0x62, 0x63]],
        ]
        for set in sets {
            let replacements = Dictionary(
                uniqueKeysWithValues: try set.map { (try #require(byName[$0.key]), $0.value) }
            )
            let splice = BatchUpdateSplice(shapes: shapes, replacements: replacements)
            var pieces = BatchUpdateSplice.Pieces()
            var transaction = Transaction()
            var expected: [[UInt8]] = []
            try container.coordinator.logStore!.forEachLiveObject(entity: entity.tag) {
                key,
                tag,
                value in
                expected.append(try splice.reference(value))
                try splice.put(value, key: key, entity: tag, pieces: &pieces, into: &transaction)
            }
            #expect(expected.count == 120)
            #expect(transaction.changes.map(\.payload) == expected)
        }
        try container.close()
    }

    @Test("values of plain attributes read straight from their bytes splice as through a reader")
    func bytesReadDirectlySpliceAlike() throws {
        let shapes = try RandomEncoding.plainShapes()
        var random = SeededGenerator(seed: 0xB17E5)
        func value(of shape: ValueShape) -> [UInt8] {
            RandomEncoding.value(of: shape, using: &random)
        }
        func outcome(_ splice: BatchUpdateSplice, _ bytes: [UInt8]) -> String {
            var transaction = Transaction()
            var pieces = BatchUpdateSplice.Pieces()
            return bytes.withUnsafeBytes { buffer in
                do {
                    try splice.put(buffer, key: 1, entity: 1, pieces: &pieces, into: &transaction)
                    return "\(transaction.changes.map(\.payload))"
                } catch {
                    return "\(error)"
                }
            }
        }
        var compared = 0
        var spliced = 0
        for _ in 0..<300 {
            let chosen = (0..<Int.random(in: 1...8, using: &random)).map { _ in
                shapes[Int.random(in: 0..<shapes.count, using: &random)]
            }
            var replacements: [Int: [UInt8]] = [:]
            for index in chosen.indices where Int.random(in: 0..<3, using: &random) == 0 {
                replacements[index] = value(of: chosen[index])
            }
            let direct = BatchUpdateSplice(shapes: chosen, replacements: replacements)
            let throughReader = BatchUpdateSplice(
                shapes: chosen,
                replacements: replacements,
                readsBytesDirectly: false
            )
            for _ in 0..<20 {
                var bytes = [UInt8(chosen.count)]
                for shape in chosen { bytes += value(of: shape) }
                // Cut short or lengthened now and then.
                switch Int.random(in: 0..<6, using: &random) {
                case 0: bytes.removeLast(Int.random(in: 0...bytes.count, using: &random))
                case 1: bytes.append(0x55)
                default: break
                }
                let expected = outcome(throughReader, bytes)
                #expect(outcome(direct, bytes) == expected, "\(chosen), \(bytes)")
                compared += 1
                if expected.hasPrefix("[") { spliced += 1 }
            }
        }
        #expect(compared == 6000)
        // Both outcomes occur often: values spliced and values refused.
        #expect(spliced > 1000 && spliced < 5500)
    }

    @Test(
        "a batch update on several threads of values an older model wrote, lengthened by the mapping"
    )
    func parallelUpdateOfUpgradedValues() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("upgraded.olog")
        let old = try PersistentContainer(path: path, for: [SpliceItemV1.Item.self])
        let writing = old.newContext()
        for index in 0..<200 { SpliceItemV1.Item(context: writing).value = index }
        try writing.save()
        try old.close()

        // Each old record is a few bytes; read through the new model, its value gains a long
        // default, more than the room a part reckons from the records it reads.
        let container = try PersistentContainer(path: path, for: [SpliceItemV2.Item.self])
        let context = container.newContext()
        context.tracer = ContextTracer()
        context.tuning.parallelBatchThreshold = 2
        context.tuning.parallelPartSize = 16
        let changed = try context.execute(
            BatchUpdateRequest<SpliceItemV2.Item>(
                predicate: #Predicate { $0.value < 100 },
                updates: [.set(\.value, to: -1)]
            )
        )
        #expect(changed.updated.count == 100)
        #expect(context.statistics.parallelBatchUpdates == 1)
        let items = try container.newContext().fetch(FetchRequest<SpliceItemV2.Item>())
        #expect(items.count == 200)
        #expect(items.filter { $0.value == -1 }.count == 100)
        #expect(Set(items.map(\.value)).subtracting([-1]) == Set(100..<200))
        #expect(items.allSatisfy { $0.remark == SpliceItemV2.defaultRemark })
        try container.close()
    }
}

/// One entity before and after an added attribute with a long default.
enum SpliceItemV1 {
    final class Item: ManagedObject {
        @Attribute var value = 0
        override class var entityName: String { "SpliceItem" }
    }
}

enum SpliceItemV2 {
    static let defaultRemark = String(repeating: "a long default remark ", count: 6)

    final class Item: ManagedObject {
        @Attribute var value = 0
        @Attribute var remark = SpliceItemV2.defaultRemark
        override class var entityName: String { "SpliceItem" }
    }
}
