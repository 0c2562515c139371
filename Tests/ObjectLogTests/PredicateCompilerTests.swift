import Foundation
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
        let compiled: [Predicate<Configuration>] = [
            #Predicate { $0.feed < limit },
            #Predicate { $0.feed >= 0.3 && $0.width != 2 },
            #Predicate { $0.width <= negative || $0.isFavorite == true },
            #Predicate { !($0.name == "b") },
            #Predicate { $0.notes == nil },
            #Predicate { $0.notes != "n1" && $0.timestep > 2 },
            #Predicate { 3 > $0.width },
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
            #Predicate { $0.name.starts(with: "a") },
            #Predicate { $0.doubledFeed > 1 },
            #Predicate { $0.feed * 2 > 1 },
            #Predicate { $0.snapshots.isEmpty },
            #Predicate { $0.width <= -1 },
        ]
        for predicate in uncompiled {
            #expect(PredicateCompiler.compile(predicate, entity: entity) == nil)
        }
    }
}
