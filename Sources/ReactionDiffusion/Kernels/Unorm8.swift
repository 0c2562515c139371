/// The original's 8-bit normalised storage: clamp to [0, 1], round to the nearest multiple of
/// 1/255 (ties to even).
enum Unorm8 {
    /// 2²³: adding it to a value in [0, 2²³) and subtracting it again rounds the value to an
    /// integer in the current rounding mode (round-to-nearest-even), with plain SSE2 arithmetic
    /// that vectorises, where `rounded(.toNearestOrEven)` would need SSE4.1.
    @usableFromInline static let roundingBias: Float = 8_388_608

    /// Returns `value` clamped and rounded to `k / 255` for an integer `k` in 0...255; the result
    /// is the correctly rounded `Float` nearest `k / 255`.
    @inline(__always)
    static func quantize<V: FloatLanes>(_ value: V) -> V {
        let scaled = value.clampedToUnitInterval() * V(broadcast: 255)
        let bias = V(broadcast: roundingBias)
        // Division, not multiplication by 1/255, which differs from k/255 for 126 of the 256 k.
        return ((scaled + bias) - bias) / V(broadcast: 255)
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
