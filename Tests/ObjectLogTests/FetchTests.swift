import Foundation
import ObjectLogStore
import StoreTestSupport
import TestSupport
import Testing

@testable import ObjectLog

@Suite("Fetch requests")
struct FetchTests {
    /// A context with saved cells (row 0..<20, value = row % 7) and some pending changes.
    func makeCells() throws -> (PersistentContainer, ManagedObjectContext) {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let context = container.newContext()
        for row in 0..<20 {
            let cell = Cell(context: context)
            cell.row = row
            cell.value = Double(row % 7)
        }
        try context.save()
        return (container, context)
    }

    @Test("predicate, sort, offset and limit select and order like the plain-array model")
    func predicateSortWindow() throws {
        let (container, context) = try makeCells()
        var rowKeys: [Int: ObjectKey] = [:]
        for cell in try context.fetch(Cell.self) { rowKeys[cell.row] = cell.objectID.key }
        let expected = (0..<20).filter { Double($0 % 7) >= 2 }
            .sorted { (Double($0 % 7), $1) > (Double($1 % 7), $0) }
        let request = FetchRequest<Cell>(
            predicate: #Predicate { $0.value >= 2 },
            sortBy: [SortDescriptor(\.value, order: .reverse), SortDescriptor(\.row)]
        )
        #expect(try context.fetch(request).map(\.row) == expected)
        var window = request
        window.fetchOffset = 3
        window.fetchLimit = 4
        #expect(try context.fetch(window).map(\.row) == Array(expected[3..<7]))
        #expect(try context.count(window) == 4)
        #expect(try context.count(request) == expected.count)
        #expect(
            try context.fetchIdentifiers(window).map(\.key)
                == Array(expected[3..<7]).map { rowKeys[$0] }
        )
        var decoded = FetchRequest<Cell>()
        decoded.returnsObjectsAsFaults = false
        let all = try container.newContext().fetch(decoded)
        #expect(all.count == 20 && all.allSatisfy { !$0.isFault })
        #expect(all.map(\.value) == (0..<20).map { Double($0 % 7) })
    }

    @Test("pending inserts, updates and deletes are included by default and excluded on request")
    func pendingChanges() throws {
        let (_, context) = try makeCells()
        let extra = Cell(context: context)
        extra.row = 100
        extra.value = 50
        let rows = try context.fetch(FetchRequest<Cell>(predicate: #Predicate { $0.row < 3 }))
        rows[0].value = 60
        context.delete(rows[1])
        let big = FetchRequest<Cell>(
            predicate: #Predicate { $0.value >= 50 },
            sortBy: [SortDescriptor(\.row)]
        )
        #expect(try context.fetch(big).map(\.row) == [0, 100])
        #expect(try context.count(FetchRequest<Cell>()) == 20)
        var saved = big
        saved.includesPendingChanges = false
        #expect(try context.fetch(saved).isEmpty)
        var all = FetchRequest<Cell>()
        all.includesPendingChanges = false
        #expect(try context.count(all) == 20)
        #expect(try context.fetch(all).count == 20)
    }

    @Test("string predicates and optionals run", arguments: TestStoreKind.available)
    func stringsAndOptionals(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        for (index, name) in ["Spots", "Stripes", "Maze", "Spirals"].enumerated() {
            let configuration = Configuration(context: context)
            configuration.name = name
            configuration.notes = index.isMultiple(of: 2) ? "note \(index)" : nil
        }
        try context.save()
        let reader = container.newContext()
        let spots = try reader.fetch(
            FetchRequest<Configuration>(
                predicate: #Predicate { $0.name.starts(with: "Sp") },
                sortBy: [SortDescriptor(\.name)]
            )
        )
        #expect(spots.map(\.name) == ["Spirals", "Spots"])
        let withNotes = try reader.count(
            FetchRequest<Configuration>(predicate: #Predicate { $0.notes != nil })
        )
        #expect(withNotes == 2)
    }

    @Test("counting and fetching IDs decode nothing and register nothing")
    func countsDoNotMaterialize() throws {
        let (container, _) = try makeCells()
        let context = container.newContext()
        #expect(try context.count(FetchRequest<Cell>()) == 20)
        #expect(try context.fetchIdentifiers(FetchRequest<Cell>()).count == 20)
        #expect(try context.count(FetchRequest<Cell>(predicate: #Predicate { $0.row > 4 })) == 15)
        #expect(context.registeredObjects.isEmpty)
        let faults = try context.fetch(FetchRequest<Cell>(fetchLimit: 5))
        #expect(faults.count == 5 && faults.allSatisfy { $0.isFault })
        #expect(context.registeredObjects.count == 5)
    }
}

@Suite("Predicates over relationships")
struct RelationshipPredicateTests {
    @Test(
        "predicates can follow a to-one relationship and compare object IDs",
        arguments: TestStoreKind.available
    )
    func followRelationship(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        var ids: [ObjectID] = []
        for name in ["A", "B"] {
            let configuration = Configuration(context: context)
            configuration.name = name
            ids.append(configuration.objectID)
            insertSnapshots(3, of: configuration, into: context)
        }
        try context.save()
        let reader = container.newContext()
        let byName = try reader.fetch(
            FetchRequest<Snapshot>(
                predicate: #Predicate { $0.configuration?.name == "B" && $0.step >= 1 },
                sortBy: [SortDescriptor(\.step, order: .reverse)]
            )
        )
        #expect(byName.map(\.step) == [2, 1])
        #expect(byName.allSatisfy { $0.configuration?.name == "B" })
        let wanted = ids[0]
        let byID = try reader.count(
            FetchRequest<Snapshot>(predicate: #Predicate { $0.configuration?.objectID == wanted })
        )
        #expect(byID == 3)
    }
}

@Suite("Sort comparators")
struct SortComparatorTests {
    @Test(
        "fast comparators order like SortDescriptor.compare for every attribute kind",
        arguments: TestStoreKind.available
    )
    func agreesWithFoundation(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        var generator = SeededGenerator(seed: 99)
        let objects = (0..<60).map { index in
            let configuration = Configuration(context: context)
            configuration.name = ["b", "B", "a10", "a2", "é"][index % 5] + "\(index % 3)"
            configuration.feed = Double(Int.random(in: 0..<5, using: &generator))
            configuration.width = Int32.random(in: -3...3, using: &generator)
            configuration.created = Date(timeIntervalSinceReferenceDate: Double(index % 4))
            configuration.notes = index.isMultiple(of: 3) ? nil : "n\(index % 2)"
            return configuration
        }
        let descriptors: [SortDescriptor<Configuration>] = [
            SortDescriptor(\.feed), SortDescriptor(\.feed, order: .reverse),
            SortDescriptor(\.width),
            SortDescriptor(\.created, order: .reverse), SortDescriptor(\.name),
            SortDescriptor(\.notes), SortDescriptor(\.timestep),
            SortDescriptor(\.name, comparator: .lexical),
            SortDescriptor(\.name, comparator: .lexical, order: .reverse),
        ]
        for descriptor in descriptors {
            let fast = context.comparator(descriptor)
            for lhs in objects.prefix(20) {
                for rhs in objects.suffix(20) {
                    #expect(fast.compare(lhs, rhs) == descriptor.compare(lhs, rhs), "\(descriptor)")
                }
            }
        }
        #expect(context.comparator(SortDescriptor(\Configuration.feed)).isDirect)
        #expect(context.comparator(SortDescriptor(\Configuration.width, order: .reverse)).isDirect)
        #expect(context.comparator(SortDescriptor(\Configuration.name)).isDirect)
        #expect(
            context.comparator(SortDescriptor(\Configuration.name, comparator: .lexical)).isDirect
        )
        // ASCII pairs are compared by bytes; any other pair is left to Foundation.
        #expect(asciiOrder("a", "ab") == .orderedAscending)
        #expect(asciiOrder("b", "ab") == .orderedDescending)
        #expect(asciiOrder("B", "a") == .orderedAscending)
        #expect(asciiOrder("same", "same") == .orderedSame)
        #expect(asciiOrder("a", "aé") == nil)
        #expect(asciiOrder("é", "e") == nil)
        #expect(asciiOrder("e\u{301}", "~") == nil)
        #expect(asciiOrder("~", "e\u{301}") == nil)
        #expect(!context.comparator(SortDescriptor(\Configuration.doubledFeed)).isDirect)
        #expect(!context.comparator(SortDescriptor(\Configuration.negatedWidth)).isDirect)
        let reversed = try context.fetch(
            FetchRequest<Configuration>(sortBy: [
                SortDescriptor(\.negatedWidth), SortDescriptor(\.feed),
            ])
        )
        #expect(reversed.map(\.width) == objects.map(\.width).sorted(by: >))
    }
}

extension Configuration {
    /// Computed properties over one attribute must not be mistaken for the attribute.
    var doubledFeed: Double { feed * 2 }
    var negatedWidth: Int32 { -width }
    /// Settable, but transforms the attribute both ways: not the attribute either.
    var shoutedName: String {
        get { name.uppercased() }
        set { name = newValue.lowercased() }
    }
    /// Settable and the identity for positive widths only: not the attribute.
    var clampedWidth: Int32 {
        get { max(width, 0) }
        set { width = newValue }
    }
    /// Forwards to the attribute unchanged both ways: read as the attribute.
    var alias: String {
        get { name }
        set { name = newValue }
    }
}

@Suite("Bulk fault loading")
struct BulkFaultTests {
    @Test(
        "reading many faults switches to one pass over the log and gives the same values",
        arguments: TestStoreKind.available
    )
    func bulkLoad(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let writer = container.newContext()
        let count = ManagedObjectContext.faultsForBulkLoad * 2
        for row in 0..<count {
            let cell = Cell(context: writer)
            cell.row = row
            cell.value = Double(row) * 0.5
        }
        try writer.save()
        let reader = container.newContext()
        reader.tracer = ContextTracer()
        let cells = try reader.fetch(Cell.self)
        // A database store returns its objects loaded (their rows come with the query), in
        // one query: there are no faults to load.
        let faults = kind != .postgreSQL
        #expect(cells.allSatisfy { $0.isFault == faults })
        var mismatches = 0
        for cell in cells where cell.value != Double(cell.row) * 0.5 { mismatches += 1 }
        #expect(mismatches == 0)
        #expect(Set(cells.map(\.row)).count == count)
        #expect(reader.statistics.bulkFaultLoads == (faults ? 1 : 0))
        #expect(reader.statistics.storeQueries == (faults ? 0 : 1))
        cells[0].value = -1
        #expect(reader.updatedObjects == [cells[0]])
        try reader.save()
        #expect(
            try container.newContext().count(
                FetchRequest<Cell>(predicate: #Predicate { $0.value < 0 })
            ) == 1
        )

        let few = container.newContext()
        few.tracer = ContextTracer()
        for cell in try few.fetch(FetchRequest<Cell>(fetchLimit: 100)) { _ = cell.row }
        #expect(few.statistics.bulkFaultLoads == 0, "a few reads never scan the whole log")
    }
}
