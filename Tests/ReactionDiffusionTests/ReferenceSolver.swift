import ReactionDiffusion

/// An independent, deliberately plain implementation of one step, straight from the issue's
/// formulas: one cell at a time, every neighbour read through a bounds check, division by 255.
enum ReferenceSolver {
    static func step(
        _ field: Field,
        model: Model,
        parameters p: Parameters,
        precision: Precision,
        boundary: Boundary
    ) -> Field {
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
        steps: Int
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
                boundary: boundary
            )
        }
        return state
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
        kernel: SolverKernel = .best
    ) -> Field {
        let simulation = Simulation(
            model: model,
            parameters: parameters ?? model.defaultParameters,
            precision: precision,
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
