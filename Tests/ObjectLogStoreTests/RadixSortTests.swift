import TestSupport
import Testing

@testable import ObjectLogStore

@Suite("Radix sort")
struct RadixSortTests {
    @Test(
        "sorts like the standard library, whatever the count and the keys' width",
        arguments: [0, 1, 2, 255, 256, 257, 5000, 70_000]
    )
    func sortsLikeStandardLibrary(count: Int) {
        var generator = SeededGenerator(seed: UInt64(count))
        for bound in [UInt64(1), 2, 2048, 1 << 22, 1 << 40, .max] {
            var keys = (0..<count).map { _ in UInt64.random(in: 0...bound, using: &generator) }
            let expected = keys.sorted()
            RadixSort.sort(&keys) { $0 }
            #expect(keys == expected, "count \(count), keys up to \(bound)")
        }
    }

    @Test("keeps the order of equal keys", arguments: [100, 10_000])
    func isStable(count: Int) {
        var generator = SeededGenerator(seed: 99)
        var pairs = (0..<count).map { index in
            (key: UInt64.random(in: 0..<50, using: &generator) << 20, index: index)
        }
        RadixSort.sort(&pairs) { $0.key }
        for (left, right) in zip(pairs, pairs.dropFirst()) {
            #expect(left.key < right.key || (left.key == right.key && left.index < right.index))
        }
    }

    @Test("the keydir's sorted entries and live keys come out in key order")
    func keydirOrder() {
        var directory = KeyDirectory()
        var generator = SeededGenerator(seed: 5)
        var keys = Set<UInt64>()
        while keys.count < 20_000 {
            keys.insert(UInt64.random(in: 1...1_000_000, using: &generator))
        }
        for key in keys {
            directory.updateValue(
                RecordLocation(entity: 1, offset: key * 3, length: 9),
                forKey: key
            )
        }
        let entries = directory.sortedEntries()
        #expect(entries.map(\.key) == keys.sorted())
        #expect(entries.allSatisfy { $0.location.offset == $0.key * 3 })
    }
}
