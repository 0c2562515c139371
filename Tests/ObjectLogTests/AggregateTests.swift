import Foundation
import StoreTestSupport
import TestSupport
import Testing

@testable import ObjectLog

final class Sale: ManagedObject {
    @Attribute var region = ""
    @Attribute var isOnline = false
    @Attribute var units = 0
    @Attribute var amount = 0.0
    @Attribute var discount: Int8? = nil
    @Attribute var day = Date(timeIntervalSinceReferenceDate: 0)
    @Relationship var seller: Seller?
    override class var entityName: String { "Sale" }
}

final class Seller: ManagedObject {
    @Attribute var name = ""
    @Relationship(inverse: \Sale.seller) var sales: Set<Sale>
    override class var entityName: String { "Seller" }
}

@Suite("Aggregates: count, sum, min, max and average, grouped, without loading objects")
struct AggregateTests {
    let entities: [ManagedObject.Type] = [Sale.self, Seller.self]

    /// What the request's aggregates are, computed in Swift over the objects a fetch with the
    /// same predicate returns.
    func expected(
        _ context: ManagedObjectContext,
        _ predicate: Predicate<Sale>?,
        pending: Bool
    ) throws -> [AggregateResult] {
        var request = FetchRequest<Sale>(predicate: predicate)
        request.includesPendingChanges = pending
        let sales = try context.fetch(request)
        // With pending changes left out, the saved values count: read them in a fresh context.
        let values =
            pending
            ? sales : try sales.map { try context.coordinatorFreeCopy($0) }
        let groups = Dictionary(grouping: values) { [$0.region, $0.isOnline ? "1" : "0"] }
        return groups.keys.sorted { ($0[0], $0[1]) < ($1[0], $1[1]) }.map { key in
            let members = groups[key]!
            let discounts = members.compactMap(\.discount).map(Int64.init)
            return AggregateResult(
                group: ["region": .string(key[0]), "isOnline": .bool(key[1] == "1")],
                values: [
                    "count": .int(Int64(members.count)),
                    "sum(units)": .int(Int64(members.map(\.units).reduce(0, +))),
                    "sum(amount)": .double(members.map(\.amount).reduce(0, +)),
                    "count(discount)": .int(Int64(discounts.count)),
                    "max(discount)": discounts.max().map { .int($0) } ?? .null,
                    "min(day)": .date(members.map(\.day).min()!),
                    "average(units)": .double(
                        Double(members.map(\.units).reduce(0, +)) / Double(members.count)
                    ),
                ]
            )
        }
    }

    static var aggregates: [Aggregate<Sale>] {
        [
            .count, .sum(\.units), .sum(\.amount), .count(\.discount), .max(\.discount),
            .min(\.day),
            .average(\.units),
        ]
    }

    @Test(
        "random sales, saved and unsaved, agree with the same sums over fetched objects",
        arguments: 1...8
    )
    func randomized(seed: UInt64) throws {
        var generator = SeededGenerator(seed: seed)
        let container = try PersistentContainer.inMemory(for: entities)
        let context = container.newContext()
        let sellers = ["Ada", "Bo", "Cy"].map { name in
            let seller = Seller(context: context)
            seller.name = name
            return seller
        }
        var sales: [Sale] = []
        func makeSale() {
            let sale = Sale(context: context)
            sale.region = ["north", "south", "east"].randomElement(using: &generator)!
            sale.isOnline = Bool.random(using: &generator)
            sale.units = Int.random(in: -5...40, using: &generator)
            // Exact in binary, so that sums in any order agree.
            sale.amount = Double(Int.random(in: 0...4000, using: &generator)) / 4
            sale.discount =
                Bool.random(using: &generator) ? Int8.random(in: 0...50, using: &generator) : nil
            sale.day = Date(
                timeIntervalSinceReferenceDate: Double(Int.random(in: 0...1000, using: &generator))
                    * 86400
            )
            sale.seller = sellers.randomElement(using: &generator)
            sales.append(sale)
        }
        for _ in 0..<300 { makeSale() }
        try context.save()
        // Unsaved: inserts, changes (of a group value too) and deletes.
        for _ in 0..<20 { makeSale() }
        for sale in sales.prefix(30) { sale.units += 7 }
        for sale in sales[30..<40] { sale.region = "west" }
        for sale in sales[40..<50] { context.delete(sale) }
        sellers[0].name = "Ann"
        let predicates: [Predicate<Sale>?] = [
            nil,
            #Predicate { $0.units > 10 },
            #Predicate { $0.amount < 500 || $0.isOnline },
            #Predicate { $0.seller?.name == "Ada" },
        ]
        for (number, predicate) in predicates.enumerated() {
            for pending in [true, false] {
                var request = AggregateRequest<Sale>(
                    predicate: predicate,
                    groupBy: [\.region, \.isOnline],
                    aggregates: Self.aggregates
                )
                request.includesPendingChanges = pending
                let found = try context.aggregate(request)
                let wanted = try expected(context, predicate, pending: pending)
                #expect(found == wanted, "seed \(seed), predicate \(number), pending \(pending)")
            }
        }
        #expect(context.hasChanges, "an aggregate saves nothing")
        try context.save()
        let fresh = container.newContext()
        let request = AggregateRequest<Sale>(
            groupBy: [\.region, \.isOnline],
            aggregates: Self.aggregates
        )
        let found = try fresh.aggregate(request)
        #expect(fresh.registeredObjects.isEmpty, "an aggregate registers no object")
        #expect(found == (try expected(fresh, nil, pending: true)), "seed \(seed)")
    }

