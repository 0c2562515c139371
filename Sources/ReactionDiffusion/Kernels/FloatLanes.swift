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
        // (LLVM turns the first into one `maxps`.) Not `pointwiseMin`/`pointwiseMax`: the
        // standard library does not inline those, and calling them costs more than the step.
        let positive = self.replacing(with: 0, where: .!(self .> 0))
        return positive.replacing(with: 1, where: self .> 1)
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
