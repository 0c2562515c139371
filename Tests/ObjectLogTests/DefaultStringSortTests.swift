import Foundation
import StoreTestSupport
import TestSupport
import Testing

@testable import ObjectLog

@Suite("Default string sort")
struct DefaultStringSortTests {
    /// A random string mixing the cases, digit runs, punctuation, spaces and (now and then)
    /// non-ASCII characters; with `decomposed`, also an "e" followed by a combining acute.
    static func randomString(using generator: inout SeededGenerator, decomposed: Bool) -> String {
        let pieces = [
            "a", "A", "b", "B", "z", "Z", "file", "File", "FILE", "2", "10", "002", "9", "0",
            "-", "_", ".", " ", "~", "!", "(", "é", "É", "ß", "日", "e\u{301}",
        ]
        let used = decomposed ? pieces.count : pieces.count - 1
        let count = Int.random(in: 0...5, using: &generator)
        return (0..<count).map { _ in
            let index = Int.random(in: 0..<used, using: &generator)
            // Non-ASCII pieces a quarter as often as ASCII ones.
            if index >= 21, Bool.random(using: &generator) { return pieces[index % 21] }
            return pieces[index]
        }.joined()
    }

    @Test("the standard library orders decomposed and precomposed accents intransitively")
    func decomposedOrderIsIntransitive() {
        // Why the fetches below use no decomposed accents: with them, `String`'s `<` (which
        // Foundation's comparison follows) is not a strict weak order on Linux, so no sorted
        // order exists for a full sort and a limited fetch to agree on. If this starts
        // failing, the standard library is fixed and the fetches may use them again.
        let (decomposed, between, precomposed) = ("e\u{301}", "\u{e9}-\u{df}\u{65e5}", "\u{e9}b")
        #expect(decomposed < between && between < precomposed)
        #expect(!(decomposed < precomposed))
    }

    @Test(
        "the default order's fast path agrees with Foundation's SortDescriptor.compare",
        arguments: TestStoreKind.available
    )
    func agreesWithFoundation(kind: TestStoreKind) throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        var generator = SeededGenerator(seed: seed)
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        func makeObjects(decomposed: Bool) -> [Configuration] {
            var objects: [Configuration] = []
            for index in 0..<400 {
                let configuration = Configuration(context: context)
                configuration.name = "c\(index)"
                // Every tenth equals its predecessor but for case.
                configuration.model =
                    index.isMultiple(of: 10) && index > 0
                    ? objects[index - 1].model.uppercased()
                    : Self.randomString(using: &generator, decomposed: decomposed)
                configuration.width = Int32.random(in: 0..<3, using: &generator)
                objects.append(configuration)
            }
            return objects
        }
        // On this platform the default order of a string key path is `String`'s own; the
        // comparison below is against Foundation whichever it is. Pair by pair, decomposed
        // accents too.
        let ascending = SortDescriptor(\Configuration.model)
        let descending = SortDescriptor(\Configuration.model, order: .reverse)
        var objects = makeObjects(decomposed: true)
        try context.save()
        for descriptor in [ascending, descending] {
            let fast = context.comparator(descriptor)
            #expect(fast.isDirect)
            for lhs in objects {
                for rhs in objects.prefix(100) {
                    let fastOrder = fast.compare(lhs, rhs)
                    let foundation = descriptor.compare(lhs, rhs)
                    #expect(
                        fastOrder == foundation,
                        "seed \(seed): \(lhs.model.debugDescription) vs \(rhs.model.debugDescription)"
                    )
                }
            }
        }
        // Whole fetches, with and without a small limit (the best-kept path), and with a
        // second descriptor, order as Foundation's comparison does (then by key): of objects
        // without decomposed accents, whose order is a strict weak one (see above).
        for object in objects { context.delete(object) }
        objects = makeObjects(decomposed: false)
        try context.save()
        let sets: [[SortDescriptor<Configuration>]] = [
            [ascending], [descending], [SortDescriptor(\.width), ascending],
            [descending, SortDescriptor(\.width, order: .reverse)],
        ]
        for descriptors in sets {
            func foundationLess(_ lhs: Configuration, _ rhs: Configuration) -> Bool {
                for descriptor in descriptors {
                    switch descriptor.compare(lhs, rhs) {
                    case .orderedAscending: return true
                    case .orderedDescending: return false
                    case .orderedSame: continue
                    }
                }
                // Ties keep equal models together whatever their order.
                return false
            }
            let expected = objects.sorted(by: foundationLess).map(\.model)
            let reader = container.newContext()
            let all = try reader.fetch(FetchRequest<Configuration>(sortBy: descriptors))
            #expect(all.map(\.model) == expected, "seed \(seed)")
            let top = try reader.fetch(
                FetchRequest<Configuration>(sortBy: descriptors, fetchLimit: 7)
            )
            #expect(top.map(\.model) == Array(expected.prefix(7)), "seed \(seed)")
        }
    }
}
