import Foundation
import ObjectLog
import StoreTestSupport
import Testing

@testable import ObjectLog
@testable import ObjectLogPostgreSQL

/// The rows a translated fetch selects on a real server against the objects the engine's
/// own evaluation selects, for seeded random predicates, text matches, sorts and windows.
@Suite(
    "SQL predicates against the engine",
    .enabled(if: TestServer.runs, TestServer.skipReason),
    .serialized
)
struct SQLPredicateDifferentialTests {
    /// The seeds to run: `OBJECTLOG_SQL_PREDICATE_SEEDS` of them (2 by default).
    static var seeds: [UInt64] {
        let count =
            ProcessInfo.processInfo.environment["OBJECTLOG_SQL_PREDICATE_SEEDS"]
            .flatMap(Int.init) ?? 2
        return (1...max(1, count)).map(UInt64.init)
    }

    @Test(
        "a translated predicate selects in SQL exactly what the engine selects, or a superset when it is partial"
    )
    func randomPredicates() throws {
        for seed in Self.seeds {
            let fixture = try CatalogFixture(seed: seed, itemCount: 80)
            defer { fixture.close() }
            var generator = RandomPredicates(random: SplitMix(seed: seed &* 7919))
            let objects: [ManagedObject] = fixture.items + fixture.owners + fixture.tags
            generator.objectIDs =
                objects.map(\.objectID) + [
                    ObjectID(entityName: "Gadget", key: fixture.items[0].objectID.key),
                    ObjectID(entityName: "Item", key: fixture.owners[0].objectID.key),
                    ObjectID(entityName: "Item", key: 0),
                ]
            var exact = 0
            let rounds = 300
            for round in 0..<rounds {
                let (predicate, text) = generator.predicate(depth: 3)
                let context = "seed \(seed), predicate \(round): \(text)"
                let truth = try fixture.engineKeys(predicate)
                let request = FetchRequest<Catalog.Item>(predicate: predicate)
                let query = try #require(StoreQuery(request, model: fixture.model))
                let select = try SQLSelect(
                    query,
                    schema: fixture.model.schema,
                    mapping: fixture.mapping,
                    columns: ["objectlog_key"]
                )
                let selected = Set(try fixture.keys(select))
                if select.isExact {
                    exact += 1
                    #expect(selected == truth, "\(context)\n\(select.text)")
                } else {
                    #expect(selected.isSuperset(of: truth), "\(context)\n\(select.text)")
                }
                // The rows the store knows match without the engine are among the matches.
                var certain = query
                certain.translation.condition = query.translation.certain
                let sure = Set(
                    try fixture.keys(
                        try SQLSelect(
                            certain,
                            schema: fixture.model.schema,
                            mapping: fixture.mapping,
                            columns: ["objectlog_key"]
                        )
                    )
                )
                #expect(sure.isSubset(of: truth), "\(context) (certain rows)")
            }
            // Most random predicates translate whole; the rest still filter.
            #expect(exact > rounds / 2, "seed \(seed): only \(exact) of \(rounds) exact")
        }
    }

    @Test("text matches with and without case and diacritics agree with the engine's")
    func textMatches() throws {
        let fixture = try CatalogFixture(seed: 11, itemCount: 80)
        defer { fixture.close() }
        let entity = try #require(fixture.model.entity(for: Catalog.Item.self))
        let optionSets: [TextMatchOptions] = [
            [], .caseInsensitive, .diacriticInsensitive, [.caseInsensitive, .diacriticInsensitive],
        ]
        for needle in CatalogValues.strings {
            for options in optionSets {
                let matches: [(TextMatch<Catalog.Item>, String)] = [
                    (.contains(\.name, needle, options: options), "contains"),
                    (.hasPrefix(\.name, needle, options: options), "hasPrefix"),
                    (.equals(\.name, needle, options: options), "equals"),
                    (.contains(\.note, needle, options: options), "note contains"),
                    (!.contains(\.name, needle, options: options), "not contains"),
                    (
                        .hasPrefix(\.name, needle, options: options)
                            || .matching(#Predicate { $0.count > 2 }),
                        "hasPrefix or count > 2"
                    ),
                ]
                for (match, description) in matches {
                    let condition = try match.condition(for: entity)
                    let truth = Set(
                        try fixture.items.filter { try condition($0) }.map(\.objectID.key)
                    )
                    var request = FetchRequest<Catalog.Item>()
                    request.textMatch = match
                    let select = try Catalog.select(request, fixture.model, fixture.mapping)
                    let selected = Set(try fixture.keys(select))
                    let context = "\(description) \(String(reflecting: needle)) \(options)"
                    if select.isExact {
                        #expect(selected == truth, "\(context)")
                    } else {
                        #expect(selected.isSuperset(of: truth), "\(context)")
                    }
                }
            }
        }
    }

    @Test("a sorted, windowed fetch returns the engine's rows in the engine's order")
    func sortsAndWindows() throws {
        let fixture = try CatalogFixture(seed: 5, itemCount: 80, nanDates: false)
        defer { fixture.close() }
        typealias Item = Catalog.Item
        let sorts: [[SortDescriptor<Item>]] = [
            [SortDescriptor(\.name)],
            [SortDescriptor(\.name, order: .reverse)],
            [SortDescriptor(\.name, comparator: .lexical), SortDescriptor(\.count)],
            [SortDescriptor(\.price)],
            [SortDescriptor(\.price, order: .reverse)],
            [SortDescriptor(\.weight), SortDescriptor(\.name)],
            [SortDescriptor(\.rank)],
            [SortDescriptor(\.rank, order: .reverse), SortDescriptor(\.price)],
            [SortDescriptor(\.note)],
            [SortDescriptor(\.note, order: .reverse)],
            [SortDescriptor(\.added, order: .reverse)],
            [SortDescriptor(\.big), SortDescriptor(\.tiny, order: .reverse)],
            [SortDescriptor(\.count), SortDescriptor(\.doubled)],
            [],
        ]
        let predicates: [Predicate<Item>?] = [
            nil,
            #Predicate { $0.count > 0 },
            #Predicate { $0.owner?.name != "a" && $0.tags.count < 3 },
            #Predicate { $0.doubled > 2 },
        ]
        var random = SplitMix(seed: 5)
        for sort in sorts {
            for predicate in predicates {
                for _ in 0..<4 {
                    var request = FetchRequest<Item>(predicate: predicate, sortBy: sort)
                    if random.chance(0.7) { request.fetchLimit = random.pick([0, 1, 5, 30]) }
                    if random.chance(0.5) { request.fetchOffset = random.pick([1, 3, 50]) }
                    let select = try Catalog.select(request, fixture.model, fixture.mapping)
                    let engine = try fixture.context.fetch(request).map(\.objectID.key)
                    let rows = try fixture.keys(select)
                    let context = "\(sort.map(String.init(describing:))) \(select.text)"
                    if select.appliesWindow {
                        #expect(rows == engine, "\(context)")
                    } else if select.isOrdered {
                        // The engine filters what the statement could not, keeping the order.
                        let unwindowed = request.with(limit: nil, offset: 0)
                        let all = try fixture.context.fetch(unwindowed).map(\.objectID.key)
                        #expect(rows.filter(Set(all).contains) == all, "\(context)")
                    } else {
                        #expect(Set(rows).isSuperset(of: engine), "\(context)")
                    }
                }
            }
        }
    }
}

extension FetchRequest {
    /// The same request with another window.
    fileprivate func with(limit: Int?, offset: Int) -> FetchRequest {
        var request = self
        request.fetchLimit = limit
        request.fetchOffset = offset
        return request
    }
}
