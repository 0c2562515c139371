import ReactionDiffusion

/// An independent, deliberately plain implementation of one step, straight from the issue's
/// formulas: one cell at a time, every neighbour read through a bounds check, division by 255.
enum ReferenceSolver {
    static func step(
        _ field: Field,
        model: Model,
        parameters p: Parameters,
        precision: Precision,
        boundary: Boundary,
        rule: Unorm8Rule = .floatingPoint
    ) -> Field {
        if precision == .unorm8, model == .grayScott, rule == .fixedPoint,
            let fixed = FixedPointGrayScott(p)
        {
            return fixed.step(field, boundary: boundary)
        }
        let width = field.width
        let height = field.height
        func read(_ c: Int, _ y: Int, _ x: Int) -> Float {
            if boundary == .periodic {
                return field[c, (y + height) % height, (x + width) % width]
            }
            if y < 0 || y >= height || x < 0 || x >= width {
                return 0
            }
            return field[c, y, x]
        }
        func lap(_ c: Int, _ y: Int, _ x: Int) -> Float {
            (read(c, y - 1, x) + read(c, y + 1, x) + read(c, y, x - 1) + read(c, y, x + 1))
                - 4 * read(c, y, x)
        }
        func mean(_ c: Int, _ y: Int, _ x: Int) -> Float {
            var sum = read(c, y, x)
            for dy in -1...1 {
                for dx in -1...1 {
                    sum += read(c, y + dy, x + dx)
                }
            }
            return sum / 9
        }
        func store(_ value: Float) -> Float {
            guard precision == .unorm8 else { return value }
            if value.isNaN { return 0 }
            let clamped = min(max(value, 0), 1)
            return (clamped * 255).rounded(.toNearestOrEven) / 255
        }

        var next = field
        for y in 0..<height {
            for x in 0..<width {
                switch model {
                case .grayScott:
                    let u = read(0, y, x)
                    let v = read(1, y, x)
                    let r = u * v * v
                    next[0, y, x] = store(u + p.du * lap(0, y, x) - r + p.f * (1 - u))
                    next[1, y, x] = store(v + p.dv * lap(1, y, x) + r - (p.f + p.k) * v)
                case .fitzHughNagumo:
                    let a = read(0, y, x)
                    let b = read(1, y, x)
                    let da = p.k1 * a - p.k2 * a * a - a * a * a - b + lap(0, y, x)
                    let db = p.epsilon * (p.k3 * a - p.a1 * b - p.a0) + p.delta * lap(1, y, x)
                    next[0, y, x] = store(a + p.timestep * da)
                    next[1, y, x] = store(b + p.timestep * db)
                case .belousovZhabotinsky:
                    let a = mean(0, y, x)
                    let b = mean(1, y, x)
                    let c = mean(2, y, x)
                    next[0, y, x] = store(a + a * (p.alpha * p.gamma * b) - c)
                    next[1, y, x] = store(b + b * (p.beta * c - p.alpha * a))
                    next[2, y, x] = store(c + c * (p.gamma * a - p.beta * b))
                }
            }
        }
        return next
    }

    static func run(
        _ field: Field,
        model: Model,
        parameters: Parameters,
        precision: Precision,
        boundary: Boundary,
        steps: Int,
        rule: Unorm8Rule = .floatingPoint
    ) -> Field {
        var state = field
        if precision == .unorm8 {
            state.values = state.values.map { value in
                value.isNaN ? 0 : (min(max(value, 0), 1) * 255).rounded(.toNearestOrEven) / 255
            }
        }
        for _ in 0..<steps {
            state = step(
                state,
                model: model,
                parameters: parameters,
                precision: precision,
                boundary: boundary,
                rule: rule
            )
        }
        return state
    }
}

/// Unorm8 rule 2 for Gray-Scott, written from its definition independently of the kernels:
/// Int arithmetic on the levels, with each 16-bit instruction the kernels use spelled out.
struct FixedPointGrayScott {
    let diffusionU: (neighbours: Int, centre: Int)
    let diffusionV: (neighbours: Int, centre: Int)
    let feed: Int
    let feedConstant: Int
    let feedKill: Int

    /// The quantised parameters, or nil where rule 2 does not cover them (rule 1 applies).
    init?(_ p: Parameters) {
        let sum = p.f + p.k
        guard [p.du, p.dv, p.f, p.k, sum].allSatisfy(\.isFinite),
            (0...0.25).contains(p.du), (0...0.25).contains(p.dv), p.f >= 0, p.k >= 0, sum <= 1
        else { return nil }
        // Scaling by a power of two is exact, so rounding the scaled Float rounds the product.
        func scaled(_ value: Float, _ power: Float) -> Int {
            Int((value * power).rounded(.toNearestOrEven))
        }
        let du = scaled(p.du, 131_072)
        let dv = scaled(p.dv, 131_072)
        diffusionU = (du, 32_768 - du)
        diffusionV = (dv, 32_768 - dv)
        feed = scaled(p.f, 32_768)
        feedConstant = feed * 255 / 256 + 64
        feedKill = scaled(sum, 32_768)
    }

