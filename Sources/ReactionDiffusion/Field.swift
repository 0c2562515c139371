import CReactionDiffusionSupport

/// The state of a simulation: one plane of `Float` per chemical, each `height` rows of `width`.
///
/// Values are stored chemical-major, then row-major: the value of chemical `c` at column `x` of row
/// `y` is at `values[(c * height + y) * width + x]`. This is the layout of a C-ordered NumPy array
/// of shape `(chemicals, height, width)`, which is how `.npy` files hold it.
///
/// ```swift
/// var field = Field(chemicalCount: 2, width: 4, height: 3, repeating: 0)
/// field[1, 2, 3] = 0.5  // chemical 1, row 2, column 3
/// ```
public struct Field: Sendable, Hashable {
    /// The number of chemicals (planes).
    public let chemicalCount: Int
    /// The number of columns.
    public let width: Int
    /// The number of rows.
    public let height: Int
    /// All values, chemical-major then row-major; its count is `chemicalCount × height × width`.
    public var values: [Float]

    /// Creates a field filled with one value.
    ///
    /// - Precondition: all dimensions are positive.
    public init(chemicalCount: Int, width: Int, height: Int, repeating value: Float) {
        precondition(
            chemicalCount > 0 && width > 0 && height > 0,
            "field dimensions must be positive"
        )
        self.chemicalCount = chemicalCount
        self.width = width
        self.height = height
        self.values = Array(repeating: value, count: chemicalCount * width * height)
    }

    /// Creates a field from its values in chemical-major, row-major order.
    ///
    /// - Precondition: all dimensions are positive and `values.count` is their product.
    public init(chemicalCount: Int, width: Int, height: Int, values: [Float]) {
        precondition(
            chemicalCount > 0 && width > 0 && height > 0,
            "field dimensions must be positive"
        )
        precondition(values.count == chemicalCount * width * height, "value count must match shape")
        self.chemicalCount = chemicalCount
        self.width = width
        self.height = height
        self.values = values
    }

    /// The number of cells in one plane, `width × height`.
    public var cellCount: Int { width * height }

    /// The value of `chemical` at column `x` of row `y`.
    public subscript(chemical: Int, y: Int, x: Int) -> Float {
        get { values[(chemical * height + y) * width + x] }
        set { values[(chemical * height + y) * width + x] = newValue }
    }

    /// One chemical's plane, row-major.
    public func plane(_ chemical: Int) -> ArraySlice<Float> {
        values[chemical * cellCount..<(chemical + 1) * cellCount]
    }

    /// Returns the field moved by `dx` columns and `dy` rows, wrapping around the edges.
    public func shiftedCyclically(dx: Int, dy: Int) -> Field {
        var result = self
        for c in 0..<chemicalCount {
            for y in 0..<height {
                let targetY = ((y + dy) % height + height) % height
                for x in 0..<width {
                    let targetX = ((x + dx) % width + width) % width
                    result[c, targetY, targetX] = self[c, y, x]
                }
            }
        }
        return result
    }

    /// Returns the field with every value clamped to [0, 1] and rounded to the nearest multiple of
    /// 1/255 (ties to even), as ``Precision/unorm8`` stores it; NaN becomes 0.
    ///
    /// - Parameter kernel: whose conversions to use (the solver's own, so the tests of this
    ///   method check them on every representable input); every kernel gives the same values.
    /// - Returns: the quantised field.
    public func quantizedToUnorm8(kernel: SolverKernel = .best) -> Field {
        var result = self
        result.values.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            rd_quantize(kernel.identifier, base, buffer.count)
        }
        return result
    }
}
