/// The original's 8-bit normalised storage: clamp to [0, 1], round to the nearest multiple of
/// 1/255 (ties to even).
///
/// The solver stores a ``Precision/unorm8`` state as one byte per value, the *level* k for the
/// value k/255, as the original's RGBA8 texture did; it computes on the correctly rounded `Float`
/// nearest k/255 and converts back to a level after every step. The kernels
/// (`CReactionDiffusionSupport`) convert whole vectors by the same rules.
enum Unorm8 {
    /// Adding 2²³ to a value in [0, 2²³) rounds it to an integer in the current rounding mode
    /// (round-to-nearest-even), which is then the low bits of the sum's bit pattern.
    static let roundingBias: Float = 8_388_608

    /// Returns the level k in 0...255 whose k/255 is nearest `value` clamped to [0, 1] (ties to
    /// even; NaN gives 0): `round(clamp(value) × 255)`.
    @inline(__always)
    static func level(of value: Float) -> UInt8 {
        // `value > 0` is false for NaN, which therefore becomes 0.
        let positive = value > 0 ? value : 0
        let clamped = positive < 1 ? positive : 1
        let scaled = clamped * 255
        return UInt8(truncatingIfNeeded: (scaled + roundingBias).bitPattern)
    }

    /// Returns k/255 correctly rounded, for the level `k`.
    ///
    /// `1/255 ≈ h + l` with h = 0x1.01p-8 (nine significant bits, so k·h is exact for every
    /// level) and l the float nearest the rest: the rounded sum is the float nearest k/255 for
    /// every k, which the tests check for all 256 levels, without a division or a fused
    /// multiply-add (which a baseline x86-64 lacks).
    @inline(__always)
    static func value(ofLevel level: UInt8) -> Float {
        let k = Float(level)
        return k * 0x1.01p-8 + k * 0x1.010102p-24
    }
}
