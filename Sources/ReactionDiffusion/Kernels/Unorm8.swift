/// The original's 8-bit normalised storage: clamp to [0, 1], round to the nearest multiple of
/// 1/255 (ties to even).
enum Unorm8 {
    /// Returns `value` clamped and rounded to `k / 255` for an integer `k` in 0...255; the result
    /// is the correctly rounded `Float` nearest `k / 255`.
    @inline(__always)
    static func quantize<V: FloatLanes>(_ value: V) -> V {
        let scaled = value.clampedToUnitInterval() * V(broadcast: 255)
        // Adding 2²³ to a value in [0, 2²³) and subtracting it again rounds the value to an
        // integer in the current rounding mode (round-to-nearest-even) with plain arithmetic
        // that vectorises on any x86-64, where `rounded(.toNearestOrEven)` needs SSE4.1.
        let bias = V(broadcast: 8_388_608)
        return fromInteger((scaled + bias) - bias)
    }

    /// Returns `k / 255` correctly rounded, for `k` holding integers in 0...255, without dividing.
    ///
    /// `k / 255 = 257k · (2⁻¹⁶ + 2⁻³² + 2⁻⁴⁸ + …)`. The three products below are exact (257k has at
    /// most 16 significant bits), so the sum is rounded once; the missing tail is below 2⁻⁴⁸ and,
    /// as the test over all 256 values shows, never moves the result. Multiplying by 1/255 instead
    /// would be wrong for 126 of the 256 values, and a division costs several times more.
    @inline(__always)
    static func fromInteger<V: FloatLanes>(_ k: V) -> V {
        k * V(broadcast: 257 * 0x1p-16)
            + (k * V(broadcast: 257 * 0x1p-32) + k * V(broadcast: 257 * 0x1p-48))
    }
}

/// What happens to each newly computed value before it is stored.
protocol StoragePrecision {
    /// Returns `value` as the state stores it.
    static func store<V: FloatLanes>(_ value: V) -> V
}

/// ``Precision/float32``: values are stored as computed.
enum Float32Storage: StoragePrecision {
    @inline(__always)
    static func store<V: FloatLanes>(_ value: V) -> V { value }
}

/// ``Precision/unorm8``: values are clamped and rounded to k/255.
enum Unorm8Storage: StoragePrecision {
    @inline(__always)
    static func store<V: FloatLanes>(_ value: V) -> V { Unorm8.quantize(value) }
}
