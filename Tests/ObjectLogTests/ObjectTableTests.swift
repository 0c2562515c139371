import ObjectLogStore
import Testing

@testable import ObjectLog

@Suite("Context registry table")
struct ObjectTableTests {
    @Test(
        "random inserts, replacements and removals agree with a Dictionary",
        arguments: [11, 12, 13] as [UInt64]
    )
    func agreesWithDictionary(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        var table = ObjectTable()
        var reference: [ObjectKey: ManagedObject] = [:]
        for step in 0..<20_000 {
            // Keys from a small range so removals and collisions are frequent.
            let key = ObjectKey.random(in: 1...3_000, using: &generator)
            if Bool.random(using: &generator) {
                let object = Tag()
                table[key] = object
                reference[key] = object
            } else {
                table[key] = nil
                reference[key] = nil
            }
            if step.isMultiple(of: 997) {
                for probe in 1...3_000 as ClosedRange<ObjectKey> {
                    #expect(
                        table[probe] === reference[probe],
                        "seed \(seed) step \(step) key \(probe)"
                    )
                }
            }
        }
        #expect(table.count == reference.count)
        #expect(
            Set(table.allObjects.map(ObjectIdentifier.init))
                == Set(reference.values.map(ObjectIdentifier.init))
        )
    }

    @Test(
        "keys that share their slot bits probe and delete correctly in every order",
        arguments: [21, 22, 23] as [UInt64]
    )
    func collidingKeys(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        var table = ObjectTable()
        var reference: [ObjectKey: ManagedObject] = [:]
        // Keys that differ only above bit 20 share their slot (the table stays far smaller),
        // and a few differ above bit 32, which the slot function folds in: long probe runs.
        let universe: [ObjectKey] = (0..<600).map { index in
            let low = ObjectKey(index % 40)
            let high = ObjectKey(index / 40) << (index.isMultiple(of: 3) ? 33 : 20)
            return 1 + low + high
        }
        for step in 0..<12_000 {
            let key = universe.randomElement(using: &generator) ?? 1
            if Int.random(in: 0..<3, using: &generator) > 0 {
                let object = Tag()
                table[key] = object
                reference[key] = object
            } else {
                table[key] = nil
                reference[key] = nil
            }
            if step.isMultiple(of: 401) {
                for probe in universe {
                    #expect(
                        table[probe] === reference[probe],
                        "seed \(seed) step \(step) key \(probe)"
                    )
                }
            }
        }
        for key in universe.shuffled(using: &generator) {
            table[key] = nil
            reference[key] = nil
            #expect(table.count == reference.count, "seed \(seed)")
            if reference.count.isMultiple(of: 50) {
                for probe in universe {
                    #expect(table[probe] === reference[probe], "seed \(seed) key \(probe)")
                }
            }
        }
    }
}
