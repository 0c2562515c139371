/// Starting states like the original editor's seed images, made from an explicit random seed.
///
/// Equal arguments always give equal fields (see ``SeededGenerator``).
///
/// ```swift
/// let field = InitialState.make(for: .fitzHughNagumo, width: 640, height: 640, seed: 1)
/// ```
public enum InitialState {
    /// The seed `rdlab` uses when none is given.
    public static let defaultSeed: UInt64 = 1

    /// Returns the model's starting state on a `width` × `height` grid.
    ///
    /// - Gray-Scott: `u = 1`, `v = 0`, with a centred square whose side is 37% of the shorter
    ///   dimension holding `u ≈ 0.25`, `v ≈ 0.75` (each ± 0.05 per cell, plus ± 0.1 of smooth
    ///   blotches about 1/32 of the grid across).
    /// - FitzHugh-Nagumo: a noisy background `a ≈ 0.13`, `b ≈ 0.29` (± 0.05 per cell, plus
    ///   ± 0.13 of smooth blotches about 1/32 of the grid across) with a centred vertical bar
    ///   (16% of the width, 56% of the height) of `a ≈ 0.74`, `b ≈ 0.25` (± 0.05 per cell).
    /// - Belousov-Zhabotinsky: smooth value noise for each chemical, uniform in [0.3, 1.0] on a
    ///   lattice about 1/16 of the grid apart and interpolated between, so its mean is ≈ 0.65.
    ///
    /// - Precondition: `width` and `height` are positive.
    public static func make(for model: Model, width: Int, height: Int, seed: UInt64) -> Field {
        var generator = SeededGenerator(seed: seed)
        switch model {
        case .grayScott:
            return grayScott(width: width, height: height, generator: &generator)
        case .fitzHughNagumo:
            return fitzHughNagumo(width: width, height: height, generator: &generator)
        case .belousovZhabotinsky:
            return belousovZhabotinsky(width: width, height: height, generator: &generator)
        }
    }

    private static func grayScott(
        width: Int,
        height: Int,
        generator: inout SeededGenerator
    ) -> Field {
        var field = Field(chemicalCount: 2, width: width, height: height, repeating: 0)
        for y in 0..<height {
            for x in 0..<width {
                field[0, y, x] = 1
            }
        }
        let side = max(1, Int((0.37 * Double(min(width, height))).rounded()))
        let left = (width - side) / 2
        let top = (height - side) / 2
        // Smooth blotches (about 1/32 of the grid across) on top of per-cell noise give the
        // 8-bit state the uneven start it needs to grow Strings and Bifurcation from inside the
        // square, as the original's seed image did.
        let spacing = max(2, min(width, height) / 32)
        let blotches = (
            u: valueNoise(width: side, height: side, spacing: spacing, generator: &generator),
            v: valueNoise(width: side, height: side, spacing: spacing, generator: &generator)
        )
        for y in top..<(top + side) {
            for x in left..<(left + side) {
                let i = (y - top) * side + (x - left)
                let u = generator.nextFloat(around: 0.25, spread: 0.05)
                let v = generator.nextFloat(around: 0.75, spread: 0.05)
                field[0, y, x] = u + 0.1 * blotches.u[i]
                field[1, y, x] = v + 0.1 * blotches.v[i]
            }
        }
        return field
    }

    private static func fitzHughNagumo(
        width: Int,
        height: Int,
        generator: inout SeededGenerator
    ) -> Field {
        var field = Field(chemicalCount: 2, width: width, height: height, repeating: 0)
        let bar = (
            columns: Int(0.42 * Double(width))..<Int((0.58 * Double(width)).rounded(.up)),
            rows: Int(0.22 * Double(height))..<Int((0.78 * Double(height)).rounded(.up))
        )
        // Blotchy noise (about 1/32 of the grid across) on top of per-cell noise: where it dips
        // low enough, the 8-bit state falls to the (0, 0) rest state and leaves the original's
        // dark blots; per-cell noise alone is smoothed away before it can.
        let spacing = max(2, min(width, height) / 32)
        let blotches = (
            a: valueNoise(width: width, height: height, spacing: spacing, generator: &generator),
            b: valueNoise(width: width, height: height, spacing: spacing, generator: &generator)
        )
        for y in 0..<height {
            for x in 0..<width {
                let inBar = bar.columns.contains(x) && bar.rows.contains(y)
                let i = y * width + x
                let a = generator.nextFloat(around: inBar ? 0.74 : 0.13, spread: 0.05)
                let b = generator.nextFloat(around: inBar ? 0.25 : 0.29, spread: 0.05)
                field[0, y, x] = inBar ? a : a + 0.13 * blotches.a[i]
                field[1, y, x] = inBar ? b : b + 0.13 * blotches.b[i]
            }
        }
        return field
    }

    private static func belousovZhabotinsky(
        width: Int,
        height: Int,
        generator: inout SeededGenerator
    ) -> Field {
        var field = Field(chemicalCount: 3, width: width, height: height, repeating: 0)
        let spacing = max(2, min(width, height) / 16)
        for chemical in 0..<3 {
            let noise = valueNoise(
                width: width,
                height: height,
                spacing: spacing,
                generator: &generator
            )
            for i in 0..<field.cellCount {
                // Map [-1, 1] to [0.3, 1.0]: mean 0.65.
                field.values[chemical * field.cellCount + i] = 0.65 + 0.35 * noise[i]
            }
        }
        return field
    }

    /// Returns smooth noise in [-1, 1], row-major.
    ///
    /// Uniform random values on a lattice `spacing` cells apart are interpolated between with
    /// smoothstep weights; the lattice wraps around the grid.
    private static func valueNoise(
        width: Int,
        height: Int,
        spacing: Int,
        generator: inout SeededGenerator
    ) -> [Float] {
        let columns = (width + spacing - 1) / spacing
        let rows = (height + spacing - 1) / spacing
        var knots: [Float] = []
        for _ in 0..<(columns * rows) {
            knots.append(2 * generator.nextUnitFloat() - 1)
        }
        func knot(_ i: Int, _ j: Int) -> Float {
            knots[(j % rows) * columns + (i % columns)]
        }
        var noise = [Float](repeating: 0, count: width * height)
        for y in 0..<height {
            let j = y / spacing
            let ty = smoothstep(Float(y % spacing) / Float(spacing))
            for x in 0..<width {
                let i = x / spacing
                let tx = smoothstep(Float(x % spacing) / Float(spacing))
                let top = knot(i, j) + (knot(i + 1, j) - knot(i, j)) * tx
                let bottom = knot(i, j + 1) + (knot(i + 1, j + 1) - knot(i, j + 1)) * tx
                noise[y * width + x] = top + (bottom - top) * ty
            }
        }
        return noise
    }

    private static func smoothstep(_ t: Float) -> Float {
        t * t * (3 - 2 * t)
    }
}
