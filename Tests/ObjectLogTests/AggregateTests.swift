import Foundation
import ObjectLog
import TestSupport
import Testing

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

    @Test("no match: one result without groups (count 0, sum 0, no average), none with them")
    func empty() throws {
        let container = try PersistentContainer.inMemory(for: entities)
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

    @Test("groups without aggregates are the distinct values, in order, nil first")
    func distinct() throws {
        let container = try PersistentContainer.inMemory(for: entities)
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

    @Test("bad requests: one error naming what is wrong")
    func badRequests() throws {
        let container = try PersistentContainer.inMemory(for: entities)
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