    @Test(
        "from the attribute columns: the same answers, with another context's objects loaded, changed, deleted and inserted",
        arguments: 1...6
    )
    func fromColumns(seed: UInt64) throws {
        var generator = SeededGenerator(seed: seed)
        let container = try PersistentContainer.inMemory(for: entities)
        let writer = container.newContext()
        for _ in 0..<400 {
            let sale = Sale(context: writer)
            sale.isOnline = Bool.random(using: &generator)
            sale.units = Int.random(in: -5...40, using: &generator)
            sale.amount = Double(Int.random(in: 0...4000, using: &generator)) / 4
            sale.day = Date(
                timeIntervalSinceReferenceDate: Double(Int.random(in: 0...1000, using: &generator))
                    * 86400
            )
        }
        try writer.save()
        let context = container.newContext()
        context.tracer = ContextTracer()
        let ids = try context.fetchIdentifiers(FetchRequest<Sale>())
        for id in ids.shuffled(using: &generator).prefix(20) {
            let sale = try context.object(with: id, as: Sale.self)
            sale.units += Int.random(in: 1...9, using: &generator)
            sale.isOnline.toggle()
        }
        for id in ids.shuffled(using: &generator).prefix(10) {
            context.delete(try context.object(with: id, as: Sale.self))
        }
        // Loaded but unchanged.
        for id in ids.prefix(5) { _ = try context.object(with: id, as: Sale.self).units }
        for _ in 0..<15 { Sale(context: context).units = Int.random(in: 0...9, using: &generator) }
        let predicates: [Predicate<Sale>?] = [
            nil, #Predicate { $0.units > 10 },
            #Predicate { $0.amount < 500 || $0.isOnline == true },
        ]
        let aggregates: [Aggregate<Sale>] = [
            .count, .sum(\.units), .sum(\.amount), .min(\.day), .max(\.units),
            .average(\.amount), .count(\.isOnline, as: "online"),
        ]
        // Every aggregate first: the fetches that check them load the objects into the context,
        // and a context with many loaded objects leaves the columns alone.
        var found: [[AggregateResult]] = []
        let cases = predicates.flatMap { predicate in
            ([[], [\Sale.isOnline]] as [[PartialKeyPath<Sale>]]).map { (predicate, $0) }
        }
        for (predicate, groupBy) in cases {
            let scans = context.statistics.columnScans
            let request = AggregateRequest(
                predicate: predicate,
                groupBy: groupBy,
                aggregates: aggregates
            )
            found.append(try context.aggregate(request))
            #expect(context.statistics.columnScans == scans + 1, "the columns served it")
        }
        for ((predicate, groupBy), found) in zip(cases, found) {
            let sales = try context.fetch(FetchRequest(predicate: predicate))
            let groups =
                groupBy.isEmpty
                ? [[]: sales]
                : Dictionary(grouping: sales) { [StoredValue.bool($0.isOnline)] }
            let expected = groups.keys.sorted { $0.first?.precedes($1.first ?? .null) ?? false }
                .map { key -> AggregateResult in
                    let members = groups[key]!
                    let units = members.map(\.units)
                    let amounts = members.map(\.amount)
                    return AggregateResult(
                        group: groupBy.isEmpty ? [:] : ["isOnline": key[0]],
                        values: [
                            "count": .int(Int64(members.count)),
                            "sum(units)": .int(Int64(units.reduce(0, +))),
                            "sum(amount)": .double(amounts.reduce(0, +)),
                            "min(day)": members.map(\.day).min().map { .date($0) } ?? .null,
                            "max(units)": units.max().map { .int(Int64($0)) } ?? .null,
                            "average(amount)": members.isEmpty
                                ? .null : .double(amounts.reduce(0, +) / Double(members.count)),
                            "online": .int(Int64(members.count)),
                        ]
                    )
                }
            #expect(found == expected, "seed \(seed), groups \(groupBy.count)")
        }
    }

