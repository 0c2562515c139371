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
}
