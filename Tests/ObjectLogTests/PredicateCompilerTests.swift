import Foundation
import TestSupport
import Testing

@testable import ObjectLog

@Suite("Compiled predicates")
struct PredicateCompilerTests {
    @Test("compiled predicates agree with Foundation's evaluation; others are left to Foundation")
    func agreement() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let context = container.newContext()
        let entity = try #require(container.model.entity(for: Configuration.self))
        var generator = SeededGenerator(seed: 5)
        let objects = (0..<200).map { index in
            let configuration = Configuration(context: context)
            configuration.name = ["a", "b", "c"][index % 3]
            configuration.feed = Double(Int.random(in: 0..<10, using: &generator)) / 10
            configuration.width = Int32.random(in: -5...5, using: &generator)
            configuration.isFavorite = Bool.random(using: &generator)
            configuration.notes = index.isMultiple(of: 4) ? nil : "n\(index % 3)"
            configuration.timestep = Float(index % 7)
            return configuration
        }
        let limit = 0.5
        let negative: Int32 = -1
        let least = Int32.min
        let compiled: [Predicate<Configuration>] = [
            #Predicate { $0.feed < limit },
            #Predicate { $0.feed >= 0.3 && $0.width != 2 },
            #Predicate { $0.width <= negative || $0.isFavorite == true },
            #Predicate { !($0.name == "b") },
            #Predicate { $0.notes == nil },
            #Predicate { $0.notes != "n1" && $0.timestep > 2 },
            #Predicate { 3 > $0.width },
            // Negative literals.
            #Predicate { $0.width <= -1 },
            #Predicate { $0.width > -3 || $0.feed > -0.5 },
            // Text: a string attribute's contains and starts(with:) a constant.
            #Predicate { $0.name.starts(with: "a") },
            #Predicate { $0.name.contains("b") && $0.width > 1 },
        ]
        for predicate in compiled {
            let fast = try #require(PredicateCompiler.compile(predicate, entity: entity))
            for object in objects {
                #expect(fast(object) == (try predicate.evaluate(object)))
            }
            let request = FetchRequest<Configuration>(predicate: predicate)
            #expect(
                try context.count(request) == objects.filter { try predicate.evaluate($0) }.count
            )
        }
        let uncompiled: [Predicate<Configuration>] = [
            #Predicate { $0.doubledFeed > 1 },
            #Predicate { $0.feed * 2 > 1 },
            #Predicate { $0.snapshots.isEmpty },
            // The negation of an attribute, and of the least integer (which overflows).
            #Predicate { -$0.width > 2 },
            #Predicate { $0.width > -least },
        ]
        for predicate in uncompiled {
            #expect(PredicateCompiler.compile(predicate, entity: entity) == nil)
        }
    }

    @Test("a key path is compiled only if it reads and writes one attribute unchanged")
    func forwardingKeyPaths() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let context = container.newContext()
        let entity = try #require(container.model.entity(for: Configuration.self))
        let objects = ["b", "A", "c", "B", "a"].enumerated().map { index, name in
            let configuration = Configuration(context: context)
            configuration.name = name
            configuration.width = Int32(index) - 2
            return configuration
        }
        let forwarding = #Predicate<Configuration> { $0.alias == "b" }
        let fast = try #require(PredicateCompiler.compile(forwarding, entity: entity))
        for object in objects { #expect(fast(object) == (try forwarding.evaluate(object))) }
        let transforming: [Predicate<Configuration>] = [
            #Predicate { $0.shoutedName == "B" },
            #Predicate { $0.clampedWidth > 0 },
        ]
        for predicate in transforming {
            #expect(PredicateCompiler.compile(predicate, entity: entity) == nil)
            // Foundation evaluates them as written, so the fetch counts what they mean.
            #expect(
                try context.count(FetchRequest(predicate: predicate))
                    == objects.filter { try predicate.evaluate($0) }.count
            )
        }
        // Direct comparisons of strings are the lexical ones.
        #expect(
            context.comparator(SortDescriptor(\Configuration.alias, comparator: .lexical)).isDirect
        )
        #expect(
            !context.comparator(SortDescriptor(\Configuration.shoutedName, comparator: .lexical))
                .isDirect
        )
        #expect(!context.comparator(SortDescriptor(\Configuration.clampedWidth)).isDirect)
        let order = [SortDescriptor(\Configuration.shoutedName), SortDescriptor(\.name)]
        let byShouted = try context.fetch(FetchRequest<Configuration>(sortBy: order))
        #expect(byShouted.map(\.name) == objects.sorted(using: order).map(\.name))
    }

    @Test(
        "a fetch from the store tests only the predicate's attributes, then decodes matches whole"
    )
    func partialDecoding() throws {
        let directory = TemporaryDirectory()
        let container = try makeContainer(directory)
        let entity = try #require(container.model.entity(for: Configuration.self))
        let reads = try #require(
            PredicateCompiler.compileWithReads(
                #Predicate<Configuration> { $0.width < 0 && $0.isFavorite == true },
                entity: entity
            )?.reads
        )
        #expect(
            reads.indices.filter { reads[$0] }.map { entity.accessors[$0].name }.sorted() == [
                "isFavorite", "width",
            ]
        )
        // Objects with every kind of property before and after the tested ones: strings, an
        // optional URL, JSON, inline and external data, relationships.
        var generator = SeededGenerator(seed: 9)
        struct Expected: Equatable {
            var name: String, width: Int32, isFavorite: Bool, notes: String?, thumbnail: Int
            var render: RenderSettings, snapshots: Int
        }
        var expected: [Expected] = []
        do {
            let context = container.newContext()
            for index in 0..<120 {
                let configuration = Configuration(context: context)
                configuration.name = "c\(index)"
                configuration.width = Int32.random(in: -3...3, using: &generator)
                configuration.isFavorite = Bool.random(using: &generator)
                configuration.notes = index.isMultiple(of: 3) ? nil : "note \(index)"
                configuration.homepage = URL(string: "https://example.com/\(index)")
                configuration.render.palette = "p\(index % 4)"
                let size = [0, 100, 20_000][index % 3]
                configuration.thumbnail =
                    size == 0 ? nil : Data(repeating: UInt8(index), count: size)
                insertSnapshots(index % 3, of: configuration, into: context)
                expected.append(
                    Expected(
                        name: configuration.name,
                        width: configuration.width,
                        isFavorite: configuration.isFavorite,
                        notes: configuration.notes,
                        thumbnail: size,
                        render: configuration.render,
                        snapshots: index % 3
                    )
                )
            }
            try context.save()
        }
        let predicates: [(Predicate<Configuration>, (Expected) -> Bool)] = [
            (
                #Predicate { $0.width < 0 && $0.isFavorite == true },
                { $0.width < 0 && $0.isFavorite }
            ),
            (#Predicate { $0.notes == nil || $0.width == 2 }, { $0.notes == nil || $0.width == 2 }),
            (#Predicate { $0.isFavorite != true }, { !$0.isFavorite }),
        ]
        for (predicate, matches) in predicates {
            // A fresh context each time (kept alive while its objects' relationships are read),
            // so every object comes from the store.
            let context = container.newContext()
            let fetched = try context.fetch(FetchRequest<Configuration>(predicate: predicate))
            let found = fetched.map { configuration in
                Expected(
                    name: configuration.name,
                    width: configuration.width,
                    isFavorite: configuration.isFavorite,
                    notes: configuration.notes,
                    thumbnail: configuration.thumbnail?.count ?? 0,
                    render: configuration.render,
                    snapshots: configuration.snapshots.count
                )
            }
            #expect(
                found.sorted { $0.name < $1.name }
                    == expected.filter(matches).sorted { $0.name < $1.name }
            )
        }
    }
}
