import TestSupport
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

    /// Random inserts, updates and removals against a `Dictionary` model.
    ///
    /// `keySpace` bounds the number of keys and `reserved` the up-front capacity. With a
    /// `stride` of 1 the keys are consecutive, and their range grows as the steps go on, as
    /// stores hand keys out: the directory stays dense. With a larger stride they are spread
    /// out, and it becomes a hash table.
    @Test(
        "matches a Dictionary under random updates and removals, for small, grown and large mapped tables, dense and hashed",
        arguments: [
            (keySpace: 300, reserved: 0, stride: 1), (keySpace: 5_000, reserved: 0, stride: 1),
            (keySpace: 2_000, reserved: 777, stride: 1),
            (keySpace: 60_000, reserved: 60_000, stride: 1),
            (keySpace: 300, reserved: 0, stride: 97), (keySpace: 5_000, reserved: 0, stride: 97),
            (keySpace: 2_000, reserved: 777, stride: 97),
            (keySpace: 60_000, reserved: 60_000, stride: 97),
        ]
    )
    func matchesDictionary(keySpace: Int, reserved: Int, stride: Int) {
        var generator = SeededGenerator(seed: UInt64(keySpace))
        var directory = KeyDirectory()
        directory.reserveCapacity(reserved)
        var model: [ObjectKey: RecordLocation] = [:]
        var copies: [(KeyDirectory, [ObjectKey: RecordLocation])] = []
        for step in 0..<(keySpace * 3) {
            let key =
                ObjectKey.random(in: 1...ObjectKey(min(keySpace, step / 2 + 64)), using: &generator)
                * ObjectKey(stride)
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
            // Every key that may be live, and with a stride the key below each (never live).
            for base in 1...ObjectKey(keySpace + 1) {
                for key in Set([base * ObjectKey(stride), base * ObjectKey(stride) - 1]) {
                    #expect(directory[key] == model[key], "key \(key)")
                }
            }
            let sorted = directory.sortedEntries()
            #expect(sorted.map(\.key) == model.keys.sorted())
            #expect(sorted.allSatisfy { model[$0.key] == $0.location })
        }
        check(directory, model)
        for (copy, copyModel) in copies { check(copy, copyModel) }
        #expect(directory.isDense == (stride == 1))
    }

    private func location(_ key: ObjectKey) -> RecordLocation {
        RecordLocation(
            entity: EntityTag(key % 3 + 1),
            offset: key * 40,
            length: UInt32(key % 50 + 9)
        )
    }

    @Test(
        "a key far beyond the dense range turns the directory into a hash table, copies unchanged"
    )
    func farKeyTurnsHashed() {
        var directory = KeyDirectory(minimumCapacity: 1_000)
        for key in 1...1_000 as ClosedRange<ObjectKey> {
            directory.insertUnique(key, location(key))
        }
        #expect(directory.isDense)
        // Growing within reach of the range keeps it dense (one in two keys live).
        directory.updateValue(location(1_500), forKey: 1_500)
        #expect(directory.isDense)
        let before = directory
        directory.updateValue(location(1 << 40), forKey: 1 << 40)
        #expect(!directory.isDense)
        #expect(before.isDense)
        #expect(directory.count == 1_002)
        #expect(before.count == 1_001)
        #expect(before[1 << 40] == nil)
        for key in [1, 500, 1_000, 1_500, 1 << 40] as [ObjectKey] {
            #expect(directory[key] == location(key))
        }
        #expect(directory[1_001] == nil)
        #expect(directory.sortedEntries().map(\.key) == Array(1...1_000) + [1_500, 1 << 40])
        // Keys that do not exist are not removed, in either form.
        #expect(directory.removeValue(forKey: 1_001) == nil)
        #expect(directory.removeValue(forKey: 1_500) == location(1_500))
        #expect(directory.count == 1_001)
    }

    @Test("a dense directory takes 16 bytes a key, and a location of one byte is live")
    func denseSlotSize() {
        #expect(KeyDirectory.denseBytesPerKey == 16)
        var directory = KeyDirectory(minimumCapacity: 100)
        let short = RecordLocation(entity: 7, offset: 0, length: 1)
        #expect(directory.updateValue(short, forKey: 1) == nil)
        #expect(directory.isDense)
        #expect(directory[1] == short)
        #expect(directory[2] == nil)
        #expect(directory.count == 1)
        #expect(directory.removeValue(forKey: 1) == short)
        #expect(directory[1] == nil)
        #expect(directory.count == 0)
    }

    @Test("a run of dense updates sets what updateValue sets, and only where there is room")
    func denseUpdates() {
        var random = SeededGenerator(seed: 0xDE45E)
        var directory = KeyDirectory(minimumCapacity: 1_000)
        var model = KeyDirectory(minimumCapacity: 1_000)
        for key in stride(from: 1, through: 800, by: 2) as StrideThrough<ObjectKey> {
            directory.updateValue(location(key), forKey: key)
            model.updateValue(location(key), forKey: key)
        }
        let shared = directory
        // Updates of live keys and new ones, some twice, up to the directory's room.
        let keys = (0..<2_000).map { _ in ObjectKey.random(in: 1...1_000, using: &random) }
        var returned: [RecordLocation?] = []
        let updated = directory.updatingDense(through: keys.max()!) { dense in
            for (index, key) in keys.enumerated() {
                dense.prefetch(key)
                returned.append(
                    dense.updateValue(
                        RecordLocation(entity: 2, offset: UInt64(index), length: 9),
                        forKey: key
                    )
                )
            }
        }
        #expect(updated)
        var expected: [RecordLocation?] = []
        for (index, key) in keys.enumerated() {
            expected.append(
                model.updateValue(
                    RecordLocation(entity: 2, offset: UInt64(index), length: 9),
                    forKey: key
                )
            )
        }
        #expect(returned == expected)
        #expect(directory.count == model.count)
        #expect(directory.sortedEntries().elementsEqual(model.sortedEntries()) { $0 == $1 })
        // The copy taken before is untouched, and keys past the room are left to updateValue.
        #expect(shared.count == 400 && shared[2] == nil && shared[1] == location(1))
        #expect(!directory.updatingDense(through: ObjectKey(directory.capacity + 1)) { _ in })
        var hashed = KeyDirectory(minimumCapacity: 16)
        hashed.updateValue(location(1 << 40), forKey: 1 << 40)
        #expect(!hashed.isDense)
        #expect(!hashed.updatingDense(through: 1) { _ in })
    }

    @Test("removing most keys of a large dense directory keeps the rest in a hash table")
    func removalsTurnHashed() {
        var directory = KeyDirectory(minimumCapacity: 100_000)
        for key in 1...100_000 as ClosedRange<ObjectKey> {
            directory.insertUnique(key, location(key))
        }
        let copy = directory
        var wrong: [ObjectKey] = []
        for key in 1...100_000 as ClosedRange<ObjectKey> where key % 10 != 0 {
            if directory.removeValue(forKey: key) != location(key) { wrong.append(key) }
        }
        #expect(wrong.isEmpty)
        #expect(!directory.isDense)
        #expect(directory.count == 10_000)
        #expect(copy.isDense)
        #expect(copy.count == 100_000)
        for key in stride(from: 1, through: 100_000, by: 7) as StrideThrough<ObjectKey> {
            if directory[key] != (key % 10 == 0 ? location(key) : nil) { wrong.append(key) }
            if copy[key] != location(key) { wrong.append(key) }
        }
        #expect(wrong.isEmpty)
        var visited: [ObjectKey] = []
        directory.forEachEntry { key, found in
            if found == location(key) { visited.append(key) }
        }
        #expect(visited.sorted() == Array(stride(from: 10, through: 100_000, by: 10)))
    }

    @Test(
        "a directory starts dense, lists its entries in key order, and reads ahead without a hash"
    )
    func denseBasics() {
        var directory = KeyDirectory()
        #expect(directory.isDense)
        for key in [5, 3, 9, 1] as [ObjectKey] { directory.updateValue(location(key), forKey: key) }
        var keys: [ObjectKey] = []
        directory.forEachEntry { key, _ in keys.append(key) }
        #expect(keys == [1, 3, 5, 9])
        #expect(directory.keyAtHome(of: 3) == 3)
        #expect(directory.keyAtHome(of: 4) == 0)
        #expect(directory.keyAtHome(of: 0) == 0)
        #expect(directory[0] == nil)
        #expect(directory.removeValue(forKey: 0) == nil)
        #expect(directory.count == 4)
    }
}
