/// The arithmetic the cell rules need, shared by a single `Float` (edge cells) and a SIMD vector
/// of them (interior cells), so each model's formula is written once and gives bit-identical
/// results either way.
protocol FloatLanes {
    /// A value with every lane set to `value`.
    init(broadcast value: Float)
    static func + (lhs: Self, rhs: Self) -> Self
    static func - (lhs: Self, rhs: Self) -> Self
    static func * (lhs: Self, rhs: Self) -> Self
    static func / (lhs: Self, rhs: Self) -> Self
    /// Each lane clamped to [0, 1]; NaN becomes 0 (as a GPU's saturate does).
    func clampedToUnitInterval() -> Self
    /// `self + lhs × rhs` rounded once (a fused multiply-add).
    func addingProduct(_ lhs: Self, _ rhs: Self) -> Self
}

/// The SIMD vector the interior loops use.
///
/// Eight lanes fill one AVX register, or two SSE registers on a baseline x86-64 build.
typealias FloatVector = SIMD16<Float>

extension Float: FloatLanes {
    @inline(__always)
    init(broadcast value: Float) {
        self = value
    }

    @inline(__always)
    func clampedToUnitInterval() -> Float {
        // `!(self > 0)` also catches NaN.
        self > 1 ? 1 : (self > 0 ? self : 0)
    }
}

extension SIMD16<Float>: FloatLanes {
    @inline(__always)
    init(broadcast value: Float) {
        self.init(repeating: value)
    }

    @inline(__always)
    func clampedToUnitInterval() -> SIMD16<Float> {
        // The same selections as the scalar version, lane by lane, so NaN also becomes 0 here.
        // Written as `v > 0 ? v : 0` and then `p < 1 ? p : 1`, the exact patterns of `maxps` and
        // `minps` (whose result is the second operand when either is NaN), so LLVM emits one
        // instruction for each (or folds the second into a mask) rather than compares and
        // blends. Not `pointwiseMin`/`pointwiseMax`: the standard library does not inline those,
        // and calling them costs more than the step.
        let zero = SIMD16<Float>(repeating: 0)
        let one = SIMD16<Float>(repeating: 1)
        let positive = zero.replacing(with: self, where: self .> zero)
        return one.replacing(with: positive, where: positive .< one)
    }
}

extension FloatLanes {
    /// Loads lanes starting at `pointer`, which need not be aligned.
    @inline(__always)
    static func load(_ pointer: UnsafePointer<Float>) -> Self {
        UnsafeRawPointer(pointer).loadUnaligned(as: Self.self)
    }

    /// Stores the lanes starting at `pointer`, which need not be aligned.
    @inline(__always)
    func store(to pointer: UnsafeMutablePointer<Float>) {
        UnsafeMutableRawPointer(pointer).storeBytes(of: self, as: Self.self)
    }
}
