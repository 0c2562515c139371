import CReactionDiffusionSupport

/// The original's 8-bit normalised storage: clamp to [0, 1], round to the nearest multiple of
/// 1/255 (ties to even).
///
/// The solver stores a ``Precision/unorm8`` state as one byte per value, the *level* k for the
/// value k/255, as the original's RGBA8 texture did; it computes on the correctly rounded `Float`
/// nearest k/255 and converts back to a level after every step.
enum Unorm8 {
    /// Adding 2²³ to a value in [0, 2²³) rounds it to an integer in the current rounding mode
    /// (round-to-nearest-even), which is then the low bits of the sum's bit pattern: plain
    /// arithmetic that vectorises on any x86-64, where `rounded(.toNearestOrEven)` needs SSE4.1.
    static let roundingBias: Float = 8_388_608

    /// Returns `value` clamped and rounded to `k / 255` for an integer `k` in 0...255; the result
    /// is the correctly rounded `Float` nearest `k / 255`.
    @inline(__always)
    static func quantize(_ value: Float) -> Float {
        self.value(ofLevel: level(of: value))
    }

    /// Returns the level k in 0...255 whose k/255 is nearest `value` clamped to [0, 1] (ties to
    /// even; NaN gives 0): `round(clamp(value) × 255)`.
    @inline(__always)
    static func level(of value: Float) -> UInt8 {
        let scaled = value.clampedToUnitInterval() * 255
        return UInt8(truncatingIfNeeded: (scaled + roundingBias).bitPattern)
    }

    /// The levels of 16 values, lane by lane exactly as ``level(of:)``.
    ///
    /// `rd_levels` (`CReactionDiffusionSupport`): with AVX-512, four vector operations ending
    /// in a saturating narrowing (`vpmovusdb`), which Swift has no way to ask for; the same rule
    /// in Swift, however written, came out as six to eight (LLVM turns the clamps into compares
    /// and masks of the narrowing), which cost the ``Precision/unorm8`` step about a tenth of its
    /// speed. Elsewhere a portable lane-by-lane loop. The exhaustive test of
    /// `Field.quantizedToUnorm8()` checks every input against the rule.
    @_transparent  // See `LevelRowStepper.store(_:to:)`.
    static func levels(of values: FloatVector) -> LevelVector {
        rd_levels(values)
    }

    /// Returns k/255 correctly rounded, for the level `k`.
    @inline(__always)
    static func value(ofLevel k: UInt8) -> Float {
        fromInteger(Float(k))
    }

    /// The values of 16 levels, lane by lane exactly as ``value(ofLevel:)``.
    ///
    /// `rd_values` (`CReactionDiffusionSupport`): with AVX-512 VBMI, three vector operations
    /// (the levels' bytes repeated into 32-bit integers, converted rounding up, scaled by 2⁻³²),
    /// which Swift has no way to ask for; elsewhere ``fromInteger(_:)``'s formula lane by lane.
    /// Both give the correctly rounded k/255, checked for every level by the tests.
    @_transparent  // See `LevelRowStepper.store(_:to:)`.
    static func values(ofLevels k: LevelVector) -> FloatVector {
        rd_values(k)
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

/// The vector of levels (one byte each) matching ``FloatVector``'s lanes.
typealias LevelVector = SIMD16<UInt8>
