import Foundation
import ObjectLog
import StoreTestSupport
import TestSupport
import Testing

/// Values whose first sort keys decide some comparisons and not others: strings sharing their
/// first 8 bytes or not all ASCII, NaN and signed zeros, equal dates.
final class Ranked: ManagedObject {
    @Attribute var name = ""
    @Attribute var score = 0.0
    @Attribute var when = Date(timeIntervalSinceReferenceDate: 0)
    @Attribute var rank = 0
}

@Suite("Sorted fetches with a small limit keep only the best matches")
struct TopFetchTests {
    @Test(
        "sort + limit + offset returns what a full sort would, with pending changes included",
        arguments: TestStoreKind.available
    )
    func topMatchesEqualFullSort(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        var generator = SeededGenerator(seed: 42)
        let setup = container.newContext()
        for row in 0..<3000 {
            let cell = Cell(context: setup)
            cell.row = row
            cell.column = Int.random(in: 0..<50, using: &generator)
            cell.value = Double(Int.random(in: 0..<200, using: &generator))
        }
        try setup.save()

        let context = container.newContext()
        // Registered and changed objects, a pending insert and a pending delete.
        let loaded = try context.fetch(
            FetchRequest<Cell>(predicate: #Predicate { $0.row < 40 })
        )
        for cell in loaded.prefix(20) { cell.value = -Double(cell.row) }
        context.delete(loaded[25])
        let inserted = Cell(context: context)
        inserted.row = 99_999
        inserted.value = -1000

        let sortBy = [SortDescriptor(\Cell.value), SortDescriptor(\Cell.column, order: .reverse)]
        let predicate = #Predicate<Cell> { $0.value < 120 }
        let all = try context.fetch(FetchRequest<Cell>(predicate: predicate, sortBy: sortBy))
        #expect(all.count > 500)
        for (offset, limit) in [(0, 1), (0, 10), (7, 30), (100, 64)] {
            let top = try context.fetch(
                FetchRequest<Cell>(
                    predicate: predicate,
                    sortBy: sortBy,
                    fetchLimit: limit,
                    fetchOffset: offset
                )
            )
            let expected = Array(all[offset..<(offset + limit)])
            #expect(
                top.map(\.objectID) == expected.map(\.objectID),
                "offset \(offset) limit \(limit)"
            )
            // Uniquing: the instances are the context's registered ones.
            #expect(zip(top, expected).allSatisfy { $0 === $1 })
        }
        #expect(
            try context.fetch(
                FetchRequest<Cell>(predicate: predicate, sortBy: sortBy, fetchLimit: 1)
            ).first === inserted
        )

        // Objects first seen by a limited fetch are registered and save like any other.
        let fresh = container.newContext()
        let best = try fresh.fetch(
            FetchRequest<Cell>(predicate: predicate, sortBy: sortBy, fetchLimit: 5)
        )
        #expect(best.count == 5)
        #expect(fresh.registeredObjects.count == 5)
        for cell in best { cell.row += 100_000 }
        try fresh.save()
        let checker = container.newContext()
        let again = try checker.fetch(
            FetchRequest<Cell>(predicate: predicate, sortBy: sortBy, fetchLimit: 5)
        )
        #expect(again.map(\.objectID) == best.map(\.objectID))
        #expect(again.allSatisfy { $0.row >= 100_000 })
    }

    @Test(
        "the best are the same whether their first sort's keys decide or the descriptors do",
        arguments: TestStoreKind.available
    )
    func orderKeysAgreeWithDescriptors(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: [Ranked.self])
        var generator = SeededGenerator(seed: 11)
        // Precomposed only: this toolchain's `String` comparison is not transitive over a
        // mix of composed and decomposed forms ("e\u{301}" equals "\u{e9}" and "\u{e9}0"),
        // so no sort could agree with itself on them.
        let names = [
            "", "a", "A", "samePrefix", "samePrefix-b", "samePrefix-a", "samePrefiy", "\u{e9}", "e",
            "f", "zz", "Zebra", "na\u{ef}ve", "naive",
        ]
        let scores: [Double] = [.nan, -0.0, 0.0, .infinity, -.infinity, 1, -1, 2.5]
        let setup = container.newContext()
        for _ in 0..<1_500 {
            let ranked = Ranked(context: setup)
            ranked.name =
                names[Int.random(in: 0..<names.count, using: &generator)]
                + (Bool.random(using: &generator)
                    ? "" : String(Int.random(in: 0..<9, using: &generator)))
            ranked.score = scores[Int.random(in: 0..<scores.count, using: &generator)]
            ranked.when = Date(
                timeIntervalSinceReferenceDate: Double(Int.random(in: -3...3, using: &generator))
            )
            ranked.rank = Int.random(in: -5...5, using: &generator)
        }
        try setup.save()
        let orders: [[SortDescriptor<Ranked>]] = [
            [SortDescriptor(\.name, comparator: .lexical)],
            [
                SortDescriptor(\.name, comparator: .lexical, order: .reverse),
                SortDescriptor(\.rank),
            ],
            [SortDescriptor(\.name)],
            [SortDescriptor(\.score), SortDescriptor(\.name, comparator: .lexical)],
            [SortDescriptor(\.score, order: .reverse)],
            [SortDescriptor(\.when), SortDescriptor(\.rank, order: .reverse)],
            [SortDescriptor(\.rank, order: .reverse), SortDescriptor(\.score)],
        ]
        // Also the zeros alone, which the sort on the score cannot tell apart: -0 and +0.
        let zeros = #Predicate<Ranked> { $0.score > -1 && $0.score < 1 }
        for predicate in [nil, zeros] {
            for (index, sortBy) in orders.enumerated() {
                let all = try container.newContext().fetch(
                    FetchRequest<Ranked>(predicate: predicate, sortBy: sortBy)
                )
                for limit in [1, 10, 99] {
                    let context = container.newContext()
                    let top = try context.fetch(
                        FetchRequest<Ranked>(
                            predicate: predicate,
                            sortBy: sortBy,
                            fetchLimit: limit
                        )
                    )
                    #expect(
                        top.map(\.objectID) == all.prefix(limit).map(\.objectID),
                        "order \(index), limit \(limit), zeros only: \(predicate != nil)"
                    )
                }
            }
        }
    }
}
