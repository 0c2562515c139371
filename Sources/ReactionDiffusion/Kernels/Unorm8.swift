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
    /// `1/255 = c₁ + c₂`, with `c₁` the float nearest 1/255 and `c₂` the float nearest the rest.
    /// `k·c₂ + k·c₁` fused is within 2⁻⁴⁰ of k/255, and k/255 (whose binary digits repeat k's
    /// eight bits) is never that close to a rounding tie, so the result is correctly rounded; the
    /// test over all 256 values checks it. Multiplying by 1/255 alone would be wrong for 126 of
    /// the 256 values, and a division costs several times more.
    @inline(__always)
    static func fromInteger<V: FloatLanes>(_ k: V) -> V {
        (k * V(broadcast: -0x1.fdfdfep-33)).addingProduct(k, V(broadcast: 0x1.010102p-8))
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