    /// `pmulhuw`: the high 16 bits of the unsigned 32-bit product.
    static func mulhu(_ a: Int, _ b: Int) -> Int { ((a & 0xFFFF) * (b & 0xFFFF)) >> 16 }
    /// `pavgw`: the unsigned mean, rounded up.
    static func average(_ a: Int, _ b: Int) -> Int { ((a & 0xFFFF) + (b & 0xFFFF) + 1) >> 1 }
    /// A 16-bit word read as signed.
    static func signed(_ a: Int) -> Int { Int(Int16(truncatingIfNeeded: a)) }
    /// `paddsw`: the signed sum, saturated.
    static func addSaturating(_ a: Int, _ b: Int) -> Int {
        min(max(signed(a) + signed(b), -32_768), 32_767)
    }
    /// `psraw` by 7, then `packuswb`: a level.
    static func level(_ a: Int) -> Int { min(max(signed(a) >> 7, 0), 255) }

    func step(_ field: Field, boundary: Boundary) -> Field {
        let width = field.width
        let height = field.height
        func level(_ c: Int, _ y: Int, _ x: Int) -> Int {
            var y = y
            var x = x
            if boundary == .periodic {
                y = (y + height) % height
                x = (x + width) % width
            } else if y < 0 || y >= height || x < 0 || x >= width {
                return 0
            }
            return Int((field[c, y, x] * 255).rounded())
        }
        typealias F = FixedPointGrayScott
        var next = field
        for y in 0..<height {
            for x in 0..<width {
                // Levels shifted into the high byte of a word, as unpacking them with zeros does.
                func word(_ c: Int, _ dy: Int, _ dx: Int) -> Int { level(c, y + dy, x + dx) << 8 }
                func neighbours(_ c: Int) -> Int {
                    F.average(
                        F.average(word(c, -1, 0), word(c, 1, 0)),
                        F.average(word(c, 0, -1), word(c, 0, 1))
                    )
                }
                let u = word(0, 0, 0)
                let v = word(1, 0, 0)
                let du =
                    F.mulhu(neighbours(0), diffusionU.neighbours) + F.mulhu(u, diffusionU.centre)
                let dv =
                    F.mulhu(neighbours(1), diffusionV.neighbours) + F.mulhu(v, diffusionV.centre)
                let reaction = F.mulhu(F.mulhu(v, v), F.mulhu(u, 33_024))
                let nextU = F.level(
                    F.addSaturating(du - reaction, feedConstant - F.mulhu(u, feed))
                )
                let nextV = F.level(F.addSaturating(dv - F.mulhu(v, feedKill) + 65, reaction))
                next[0, y, x] = Float(nextU) / 255
                next[1, y, x] = Float(nextV) / 255
            }
        }
        return next
    }
}

/// Fields for tests.
enum TestFields {
    /// Uniform noise in [low, high) for every value, from a fixed seed.
    static func noise(
        chemicals: Int,
        width: Int,
        height: Int,
        seed: UInt64,
        in range: Range<Float> = 0..<1
    ) -> Field {
        var generator = SeededGenerator(seed: seed)
        var field = Field(chemicalCount: chemicals, width: width, height: height, repeating: 0)
        for i in field.values.indices {
            field.values[i] =
                range.lowerBound + (range.upperBound - range.lowerBound) * generator.nextUnitFloat()
        }
        return field
    }

    /// Runs the solver on `kernel` and returns the final field.
    static func solve(
        _ field: Field,
        model: Model,
        parameters: Parameters? = nil,
        precision: Precision,
        boundary: Boundary,
        steps: Int,
        threads: Int = 1,
        kernel: SolverKernel = .best,
        rule: Unorm8Rule = .floatingPoint
    ) -> Field {
        let simulation = Simulation(
            model: model,
            parameters: parameters ?? model.defaultParameters,
            precision: precision,
            unorm8Rule: rule,
            boundary: boundary,
            field: field,
            threadCount: threads
        )
        simulation.kernel = kernel
        simulation.step(count: steps)
        return simulation.field
    }

    /// `steps`, or fewer for Belousov-Zhabotinsky in float32, which blows up to NaN within a few
    /// dozen steps (as the original's would without its 8-bit clamp) and would compare nothing.
    static func meaningfulSteps(_ model: Model, _ precision: Precision, _ steps: Int) -> Int {
        model == .belousovZhabotinsky && precision == .float32 ? min(steps, 3) : steps
    }

    /// The number of values that differ bit for bit, and the largest difference.
    static func difference(_ a: Field, _ b: Field) -> (count: Int, largest: Float) {
        var count = 0
        var largest: Float = 0
        for (x, y) in zip(a.values, b.values) where x.bitPattern != y.bitPattern {
            count += 1
            largest = max(largest, abs(x - y))
        }
        return (count, largest)
    }
}
