import Testing

@testable import ObjectLogStore

@Suite("Key directory")
struct KeyDirectoryTests {
    @Test("reserving room for one more key at a time grows the table geometrically")
    func reserveOneAtATime() {
        var directory = KeyDirectory(minimumCapacity: 3_000)
        func location(_ key: ObjectKey) -> RecordLocation {
            RecordLocation(entity: 1, offset: key * 50, length: 50)
        }
        for key in 1...3_000 as ClosedRange<ObjectKey> {
            directory.updateValue(location(key), forKey: key)
        }
        // As a store's commits do for a save of one insert each.
        var capacities: Set<Int> = [directory.capacity]
        for key in 3_001...9_000 as ClosedRange<ObjectKey> {
            directory.reserveCapacity(directory.count + 1)
            directory.updateValue(location(key), forKey: key)
            capacities.insert(directory.capacity)
        }
        #expect(directory.count == 9_000)
        #expect(capacities.count <= 3, "the table was copied \(capacities.count - 1) times")
        for key in [1, 3_000, 3_001, 9_000] as [ObjectKey] {
            #expect(directory[key] == location(key))
        }
    }

    /// Random inserts, updates and removals against a `Dictionary` model; `keySpace` bounds the
    /// keys (consecutive, as stores hand them out) and `reserved` the up-front capacity.
    @Test(
        "matches a Dictionary under random updates and removals, for small, grown and large mapped tables",
        arguments: [
            (keySpace: 300, reserved: 0), (keySpace: 5_000, reserved: 0),
            (keySpace: 2_000, reserved: 777), (keySpace: 60_000, reserved: 60_000),
        ]
    )
    func matchesDictionary(keySpace: Int, reserved: Int) {
        var generator = SeededGenerator(seed: UInt64(keySpace))
        var directory = KeyDirectory()
        directory.reserveCapacity(reserved)
        var model: [ObjectKey: RecordLocation] = [:]
        var copies: [(KeyDirectory, [ObjectKey: RecordLocation])] = []
        for step in 0..<(keySpace * 3) {
            let key = ObjectKey.random(in: 1...ObjectKey(keySpace), using: &generator)
            if Int.random(in: 0..<4, using: &generator) == 0 {
                #expect(directory.removeValue(forKey: key) == model.removeValue(forKey: key))
            } else {
                let location = RecordLocation(
                    entity: EntityTag.random(in: 1...5, using: &generator),
                    offset: UInt64(step),
                    length: UInt32.random(in: 9...100, using: &generator)
                )
                #expect(
                    directory.updateValue(location, forKey: key)
                        == model.updateValue(location, forKey: key)
                )
            }
            // A few copies taken along the way must not see later changes.
            if step % (keySpace / 2) == 0 { copies.append((directory, model)) }
        }
        func check(_ directory: KeyDirectory, _ model: [ObjectKey: RecordLocation]) {
            #expect(directory.count == model.count)
            for key in 1...ObjectKey(keySpace + 1) {
                #expect(directory[key] == model[key], "key \(key)")
            }
            let sorted = directory.sortedEntries()
            #expect(sorted.map(\.key) == model.keys.sorted())
            #expect(sorted.allSatisfy { model[$0.key] == $0.location })
        }
        check(directory, model)
        for (copy, copyModel) in copies { check(copy, copyModel) }
    }
}
