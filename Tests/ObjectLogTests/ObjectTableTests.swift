import ObjectLogStore
import TestSupport
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
        let table = ObjectTable()
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
        let table = ObjectTable()
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

    @Test(
        "the table owns its objects: it keeps them alive and releases them when replaced, removed, grown past or freed"
    )
    func ownership() {
        weak var replaced: Tag?
        weak var removed: Tag?
        weak var cleared: Tag?
        weak var kept: Tag?
        var table: ObjectTable? = ObjectTable()
        do {
            let first = Tag()
            let second = Tag()
            let third = Tag()
            let fourth = Tag()
            replaced = first
            removed = second
            cleared = third
            kept = fourth
            table?[1] = first
            table?[2] = second
            table?[3] = fourth
            table?[1] = third
        }
        #expect(replaced == nil)
        #expect(cleared != nil && removed != nil && kept != nil)
        table?[2] = nil
        #expect(removed == nil)
        // Growing moves the references: the objects stay alive and findable.
        table?.reserveCapacity(10_000)
        for key in 10...5_000 as ClosedRange<ObjectKey> { table?[key] = Tag() }
        #expect(table?[1] === cleared && table?[3] === kept)
        #expect(table?.count == 2 + 4_991)
        table?.removeAll()
        #expect(cleared == nil && kept == nil && table?.count == 0)
        let last = Tag()
        weak let lastReference = last
        table?[7] = last
        _ = consume last
        #expect(lastReference != nil)
        table = nil
        #expect(lastReference == nil)
    }
}
