import ObjectLogStore
import TestSupport
import Testing

@testable import ObjectLog

@Suite("Context registry table")
struct ObjectTableTests {
    /// Gives `key` a new object in both the table and the reference, or removes it from both.
    private func update(
        _ table: ObjectTable,
        _ reference: inout [ObjectKey: ManagedObject],
        key: ObjectKey,
        inserting: Bool
    ) {
        if inserting {
            let object = Tag()
            table[key] = object
            reference[key] = object
        } else {
            table[key] = nil
            reference[key] = nil
        }
    }

    /// Checks that the table holds the reference's object (or nothing) at each of `probes`.
    private func expectAgreement(
        _ table: ObjectTable,
        _ reference: [ObjectKey: ManagedObject],
        at probes: some Sequence<ObjectKey>,
        _ label: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        for probe in probes {
            #expect(
                table[probe] === reference[probe],
                "\(label) key \(probe)",
                sourceLocation: sourceLocation
            )
        }
    }

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
            update(table, &reference, key: key, inserting: Bool.random(using: &generator))
            if step.isMultiple(of: 997) {
                expectAgreement(
                    table,
                    reference,
                    at: 1...3_000 as ClosedRange<ObjectKey>,
                    "seed \(seed) step \(step)"
                )
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
            let inserting = Int.random(in: 0..<3, using: &generator) > 0
            update(table, &reference, key: key, inserting: inserting)
            if step.isMultiple(of: 401) {
                expectAgreement(table, reference, at: universe, "seed \(seed) step \(step)")
            }
        }
        for key in universe.shuffled(using: &generator) {
            table[key] = nil
            reference[key] = nil
            #expect(table.count == reference.count, "seed \(seed)")
            if reference.count.isMultiple(of: 50) {
                expectAgreement(table, reference, at: universe, "seed \(seed)")
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
