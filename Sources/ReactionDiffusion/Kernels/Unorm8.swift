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
    @_transparent  // See `LevelRowStepper.store(_:to:)`.
    static func levels(of values: FloatVector) -> LevelVector {
        // The scalar version's result in fewer vector operations: NaN and values ≤ 0 become 0
        // (`v > 0 ? v : 0`, the pattern of one `maxps`, which LLVM may also fold into the
        // rounding addition as a mask); the others are scaled and rounded without the upper
        // clamp. Every value ≥ 1 lands from 1·255 + 2²³ up to +∞, whose bit patterns, as
        // unsigned integers, are all above that of 255 + 2²³: one integer minimum (`vpminud`,
        // which unlike a float compare does not occupy the floating-point adders the stencil
        // needs) caps them to it, and the low byte of the capped pattern is the level. The
        // exhaustive test of `Field.quantizedToUnorm8()` checks every input.
        let zero = FloatVector(repeating: 0)
        let positive = zero.replacing(with: values, where: values .> zero)
        let biased = positive * FloatVector(repeating: 255) + FloatVector(repeating: roundingBias)
        let bits = unsafeBitCast(biased, to: SIMD16<UInt32>.self)
        let cap = SIMD16<UInt32>(repeating: (255 + roundingBias).bitPattern)
        let capped = bits.replacing(with: cap, where: cap .< bits)
        // Lane by lane rather than `init(truncatingIfNeeded:)`, which the standard library does
        // not inline (a call per vector); LLVM turns this loop into one `vpmovdb`.
        var result = LevelVector()
        for lane in 0..<LevelVector.scalarCount {
            result[lane] = UInt8(truncatingIfNeeded: capped[lane])
        }
        return result
    }

    /// Returns k/255 correctly rounded, for the level `k`.
    @inline(__always)
    static func value(ofLevel k: UInt8) -> Float {
        fromInteger(Float(k))
    }

    /// The values of 16 levels, lane by lane exactly as ``value(ofLevel:)``.
    @_transparent  // See `LevelRowStepper.store(_:to:)`.
    static func values(ofLevels k: LevelVector) -> FloatVector {
        // Lane by lane for the same reason as in `levels(of:)`: `vpmovzxbd` + `vcvtdq2ps`.
        var integers = FloatVector()
        for lane in 0..<FloatVector.scalarCount {
            integers[lane] = Float(k[lane])
        }
        return fromInteger(integers)
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
