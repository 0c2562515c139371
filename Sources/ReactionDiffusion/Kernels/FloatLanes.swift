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
        // One `maxps` and one `minps`; `maxps(x, 0)` returns 0 for NaN, as the scalar version
        // does, and the unorm8 test over all levels and NaN checks that they agree.
        pointwiseMin(pointwiseMax(self, .zero), .one)
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
