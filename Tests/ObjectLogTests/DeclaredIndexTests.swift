import Foundation
import ObjectLogStore
import TestSupport
import Testing

@testable import ObjectLog

/// An entity with a single-attribute index and a compound one.
final class Gauge: ManagedObject {
    @Attribute(.indexed) var value = 0.0
    @Attribute var sensor = 0
    @Attribute var label = ""
    @Attribute var time = Date(timeIntervalSinceReferenceDate: 0)
    override class var indexes: [[String]] { [["sensor", "time"]] }
}

/// The same entity without indexes: another model version of one store.
final class PlainGauge: ManagedObject {
    override class var entityName: String { "Gauge" }
    @Attribute var value = 0.0
    @Attribute var sensor = 0
    @Attribute var label = ""
    @Attribute var time = Date(timeIntervalSinceReferenceDate: 0)
}

/// A later version that keeps the index of `value` and drops the compound one.
final class SingleIndexGauge: ManagedObject {
    override class var entityName: String { "Gauge" }
    @Attribute(.indexed) var value = 0.0
    @Attribute var sensor = 0
    @Attribute var label = ""
    @Attribute var time = Date(timeIntervalSinceReferenceDate: 0)
}

/// A later version still, without indexes, and with an attribute more.
final class NotedGauge: ManagedObject {
    override class var entityName: String { "Gauge" }
    @Attribute var value = 0.0
    @Attribute var sensor = 0
    @Attribute var label = ""
    @Attribute var time = Date(timeIntervalSinceReferenceDate: 0)
    @Attribute var note = ""
}

/// A parent entity with an index its subentity inherits.
class IndexedShape: ManagedObject {
    @Attribute(.indexed) var area = 0.0
}

/// A subentity of ``IndexedShape``, with its own objects and the inherited index.
final class IndexedSquare: IndexedShape {
    @Attribute var side = 0.0
}

/// An index that names an attribute the entity does not have.
final class MisindexedGauge: ManagedObject {
    @Attribute var value = 0.0
    override class var indexes: [[String]] { [["value"], ["missing"]] }
}

@Suite("Declared indexes serve fetches from the first one after an open")
struct DeclaredIndexTests {
    static let count = 3_000
    static let path = "/gauges.olog"

    /// A value of each interesting kind: signed zeros, NaN, infinities, and plain numbers.
    static let values: [Double] = [-0.0, 0.0, .nan, .infinity, -.infinity, -1, 99.5, 100]

    static func randomize(_ gauge: Gauge, _ generator: inout SeededGenerator) {
        gauge.value =
            Int.random(in: 0..<10, using: &generator) == 0
            ? values[Int.random(in: 0..<values.count, using: &generator)]
            : Double(Int.random(in: -100..<1_000, using: &generator))
        gauge.sensor = Int.random(in: -3...12, using: &generator)
        gauge.label = "g\(Int.random(in: 0..<100, using: &generator))"
        gauge.time = Date(
            timeIntervalSinceReferenceDate: Double(Int.random(in: -50...50, using: &generator))
        )
    }

    static func options(_ fileSystem: MemoryFileSystem) -> StoreOptions {
        var options = StoreOptions()
        options.fileSystem = fileSystem
        return options
    }

    static func open(
        _ fileSystem: MemoryFileSystem,
        _ types: [ManagedObject.Type] = [Gauge.self]
    ) throws -> PersistentContainer {
        try PersistentContainer(path: path, for: types, options: options(fileSystem))
    }

    /// A store of `count` random gauges, closed, written with the model of `type`.
    static func makeStore(
        seed: UInt64 = 7,
        as type: ManagedObject.Type = Gauge.self
    ) throws -> MemoryFileSystem {
        let fileSystem = MemoryFileSystem()
        let container = try open(fileSystem, [type])
        let context = container.newContext()
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<count {
            let gauge = Gauge()
            randomize(gauge, &generator)
            if type == Gauge.self {
                try context.insert(gauge)
            } else {
                let plain = PlainGauge(context: context)
                (plain.value, plain.sensor) = (gauge.value, gauge.sensor)
                (plain.label, plain.time) = (gauge.label, gauge.time)
            }
        }
        try context.save()
        try container.close()
        return fileSystem
    }

