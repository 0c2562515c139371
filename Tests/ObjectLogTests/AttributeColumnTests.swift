import Foundation
import ObjectLogStore
import TestSupport
import Testing

@testable import ObjectLog

/// An entity with one attribute of each kind a column holds.
final class Sample: ManagedObject {
    @Attribute var number = 0
    @Attribute var wide: Int64 = 0
    @Attribute var value = 0.0
    @Attribute var label = ""
    @Attribute var when = Date(timeIntervalSinceReferenceDate: 0)
    @Attribute var flag = false
}

/// A rare entity whose keys lie far apart among `Sample`'s.
final class Marker: ManagedObject {
    @Attribute var weight = 0.0
}

@Suite("Attribute columns narrow fetches without changing their results")
struct AttributeColumnTests {
    static let labels = [
        "alpha", "Beta", "beta", "alphabet", "alphabetical", "zeta", "", "éclair", "Ωmega",
        "alpha\u{0}", "aaaaaaaaX", "aaaaaaaaA", "naïve",
    ]
    static let values: [Double] = [
        -0.0, 0.0, 1, -1, 99.5, 100, 100.5, .nan, .infinity, -.infinity, 1e-300, 7,
    ]

    static func randomize(_ sample: Sample, _ generator: inout SeededGenerator) {
        sample.number = Int.random(in: -50...50, using: &generator)
        sample.wide =
            [Int64.min, -1, 0, 1, Int64.max, 42][Int.random(in: 0..<6, using: &generator)]
        sample.value =
            Bool.random(using: &generator)
            ? values[Int.random(in: 0..<values.count, using: &generator)]
            : Double(Int.random(in: 0..<200, using: &generator))
        sample.label = labels[Int.random(in: 0..<labels.count, using: &generator)]
        sample.when = Date(
            timeIntervalSinceReferenceDate: Double(Int.random(in: -5...5, using: &generator))
        )
        sample.flag = Bool.random(using: &generator)
    }

