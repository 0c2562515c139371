/// A small, fast random number generator whose sequence depends only on its seed, on every
/// platform and Swift version: xoshiro256** seeded through SplitMix64.
///
/// The standard library's `random(in:using:)` helpers may change how they map bits to values
/// between releases, so seeds use ``nextUnitFloat()`` instead.
///
/// ```swift
/// var generator = SeededGenerator(seed: 7)
/// let noise = generator.nextUnitFloat()  // in [0, 1)
/// ```
///
/// See: Blackman and Vigna, "Scrambled linear pseudorandom number generators" (2018).
public struct SeededGenerator: RandomNumberGenerator, Sendable, Hashable {
    private var state: (UInt64, UInt64, UInt64, UInt64)

    /// Creates a generator from a 64-bit seed; equal seeds give equal sequences.
    public init(seed: UInt64) {
        var splitMix = seed
        func nextSplitMix() -> UInt64 {
            splitMix &+= 0x9E37_79B9_7F4A_7C15
            var z = splitMix
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        state = (nextSplitMix(), nextSplitMix(), nextSplitMix(), nextSplitMix())
    }

    /// Returns the next 64 random bits.
    public mutating func next() -> UInt64 {
        let result = rotateLeft(state.1 &* 5, 7) &* 9
        let shifted = state.1 << 17
        state.2 ^= state.0
        state.3 ^= state.1
        state.1 ^= state.2
        state.0 ^= state.3
        state.2 ^= shifted
        state.3 = rotateLeft(state.3, 45)
        return result
    }

    /// Returns a float uniformly distributed over [0, 1), from the top 24 bits of ``next()``.
    public mutating func nextUnitFloat() -> Float {
        Float(next() >> 40) * 0x1p-24
    }

    /// Returns a float uniformly distributed over [`center` − `spread`, `center` + `spread`).
    public mutating func nextFloat(around center: Float, spread: Float) -> Float {
        center + spread * (2 * nextUnitFloat() - 1)
    }

    private func rotateLeft(_ value: UInt64, _ count: UInt64) -> UInt64 {
        (value << count) | (value >> (64 - count))
    }

    /// Two generators are equal when they will produce the same sequence.
    public static func == (lhs: SeededGenerator, rhs: SeededGenerator) -> Bool {
        lhs.state == rhs.state
    }

    /// Hashes the generator's state.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(state.0)
        hasher.combine(state.1)
        hasher.combine(state.2)
        hasher.combine(state.3)
    }
}
