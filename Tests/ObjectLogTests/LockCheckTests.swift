import Testing

@testable import ObjectLog

@Suite("Optimistic-locking checks of objects that keep 32 bits of the file generation")
struct LockCheckTests {
    /// A check of an object loaded in the generation whose low 32 bits are `bits`.
    private func check(generationBits bits: UInt32) -> PersistentStoreCoordinator.LockCheck {
        .init(key: 1, expectedOffset: 64, offsetBound: 0, generation: bits)
    }

    @Test("the full generation is the nearest one at or below the current with the same low bits")
    func fullGeneration() {
        #expect(check(generationBits: 7).fullGeneration(current: 7) == 7)
        #expect(check(generationBits: 4).fullGeneration(current: 7) == 4)
        let wrapped: UInt64 = 1 << 32
        #expect(
            check(generationBits: .max).fullGeneration(current: wrapped + 2) == wrapped - 1,
            "a compaction count that crosses 2^32 is still told apart"
        )
        #expect(
            check(generationBits: 2).fullGeneration(current: 5 * wrapped + 9) == 5 * wrapped + 2
        )
        #expect(
            check(generationBits: 10).fullGeneration(current: 5) == nil,
            "a generation after the current one cannot be an object's"
        )
    }
}