    /// Every fetch shape a column can serve, each in a new context (where few objects are
    /// registered, so the columns serve it), checked against Swift's evaluation of the
    /// predicate on every object and a full sort.
    static func checkFetches(_ container: PersistentContainer) throws {
        var context: ManagedObjectContext { container.newContext() }
        let everything = try context.fetch(FetchRequest<Sample>())
        let pivot = Date(timeIntervalSinceReferenceDate: 1)
        let predicates: [(Predicate<Sample>, (Sample) -> Bool)] = [
            (#Predicate { $0.value < 100 }, { $0.value < 100 }),
            (#Predicate { $0.value >= 0 && $0.number != 3 }, { $0.value >= 0 && $0.number != 3 }),
            (#Predicate { !($0.value == 0) || $0.flag == true }, { !($0.value == 0) || $0.flag }),
            (#Predicate { $0.wide > 0 || $0.number <= -10 }, { $0.wide > 0 || $0.number <= -10 }),
            (#Predicate { $0.when > pivot }, { $0.when > pivot }),
            (#Predicate { $0.flag != false }, { $0.flag }),
            // NaN fails both comparisons.
            (#Predicate { $0.value > -1 || $0.value <= -1 }, { $0.value > -1 || $0.value <= -1 }),
        ]
        let sorts: [[SortDescriptor<Sample>]] = [
            [SortDescriptor(\.label, comparator: .lexical), SortDescriptor(\.number)],
            [SortDescriptor(\.label, comparator: .lexical, order: .reverse)],
            [SortDescriptor(\.value), SortDescriptor(\.wide, order: .reverse)],
            [SortDescriptor(\.value, order: .reverse)],
            [SortDescriptor(\.when), SortDescriptor(\.label, comparator: .lexical)],
            [SortDescriptor(\.wide)],
            [SortDescriptor(\.number, order: .reverse)],
        ]
        for (index, (predicate, test)) in predicates.enumerated() {
            let expected = everything.filter(test)
            let matched = try context.fetch(FetchRequest<Sample>(predicate: predicate))
            #expect(
                Set(matched.map(\.objectID)) == Set(expected.map(\.objectID)),
                "predicate \(index)"
            )
            #expect(
                try context.count(FetchRequest<Sample>(predicate: predicate)) == expected.count,
                "count \(index)"
            )
            for (sortIndex, sortBy) in sorts.enumerated() {
                let full = try context.fetch(
                    FetchRequest<Sample>(predicate: predicate, sortBy: sortBy)
                )
                #expect(full.count == expected.count)
                for (offset, limit) in [(0, 1), (0, 7), (3, 20)] {
                    let top = try context.fetch(
                        FetchRequest<Sample>(
                            predicate: predicate,
                            sortBy: sortBy,
                            fetchLimit: limit,
                            fetchOffset: offset
                        )
                    )
                    let window = Array(full.dropFirst(offset).prefix(limit))
                    #expect(
                        top.map(\.objectID) == window.map(\.objectID),
                        "predicate \(index), sort \(sortIndex), offset \(offset) limit \(limit)"
                    )
                }
            }
        }
        // A sort alone, without a predicate; NaN values sort after every number.
        let sortBy = [SortDescriptor(\Sample.value), SortDescriptor(\Sample.number)]
        let full = try context.fetch(FetchRequest<Sample>(sortBy: sortBy))
        let top = try context.fetch(FetchRequest<Sample>(sortBy: sortBy, fetchLimit: 9))
        #expect(top.map(\.objectID) == full.prefix(9).map(\.objectID))
        let numbers = full.map(\.value).filter { !$0.isNaN }
        #expect(numbers == numbers.sorted())
        #expect(full.drop { !$0.value.isNaN }.allSatisfy { $0.value.isNaN })
        #expect(full.contains { $0.value.isNaN })
    }

    @Test("results equal a full evaluation through inserts, updates and deletes in many saves")
    func resultsMatchFullEvaluation() throws {
        let directory = TemporaryDirectory()
        let path = directory.path + "/columns.olog"
        var generator = SeededGenerator(seed: 7)
        do {
            let container = try PersistentContainer(path: path, for: [Sample.self, Marker.self])
            let writer = container.newContext()
            for _ in 0..<600 {
                Self.randomize(Sample(context: writer), &generator)
            }
            try writer.save()
            // A fresh context builds the columns; later saves keep them up to date.
            try Self.checkFetches(container)
            let tag = container.model.entity(for: Sample.self)!.tag
            let columns = container.coordinator.state.withLock { $0.columns[tag] }
            #expect(columns != nil)
            for round in 0..<4 {
                let changer = container.newContext()
                let all = try changer.fetch(FetchRequest<Sample>())
                for sample in all where Int.random(in: 0..<5, using: &generator) == 0 {
                    Self.randomize(sample, &generator)
                }
                for sample in all.prefix(10 + round) { changer.delete(sample) }
                for _ in 0..<50 { Self.randomize(Sample(context: changer), &generator) }
                try changer.save()
                #expect(columns?.count == all.count - 10 - round + 50)
                try Self.checkFetches(container)
            }
            // The same columns served every round: commits updated them.
            #expect(container.coordinator.state.withLock { $0.columns[tag] } === columns)
            try container.close()
        }
        // Reopened, the columns are built again from the log.
        let container = try PersistentContainer(path: path, for: [Sample.self, Marker.self])
        try Self.checkFetches(container)
        try container.close()
    }

    @Test("batch updates keep the columns right, and take the values they set without reading")
    func batchUpdatesKeepColumns() throws {
        let directory = TemporaryDirectory()
        let container = try PersistentContainer(
            path: directory.path + "/batch.olog",
            for: [Sample.self, Marker.self]
        )
        let writer = container.newContext()
        var generator = SeededGenerator(seed: 11)
        for _ in 0..<600 { Self.randomize(Sample(context: writer), &generator) }
        try writer.save()
        try Self.checkFetches(container)
        let entity = try #require(container.model.entity(for: Sample.self))
        let columns = try #require(container.coordinator.state.withLock { $0.columns[entity.tag] })
        // Attributes with columns (a number, a string, a Bool) and none set at all.
        let context = container.newContext()
        let first = try context.execute(
            BatchUpdateRequest<Sample>(
                predicate: #Predicate { $0.value < 100 },
                updates: [.set(\.value, to: 7), .set(\.label, to: "zeta"), .set(\.flag, to: true)]
            )
        )
        #expect(first.updated.count > 100)
        try Self.checkFetches(container)
        let second = try context.execute(
            BatchUpdateRequest<Sample>(
                predicate: #Predicate { $0.flag == true },
                updates: [.set(\.number, to: -3), .set(\.wide, to: Int64.max)]
            )
        )
        #expect(second.updated.count > first.updated.count)
        try Self.checkFetches(container)
        // The same columns served throughout: the updates did not drop them.
        #expect(container.coordinator.state.withLock { $0.columns[entity.tag] } === columns)

        // A batch update committed after another save: its records are what the columns must
        // follow, not the values it set. Here its one put keeps the stored value while claiming
        // to set `value` to 12,345, with the store's state from before a save.
        let store = container.coordinator.logStore!
        let basis = store.endAndGeneration
        let changer = container.newContext()
        let changed = try #require(try changer.fetch(FetchRequest<Sample>()).first)
        let key = changed.objectID.key
        let before = try #require(store.recordOffsetsAndGeneration(of: [key]).offsets.first ?? nil)
        changed.value = 55
        try changer.save()
        let (offsets, generation) = store.recordOffsetsAndGeneration(of: [key])
        let after = try #require(offsets.first ?? nil)
        let record = try #require(try store.readObject(key))
        var transaction = Transaction()
        transaction.put(key: key, entity: entity.tag, payload: record.payload, isInsert: false)
        var claimed = PayloadWriter()
        (12_345.0).encode(to: &claimed)
        let valueIndex = try #require(entity.accessors.firstIndex { $0.name == "value" })
        func commit(expecting offset: UInt64) throws {
            _ = try container.coordinator.commit(
                transaction,
                lockChecks: [],
                uniqueChanges: [],
                objectIDs: { ObjectID(entityName: entity.name, key: $0) },
                policy: .overwrite,
                batchUpdate: PersistentStoreCoordinator.BatchUpdateBasis(
                    basis: basis,
                    lockChecks: {
                        [
                            PersistentStoreCoordinator.LockCheck(
                                key: key,
                                expectedOffset: offset,
                                offsetBound: 0,
                                generation: UInt32(truncatingIfNeeded: generation)
                            )
                        ]
                    },
                    encodings: [valueIndex: claimed.bytes]
                )
            )
        }
        // Read before the save: refused, and nothing written.
        let end = store.endAndGeneration
        let refused = #expect(throws: ObjectLogError.self) { try commit(expecting: before) }
        #expect(refused?.code == .conflict)
        #expect(store.endAndGeneration == end)
        // Read after it: committed, and the columns read its record.
        try commit(expecting: after)
        #expect(store.endAndGeneration != end)
        let fetcher = container.newContext()
        #expect(
            try fetcher.count(FetchRequest<Sample>(predicate: #Predicate { $0.value == 55 })) >= 1
        )
        #expect(
            try fetcher.count(FetchRequest<Sample>(predicate: #Predicate { $0.value == 12_345 }))
                == 0
        )
        try Self.checkFetches(container)
        try container.close()
    }

    @Test("objects changed but not saved in the context are judged by their new values")
    func pendingChangesCount() throws {
        let container = try PersistentContainer.inMemory(for: [Sample.self, Marker.self])
        let writer = container.newContext()
        for index in 0..<200 {
            let sample = Sample(context: writer)
            sample.number = index
            sample.value = Double(index)
            sample.label = String(format: "s%03d", index)
        }
        try writer.save()
        let context = container.newContext()
        let request = FetchRequest<Sample>(
            predicate: #Predicate { $0.value < 10 },
            sortBy: [SortDescriptor(\.label, comparator: .lexical)],
            fetchLimit: 3
        )
        #expect(try context.fetch(request).map(\.number) == [0, 1, 2])
        // Saved as 150; changed here to match first, under a label that sorts first.
        let late = try context.fetch(
            FetchRequest<Sample>(predicate: #Predicate { $0.number == 150 })
        )[0]
        late.value = 1
        late.label = "a"
        let early = try context.fetch(
            FetchRequest<Sample>(predicate: #Predicate { $0.number == 1 })
        )[0]
        context.delete(early)
        #expect(try context.fetch(request).map(\.number) == [150, 0, 2])
        #expect(
            try context.count(FetchRequest<Sample>(predicate: #Predicate { $0.value < 10 })) == 10
        )
        var saved = request
        saved.includesPendingChanges = false
        #expect(try context.fetch(saved).map(\.number) == [0, 1, 2])
        // Another context's save shows at once.
        let other = container.newContext()
        let moved = try other.fetch(
            FetchRequest<Sample>(predicate: #Predicate { $0.number == 199 })
        )[0]
        moved.value = 0
        moved.label = "0"
        try other.save()
        #expect(try container.newContext().fetch(request).map(\.number) == [199, 0, 1])
    }

    @Test("a predicate that tests one attribute twice, and another after it, builds both columns")
    func repeatedAttribute() throws {
        let container = try PersistentContainer.inMemory(for: [Sample.self, Marker.self])
        let writer = container.newContext()
        for index in 0..<300 {
            let sample = Sample(context: writer)
            sample.number = index
            sample.value = Double(index % 200)
            sample.flag = index % 3 == 0
        }
        try writer.save()
        // `number` (payload index 0) twice, then `flag` (index 5): one read of each.
        let request = FetchRequest<Sample>(
            predicate: #Predicate { $0.number > 10 && $0.number < 250 && $0.flag == true },
            sortBy: [SortDescriptor(\.value)],
            fetchLimit: 5
        )
        let expected = (11..<250).filter { $0 % 3 == 0 }
            .sorted { ($0 % 200, $0) < ($1 % 200, $1) }.prefix(5)
        #expect(try container.newContext().fetch(request).map(\.number) == Array(expected))
        #expect(
            try container.newContext().count(FetchRequest<Sample>(predicate: request.predicate))
                == (11..<250).filter { $0 % 3 == 0 }.count
        )
    }

    @Test("columns stay right through a compaction and through upserts that overwrite")
    func compactionAndUpserts() throws {
        let directory = TemporaryDirectory()
        let container = try PersistentContainer(
            path: directory.path + "/cells.olog",
            for: testEntities
        )
        let writer = container.newContext()
        for row in 0..<400 {
            let cell = Cell(context: writer)
            cell.row = row
            cell.value = Double(row)
        }
        try writer.save()
        let churn = container.newContext()
        for cell in try churn.fetch(FetchRequest<Cell>()) where cell.row.isMultiple(of: 2) {
            cell.value += 1000
        }
        try churn.save()
        func lowest(_ count: Int) throws -> [Int] {
            try container.newContext().fetch(
                FetchRequest<Cell>(
                    predicate: #Predicate { $0.value < 500 },
                    sortBy: [SortDescriptor(\.value, order: .reverse)],
                    fetchLimit: count
                )
            ).map(\.row)
        }
        #expect(try lowest(3) == [399, 397, 395])
        // Compaction moves every record; the columns hold values, not places.
        let report = try container.coordinator.logStore!.compact()
        #expect(report.bytesAfter < report.bytesBefore)
        #expect(try lowest(3) == [399, 397, 395])
        // An upsert that overwrites gives the existing object (and its row) the new values.
        let upserter = container.newContext()
        upserter.mergePolicy = .overwrite
        let duplicate = Cell(context: upserter)
        duplicate.row = 1
        duplicate.value = 450
        try upserter.save()
        #expect(try lowest(2) == [1, 399])
        #expect(
            try container.newContext().count(
                FetchRequest<Cell>(predicate: #Predicate { $0.value < 500 })
            )
                == 200
        )
    }

    @Test("a rare entity among many others has columns of its own objects only")
    func rareEntity() throws {
        let container = try PersistentContainer.inMemory(for: [Sample.self, Marker.self])
        let context = container.newContext()
        for index in 0..<20_000 {
            let sample = Sample(context: context)
            sample.number = index
            if index % 5000 == 0 {
                let marker = Marker(context: context)
                marker.weight = Double(index)
            }
        }
        try context.save()
        let found = try container.newContext().fetch(
            FetchRequest<Marker>(
                predicate: #Predicate { $0.weight > 1 },
                sortBy: [SortDescriptor(\.weight)],
                fetchLimit: 2
            )
        )
        #expect(found.map(\.weight) == [5000, 10000])
        let tag = container.model.entity(for: Marker.self)!.tag
        #expect(container.coordinator.state.withLock { $0.columns[tag]?.count } == 4)
    }

    @Test(
        "a save that alternates two entities' inserts, updates and deletes keeps both their columns"
    )
    func interleavedEntities() throws {
        let container = try PersistentContainer.inMemory(for: [Sample.self, Marker.self])
        var generator = SeededGenerator(seed: 5)
        let writer = container.newContext()
        for index in 0..<300 {
            Self.randomize(Sample(context: writer), &generator)
            Marker(context: writer).weight = Double(index % 37)
        }
        try writer.save()
        // Columns of both entities, built before the save below.
        func checkMarkers() throws {
            // The narrowed fetches first, in a context with nothing registered.
            let context = container.newContext()
            let heavy = try context.fetch(
                FetchRequest<Marker>(predicate: #Predicate { $0.weight > 20 })
            )
            let lightest = try context.fetch(
                FetchRequest<Marker>(sortBy: [SortDescriptor(\.weight)], fetchLimit: 7)
            )
            let all = try container.newContext().fetch(FetchRequest<Marker>())
            #expect(
                Set(heavy.map(\.objectID)) == Set(all.filter { $0.weight > 20 }.map(\.objectID))
            )
            #expect(lightest.map(\.weight) == all.map(\.weight).sorted().prefix(7).map { $0 })
        }
        try checkMarkers()
        try Self.checkFetches(container)
        let sampleTag = container.model.entity(for: Sample.self)!.tag
        let markerTag = container.model.entity(for: Marker.self)!.tag
        let built = container.coordinator.state.withLock {
            ($0.columns[sampleTag], $0.columns[markerTag])
        }
        #expect(built.0 != nil && built.1 != nil)
        // One save whose puts alternate between the entities, with updates and deletes of both.
        let changer = container.newContext()
        let samples = try changer.fetch(FetchRequest<Sample>())
        let markers = try changer.fetch(FetchRequest<Marker>())
        for index in 0..<100 {
            Self.randomize(Sample(context: changer), &generator)
            Marker(context: changer).weight = Double(50 + index % 11)
        }
        for (sample, marker) in zip(samples, markers)
        where Int.random(in: 0..<3, using: &generator) == 0 {
            Self.randomize(sample, &generator)
            marker.weight = -marker.weight
        }
        for index in stride(from: 0, to: 300, by: 13) {
            changer.delete(samples[index])
            changer.delete(markers[(index * 7) % 300])
        }
        try changer.save()
        try checkMarkers()
        try Self.checkFetches(container)
        // The same columns were kept up to date, not dropped and built again.
        let kept = container.coordinator.state.withLock {
            ($0.columns[sampleTag], $0.columns[markerTag])
        }
        #expect(kept.0 === built.0 && kept.1 === built.1)
        #expect(kept.0?.count == 300 + 100 - 24)
        #expect(kept.1?.count == 300 + 100 - 24)
    }

    @Test("a commit's column reader takes exactly the encodings the payload reader takes")
    func commitReaderAgreesWithPayloadReader() throws {
        let container = try makeLogInMemoryContainer(for: [Sample.self, Marker.self])
        let store = container.coordinator.logStore!
        let entity = try #require(container.model.entity(for: Sample.self))
        let layout = try #require(entity.scalarLayout)
        let columns = AttributeColumns.make(for: entity, store: store)
        #expect(columns.add(Array(entity.accessors.indices), store: store))
        // What the columns must hold for `bytes` by the payload reader's rules (nil where it
        // throws): the 8-byte value and whether it is ordered, per property.
        func expected(_ bytes: [UInt8]) -> [(UInt64, Bool)]? {
            bytes.withUnsafeBytes { buffer in
                var reader = PayloadReader(buffer)
                guard (try? reader.readVarint()) == UInt64(layout.fields.count) else { return nil }
                return try? layout.fields.map { try $0.kind.columnValue(from: &reader) }
            }
        }
        var nextKey: ObjectKey = 1
        func check(_ bytes: [UInt8], _ comment: Comment) {
            let key = nextKey
            nextKey += 1
            let accepted = bytes.withUnsafeBytes { columns.put(key, payload: $0) }
            let wanted = expected(bytes)
            #expect(accepted == (wanted != nil), comment)
            guard accepted, let wanted, let row = columns.row(of: key) else { return }
            for (index, (value, isOrdered)) in wanted.enumerated() {
                let column = columns.columns[index]!
                #expect(column.values[row] == value, comment)
                #expect((columns.orderKey(column, slot: row) != nil) == isOrdered, comment)
            }
        }
        var generator = SeededGenerator(seed: 11)
        for round in 0..<40 {
            let sample = Sample()
            Self.randomize(sample, &generator)
            if round % 4 == 0 { sample.number = .max }
            if round % 4 == 1 { sample.label = "a label longer than sixteen bytes" }
            var writer = PayloadWriter()
            layout.encode(sample, to: &writer)
            let bytes = writer.bytes
            check(bytes, "whole encoding \(round)")
            // Every shorter encoding ends inside a value (or before the count).
            for count in 0..<bytes.count { check(Array(bytes[..<count]), "first \(count) bytes") }
            // Damaged bytes: wrong counts and lengths, bad booleans, runaway varints.
            for _ in 0..<20 {
                var damaged = bytes
                let index = Int.random(in: 0..<damaged.count, using: &generator)
                damaged[index] =
                    [0, 1, 2, 0x7F, 0x80, 0xFF][Int.random(in: 0..<6, using: &generator)]
                check(damaged, "byte \(index) of encoding \(round) replaced")
            }
        }
        // An encoding written by hand: `count` as the property count, and the first integer
        // as the raw `varint`.
        func encoding(count: Int, varint: [UInt8]) -> [UInt8] {
            var writer = PayloadWriter()
            writer.write(varint: UInt64(count))
            var isFirstInteger = true
            for field in layout.fields {
                switch field.kind {
                case .int, .int64:
                    if isFirstInteger { writer.write(raw: varint) } else { writer.write(zigzag: 0) }
                    isFirstInteger = false
                case .double, .date: writer.write(fixed64: 0)
                case .bool: writer.write(byte: 1)
                case .string: writer.write(string: "text")
                }
            }
            return writer.bytes
        }
        let count = layout.fields.count
        check(encoding(count: count, varint: [0x03]), "a one-byte varint")
        // Varints of ten bytes are read, of eleven refused; the property count is checked.
        let ten = [UInt8](repeating: 0xFF, count: 9) + [0x01]
        check(encoding(count: count, varint: ten), "a varint of ten bytes")
        check(encoding(count: count, varint: [0x80] + ten), "a varint of eleven bytes")
        check(encoding(count: count + 1, varint: [0x03]), "one property too many")
        check(encoding(count: count - 1, varint: [0x03]), "one property too few")
    }

    @Test("string prefixes keep byte order, and mark what is not ASCII")
    func prefixes() {
        let strings = ["", "a", "a\u{0}", "ab", "abcdefgh", "abcdefghi", "abcdefgi", "b", "~"]
        for (left, right) in zip(strings, strings.dropFirst()) {
            #expect(AttributeColumns.prefix(of: left).0 <= AttributeColumns.prefix(of: right).0)
        }
        #expect(
            AttributeColumns.prefix(of: "abcdefghi") == AttributeColumns.prefix(of: "abcdefghZ")
        )
        #expect(AttributeColumns.prefix(of: "naïve").isASCII == false)
        #expect(AttributeColumns.prefix(of: "naive").isASCII == true)
    }

    @Test("the heap keeps the smallest values offered")
    func heap() {
        var generator = SeededGenerator(seed: 3)
        let values = (0..<1000).map { _ in UInt64.random(in: 0..<500, using: &generator) }
        var heap = MaxHeap(capacity: 17)
        for value in values { heap.offer(value) }
        #expect(heap.isFull)
        #expect(heap.maximum == values.sorted()[16])
        var empty = MaxHeap(capacity: 0)
        empty.offer(1)
        #expect(!empty.isFull)
    }
}

extension AttributeColumns {
    /// The column prefix of a string's UTF-8.
    static func prefix(of string: String) -> (UInt64, isASCII: Bool) {
        var string = string
        return string.withUTF8 { prefix(of: UnsafeRawBufferPointer($0)) }
    }
}