    /// Counts the gauges with a negative value in a new context, and whether a declared index
    /// served the count, and the column of `value` is still not built (no scan read every
    /// object).
    static func countServedByIndexAlone(_ container: PersistentContainer) throws -> Bool {
        let context = Self.context(container)
        let everything = try container.newContext().fetch(FetchRequest<Gauge>())
        let counted = try context.count(FetchRequest<Gauge>(predicate: #Predicate { $0.value < 0 }))
        #expect(counted == everything.filter { $0.value < 0 }.count)
        return try context.statistics.declaredIndexScans == 1 && !hasValueColumn(container)
    }

    /// The predicates the indexes bound (a range, an equality and a range on the compound
    /// index, a union, and one with another condition beside), and one they do not.
    static var predicates: [(Predicate<Gauge>, (Gauge) -> Bool)] {
        let pivot = Date(timeIntervalSinceReferenceDate: 10)
        return [
            (#Predicate { $0.value < 100 }, { $0.value < 100 }),
            (#Predicate { $0.value >= 0 && $0.value <= 0 }, { $0.value >= 0 && $0.value <= 0 }),
            (#Predicate { $0.value == 99.5 }, { $0.value == 99.5 }),
            (#Predicate { $0.value > 500 && $0.sensor != 3 }, { $0.value > 500 && $0.sensor != 3 }),
            (#Predicate { $0.value < -1 || $0.value > 990 }, { $0.value < -1 || $0.value > 990 }),
            (
                #Predicate { $0.sensor == 4 && $0.time > pivot },
                { $0.sensor == 4 && $0.time > pivot }
            ),
            (#Predicate { $0.sensor >= 10 }, { $0.sensor >= 10 }),
            (#Predicate { $0.value > 5 && $0.value < 2 }, { $0.value > 5 && $0.value < 2 }),
            // Last: no index bounds it, so it builds the attribute column of `value`, which
            // serves later fetches instead of the index.
            (#Predicate { !($0.value < 100) }, { !($0.value < 100) }),
        ]
    }

    /// Checks every predicate's fetch and count against Swift's evaluation on every object,
    /// each in a new context; returns how many of them a declared index served.
    @discardableResult
    static func checkFetches(_ container: PersistentContainer) throws -> Int {
        let everything = try container.newContext().fetch(FetchRequest<Gauge>())
        var served = 0
        for (index, (predicate, test)) in predicates.enumerated() {
            let expected = Set(everything.filter(test).map(\.objectID))
            let context = Self.context(container)
            let matched = try context.fetch(FetchRequest<Gauge>(predicate: predicate))
            #expect(Set(matched.map(\.objectID)) == expected, "predicate \(index)")
            #expect(matched.count == expected.count, "predicate \(index) has no duplicates")
            let counted = try context.count(FetchRequest<Gauge>(predicate: predicate))
            #expect(counted == expected.count, "count of predicate \(index)")
            served += context.statistics.declaredIndexScans
        }
        return served
    }

    /// A new context that counts its paths, and takes a declared index whatever share of the
    /// objects it lets through (the default leaves wide ranges to the attribute columns).
    static func context(_ container: PersistentContainer) -> ManagedObjectContext {
        let context = container.newContext()
        context.tracer = ContextTracer()
        context.tuning.declaredIndexShare = 1
        return context
    }

    static func hasValueColumn(_ container: PersistentContainer) throws -> Bool {
        let entity = try #require(container.model.entity(named: "Gauge"))
        let value = try #require(entity.accessor(named: "value")).index
        return container.coordinator.hasColumns(of: entity, indices: [value])
    }

    static func contents(of path: String, in fileSystem: MemoryFileSystem) throws -> [UInt8] {
        let file = try fileSystem.open(path, mode: .read)
        defer { file.close() }
        return try file.read(at: 0, count: Int(try file.size()))
    }

    static func write(_ bytes: [UInt8], to path: String, in fileSystem: MemoryFileSystem) throws {
        let file = try fileSystem.open(path, mode: .create(permissions: 0o600))
        defer { file.close() }
        try file.truncate(to: 0)
        try file.write(bytes, at: 0)
    }

    @Test("fetches return the same objects with and without the indexes")
    func sameResults() throws {
        let fileSystem = try Self.makeStore(as: PlainGauge.self)
        let plain = try Self.open(fileSystem, [PlainGauge.self])
        let pivot = Date(timeIntervalSinceReferenceDate: 10)
        let plainPredicates: [Predicate<PlainGauge>] = [
            #Predicate { $0.value < 100 },
            #Predicate { $0.value > 500 && $0.sensor != 3 },
            #Predicate { $0.sensor == 4 && $0.time > pivot },
        ]
        let indexedPredicates: [Predicate<Gauge>] = [
            #Predicate { $0.value < 100 },
            #Predicate { $0.value > 500 && $0.sensor != 3 },
            #Predicate { $0.sensor == 4 && $0.time > pivot },
        ]
        let expected = try plainPredicates.map { predicate in
            try Set(plain.newContext().fetch(FetchRequest(predicate: predicate)).map(\.objectID))
        }
        try plain.close()
        let indexed = try Self.open(fileSystem)
        for (index, predicate) in indexedPredicates.enumerated() {
            let context = Self.context(indexed)
            let found = try context.fetch(FetchRequest(predicate: predicate))
            #expect(Set(found.map(\.objectID)) == expected[index], "predicate \(index)")
            #expect(context.statistics.declaredIndexScans == 1, "predicate \(index)")
        }
        try Self.checkFetches(indexed)
        try indexed.close()
    }

    @Test("the first fetch after a reopen reads the index file, not every object")
    func firstFetchAfterReopen() throws {
        let fileSystem = try Self.makeStore()
        #expect(fileSystem.kind(of: Self.path + "-indexes") == .regular, "close wrote the file")
        let container = try Self.open(fileSystem)
        let context = Self.context(container)
        let request = FetchRequest<Gauge>(predicate: #Predicate { $0.value < 0 })
        let found = try context.fetch(request)
        #expect(context.statistics.declaredIndexScans == 1)
        #expect(try !Self.hasValueColumn(container), "no scan of every object built the column")
        #expect(found.allSatisfy { $0.value < 0 })
        try Self.checkFetches(container)
        try container.close()
    }

    @Test("a range wider than the tuning's share builds the attribute columns instead")
    func wideRangeBuildsColumns() throws {
        let fileSystem = try Self.makeStore()
        let container = try Self.open(fileSystem)
        let narrow = container.newContext()
        narrow.tracer = ContextTracer()
        // About 1 in 35 objects: within the default share of 1 in 16.
        let few = try narrow.count(FetchRequest<Gauge>(predicate: #Predicate { $0.value < -80 }))
        #expect(narrow.statistics.declaredIndexScans == 1)
        #expect(try !Self.hasValueColumn(container))
        let wide = container.newContext()
        wide.tracer = ContextTracer()
        let many = try wide.count(FetchRequest<Gauge>(predicate: #Predicate { $0.value < 500 }))
        #expect(wide.statistics.declaredIndexScans == 0)
        #expect(wide.statistics.columnScans == 1)
        #expect(try Self.hasValueColumn(container))
        let everything = try container.newContext().fetch(FetchRequest<Gauge>())
        #expect(few == everything.filter { $0.value < -80 }.count)
        #expect(many == everything.filter { $0.value < 500 }.count)
        try container.close()
    }

    @Test("saves after the open are found through the index, before and after a reopen")
    func savesFollowTheIndex() throws {
        let fileSystem = try Self.makeStore()
        var generator = SeededGenerator(seed: 99)
        for round in 0..<3 {
            let container = try Self.open(fileSystem)
            // Used before the saves in one round, after them in another.
            if round == 1 { try Self.checkFetches(container) }
            let context = container.newContext()
            let all = try context.fetch(FetchRequest<Gauge>())
            for (index, gauge) in all.enumerated() where index % 7 == round {
                if index % 3 == 0 {
                    context.delete(gauge)
                } else {
                    Self.randomize(gauge, &generator)
                }
            }
            for _ in 0..<200 { Self.randomize(Gauge(context: context), &generator) }
            try context.save()
            // A batch update writes partial values: the index no longer knows them.
            let updated = try context.execute(
                BatchUpdateRequest<Gauge>(
                    predicate: #Predicate { $0.sensor == 5 },
                    updates: [.set(\.value, to: 12.5)]
                )
            )
            #expect(!updated.updated.isEmpty)
            #expect(try Self.checkFetches(container) > 0)
            try container.close()
        }
        let container = try Self.open(fileSystem)
        #expect(try Self.countServedByIndexAlone(container), "the file described every save")
        #expect(try Self.checkFetches(container) > 0)
        try container.close()
    }

    @Test("the index survives a compaction and the reopen after it")
    func survivesCompaction() throws {
        let fileSystem = try Self.makeStore()
        let container = try Self.open(fileSystem)
        let context = container.newContext()
        let all = try context.fetch(FetchRequest<Gauge>())
        for gauge in all.prefix(500) { context.delete(gauge) }
        try context.save()
        try container.compact()
        #expect(try Self.checkFetches(container) > 0)
        try container.close()
        let reopened = try Self.open(fileSystem)
        let first = Self.context(reopened)
        _ = try first.count(FetchRequest<Gauge>(predicate: #Predicate { $0.value > 900 }))
        #expect(first.statistics.declaredIndexScans == 1)
        #expect(try !Self.hasValueColumn(reopened))
        #expect(try Self.checkFetches(reopened) > 0)
        try reopened.close()
    }

    @Test(
        "a damaged, stale or missing index file is ignored and built again",
        arguments: ["damaged", "stale", "missing", "truncated"]
    )
    func damagedFileIsRebuilt(damage: String) throws {
        let fileSystem = try Self.makeStore()
        let file = Self.path + "-indexes"
        let original = try Self.contents(of: file, in: fileSystem)
        // Another save makes the first file stale.
        let writer = try Self.open(fileSystem)
        let context = writer.newContext()
        var generator = SeededGenerator(seed: 3)
        for _ in 0..<100 { Self.randomize(Gauge(context: context), &generator) }
        try context.save()
        try writer.close()
        var bytes = try Self.contents(of: file, in: fileSystem)
        switch damage {
        case "damaged": bytes[bytes.count - 9] ^= 0x40
        case "stale": bytes = original
        case "truncated": bytes.removeLast(16)
        default: try fileSystem.remove(file)
        }
        if damage != "missing" { try Self.write(bytes, to: file, in: fileSystem) }
        let container = try Self.open(fileSystem)
        #expect(try Self.checkFetches(container) > 0)
        #expect(try Self.hasValueColumn(container), "the index was built from every object")
        try container.close()
        let reopened = try Self.open(fileSystem)
        #expect(try Self.countServedByIndexAlone(reopened), "the close wrote a valid file again")
        #expect(try Self.checkFetches(reopened) > 0)
        try reopened.close()
    }

    @Test("adding and dropping an index is a lightweight migration that rewrites no object")
    func migration() throws {
        let fileSystem = MemoryFileSystem()
        let plain = try Self.open(fileSystem, [PlainGauge.self])
        let context = plain.newContext()
        for index in 0..<500 {
            let gauge = PlainGauge(context: context)
            gauge.value = Double(index)
            gauge.sensor = index % 5
        }
        try context.save()
        try plain.close()
        let sizeBefore = try Self.contents(of: Self.path, in: fileSystem).count

        let adding = try PersistentContainer.migrationPreview(
            at: Self.path,
            for: [Gauge.self],
            options: Self.options(fileSystem)
        )
        #expect(
            adding.changes.map(\.kind).sorted { $0.rawValue < $1.rawValue }
                == [.indexAdded, .indexAdded]
        )
        #expect(
            adding.changes.map(\.description).contains(
                "entity 'Gauge' gained index (value): built from 500 object(s)"
            )
        )
        let indexed = try Self.open(fileSystem)
        #expect(try Self.checkFetches(indexed) > 0)
        try indexed.close()
        // One small transaction records the new version; no object was written again.
        #expect(try Self.contents(of: Self.path, in: fileSystem).count - sizeBefore < 4_096)

        let dropping = try PersistentContainer.migrationPreview(
            at: Self.path,
            for: [SingleIndexGauge.self],
            options: Self.options(fileSystem)
        )
        #expect(dropping.changes.map(\.description) == ["entity 'Gauge' lost index (sensor, time)"])
        let single = try Self.open(fileSystem, [SingleIndexGauge.self])
        let context2 = Self.context(single)
        let below = try context2.count(
            FetchRequest<SingleIndexGauge>(predicate: #Predicate { $0.value < 10 })
        )
        #expect(below == 10)
        #expect(context2.statistics.declaredIndexScans == 1)
        try single.close()

        let last = try Self.open(fileSystem, [NotedGauge.self])
        #expect(fileSystem.kind(of: Self.path + "-indexes") == .missing, "the file went")
        #expect(try last.newContext().count(FetchRequest<NotedGauge>()) == 500)
        try last.close()
    }

    @Test("the model describes its indexes and refuses one of an unknown attribute")
    func modelDescribesIndexes() throws {
        let model = try ManagedObjectModel([Gauge.self])
        let entity = try #require(model.entity(named: "Gauge"))
        #expect(entity.schema.indexes == [["value"], ["sensor", "time"]])
        let plain = try ManagedObjectModel([PlainGauge.self])
        #expect(model.versionHash != plain.versionHash)
        #expect(plain.entity(named: "Gauge")?.schema.indexes == [])
        #expect(throws: ObjectLogError.self) { try ManagedObjectModel([MisindexedGauge.self]) }
    }

    @Test("the file's bytes decode to what was written, and any damage is refused or found")
    func fileRoundTrip() throws {
        let stamp = DeclaredIndexFile.Stamp(
            storeUUID: UUID(),
            generation: 2,
            end: 4_096,
            transactionCount: 9
        )
        // The second index's entries fill more than a page, so that one page of them can be
        // damaged while the others stay readable.
        let long = (0..<900).map { UInt64($0) * 3 }
        let sections = [
            DeclaredIndexFile.Section(
                tag: 1,
                width: 1,
                descriptor: 9,
                entries: DeclaredIndexEntries([1, 5, 2, 4])
            ),
            DeclaredIndexFile.Section(
                tag: 3,
                width: 2,
                descriptor: 7,
                entries: DeclaredIndexEntries(long)
            ),
        ]
        let bytes = try #require(DeclaredIndexFile.encode(stamp: stamp, sections: sections))
        #expect(bytes.count % 4_096 == 0)
        let decoded = try #require(DeclaredIndexFile.decode(bytes))
        #expect(decoded.stamp == stamp)
        let words = decoded.sections.map { $0.entries.withWords { Array($0) } }
        #expect(words == [[1, 5, 2, 4], long])
        #expect(decoded.sections.map(\.descriptor) == [9, 7])
        #expect(decoded.sections.map(\.width) == [1, 2])
        // A word read alone comes from a page that is checked when first read.
        let second = decoded.sections[1].entries
        #expect(second[899] == long[899])
        #expect(!second.isDamaged)
        // The header (the first page) is checked at once; a damaged entry page is found
        // when read, and then the entries refuse to be used whole.
        for offset in bytes.indices {
            var damaged = bytes
            damaged[offset] ^= 0x10
            guard let read = DeclaredIndexFile.decode(damaged) else {
                continue
            }
            #expect(offset >= 4_096, "byte \(offset) of the header")
            let refused = read.sections.contains { $0.entries.withWords { _ in true } == nil }
            #expect(refused, "byte \(offset)")
        }
        // A lookup that reads only undamaged pages trusts them; one that reads the damaged
        // page sees it.
        var lastPage = bytes
        lastPage[bytes.count - 1] ^= 1
        let partly = try #require(DeclaredIndexFile.decode(lastPage))
        #expect(partly.sections[1].entries[0] == long[0])
        #expect(!partly.sections[1].entries.isDamaged)
        _ = partly.sections[1].entries[long.count - 1]
        #expect(partly.sections[1].entries.isDamaged)
        #expect(DeclaredIndexFile.decode(Array(bytes.dropLast())) == nil)
        #expect(DeclaredIndexFile.decode(bytes + [UInt8](repeating: 0, count: 4_096)) == nil)
    }

    @Test(
        "a damaged page of entries is found by the lookup that reads it, and the index is rebuilt"
    )
    func damagedPageInPlace() throws {
        let fileSystem = try Self.makeStore()
        let file = Self.path + "-indexes"
        var bytes = try Self.contents(of: file, in: fileSystem)
        // The entries follow a header of whole pages: the value index's 3,000 entries of two
        // words, then the compound index's of three.
        let pages = [2, 3].map { (Self.count * $0 * 8 + 4_095) / 4_096 }.reduce(0, +)
        let header = bytes.count - pages * 4_096
        #expect(header > 0 && header % 4_096 == 0)
        // The key of the value index's 1,500th entry, now another object's.
        bytes[header + 1_500 * 16 + 8] ^= 0x01
        try Self.write(bytes, to: file, in: fileSystem)
        let container = try Self.open(fileSystem)
        let everything = try container.newContext().fetch(FetchRequest<Gauge>())
        let context = Self.context(container)
        let counted = try context.count(
            FetchRequest<Gauge>(predicate: #Predicate { $0.value < 1_000 })
        )
        #expect(counted == everything.filter { $0.value < 1_000 }.count)
        #expect(try Self.hasValueColumn(container), "the index was built from every object")
        #expect(try Self.checkFetches(container) > 0)
        try container.close()
        let reopened = try Self.open(fileSystem)
        #expect(try Self.countServedByIndexAlone(reopened), "the close wrote a valid file again")
        try reopened.close()
    }

    @Test(
        "a subentity keeps the inherited index for its own objects; a fetch of the parent finds both"
    )
    func inheritedIndex() throws {
        let fileSystem = MemoryFileSystem()
        let types: [ManagedObject.Type] = [IndexedShape.self, IndexedSquare.self]
        do {
            let container = try Self.open(fileSystem, types)
            let context = container.newContext()
            for index in 0..<400 {
                let shape =
                    index % 3 == 0
                    ? IndexedSquare(context: context) : IndexedShape(context: context)
                shape.area = Double(index % 50)
            }
            try context.save()
            try container.close()
        }
        let container = try Self.open(fileSystem, types)
        let model = container.model
        #expect(model.entity(named: "IndexedSquare")?.schema.indexes == [["area"]])
        let context = Self.context(container)
        let found = try context.fetch(
            FetchRequest<IndexedShape>(predicate: #Predicate { $0.area < 5 })
        )
        #expect(context.statistics.declaredIndexScans == 2, "one scan per concrete entity")
        let all = try container.newContext().fetch(FetchRequest<IndexedShape>())
        #expect(Set(found.map(\.objectID)) == Set(all.filter { $0.area < 5 }.map(\.objectID)))
        #expect(found.contains { $0 is IndexedSquare } && found.contains { !($0 is IndexedSquare) })
        try container.close()
    }
}