    @Test(
        "no match: one result without groups (count 0, sum 0, no average), none with them",
        arguments: TestStoreKind.available
    )
    func empty(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: entities)
        let context = container.newContext()
        let single = try context.aggregate(
            AggregateRequest<Sale>(aggregates: [
                .count, .sum(\.units), .sum(\.amount), .average(\.units), .min(\.day),
            ])
        )
        #expect(
            single == [
                AggregateResult(
                    group: [:],
                    values: [
                        "count": .int(0), "sum(units)": .int(0), "sum(amount)": .double(0),
                        "average(units)": .null, "min(day)": .null,
                    ]
                )
            ]
        )
        #expect(
            try context.aggregate(AggregateRequest<Sale>(groupBy: [\.region], aggregates: [.count]))
                .isEmpty
        )
    }

    @Test(
        "groups without aggregates are the distinct values, in order, nil first",
        arguments: TestStoreKind.available
    )
    func distinct(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: entities)
        let context = container.newContext()
        for discount in [5, nil, 5, 2, nil] as [Int8?] {
            Sale(context: context).discount = discount
        }
        try context.save()
        let groups = try context.aggregate(
            AggregateRequest<Sale>(groupBy: [\.discount], aggregates: [])
        )
        #expect(groups.map { $0["discount"] } == [.null, .int(2), .int(5)])
        let named = try context.aggregate(
            AggregateRequest<Sale>(groupBy: [\.discount], aggregates: [.count(as: "n")])
        )
        #expect(named.map { $0["n"] } == [.int(2), .int(1), .int(2)])
    }

    @Test("bad requests: one error naming what is wrong", arguments: TestStoreKind.available)
    func badRequests(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: entities)
        let context = container.newContext()
        Sale(context: context).units = .max
        Sale(context: context).units = 1
        let cases: [(AggregateRequest<Sale>, String)] = [
            (AggregateRequest(aggregates: [.sum(\.region)]), "is string, not a number"),
            (AggregateRequest(aggregates: [.average(\.region)]), "is string, not a number"),
            (AggregateRequest(groupBy: [\.seller], aggregates: [.count]), "stored attribute"),
            (AggregateRequest(aggregates: [.count, .count]), "named 'count'"),
            (AggregateRequest(aggregates: [.sum(\.units)]), "overflows"),
        ]
        for (request, message) in cases {
            #expect {
                _ = try context.aggregate(request)
            } throws: { error in
                let error = try #require(error as? ObjectLogError)
                return error.code == .invalidArgument && error.message.contains(message)
            }
        }
    }

    @Test(
        "the getting-started article's aggregate, as it shows it",
        arguments: TestStoreKind.available
    )
    func gettingStartedExample(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: [Experiment.self, Frame.self])
        let context = container.newContext()
        for (name, feed, kill) in [("a", 0.03, 0.06), ("b", 0.03, 0.07), ("c", 0.05, 0.04)] {
            let experiment = Experiment(context: context)
            experiment.name = name
            experiment.feed = feed
            experiment.kill = kill
            experiment.created = Date(timeIntervalSinceReferenceDate: kill * 1000)
        }
        // As in the article:
        let request = AggregateRequest<Experiment>(
            predicate: #Predicate { $0.kill > 0.05 },
            groupBy: [\.feed],
            aggregates: [.count, .average(\.kill), .max(\.created)]
        )
        for group in try context.aggregate(request) {
            print(group["feed"]!, group["count"]!, group["average(kill)"]!, group["max(created)"]!)
        }
        let groups = try context.aggregate(request)
        #expect(groups.count == 1)
        #expect(groups.first?["feed"] == .double(0.03))
        #expect(groups.first?["count"] == .int(2))
        #expect(groups.first?["max(created)"] == .date(Date(timeIntervalSinceReferenceDate: 70)))
    }
}

extension ManagedObjectContext {
    /// The saved state of `object`, read in a context of its own.
    fileprivate func coordinatorFreeCopy(_ object: Sale) throws -> Sale {
        try ManagedObjectContext(coordinator: coordinator).existingObject(
            with: object.objectID,
            as: Sale.self
        )
    }
}
