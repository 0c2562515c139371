import ReactionDiffusion
import Testing

@Suite("unorm8 rules: rule 2 where it is defined, rule 1 everywhere else")
struct Unorm8RuleTests {
    static func grayScott(f: Float, k: Float, du: Float, dv: Float) -> Parameters {
        var parameters = Model.grayScott.defaultParameters
        parameters.f = f
        parameters.k = k
        parameters.du = du
        parameters.dv = dv
        return parameters
    }

    @Test("rule 2 covers Gray-Scott in its stable ranges, up to and including their ends")
    func coverage() {
        let rule = Unorm8Rule.fixedPoint
        for preset in Model.grayScott.presets {
            #expect(rule.computesInFixedPoint(.grayScott, preset.parameters), "\(preset.name)")
        }
        #expect(rule.computesInFixedPoint(.grayScott, Self.grayScott(f: 1, k: 0, du: 0.25, dv: 0)))
        #expect(rule.computesInFixedPoint(.grayScott, Self.grayScott(f: 0, k: 0, du: -0.0, dv: 0)))
        #expect(rule.computesInFixedPoint(.grayScott, Self.grayScott(f: 0.5, k: 0.5, du: 0, dv: 0)))
        let outside: [Parameters] = [
            Self.grayScott(f: 0.04, k: 0.06, du: Float(0.25).nextUp, dv: 0.1),
            Self.grayScott(f: 0.04, k: 0.06, du: 0.2, dv: -0.01),
            Self.grayScott(f: -0.01, k: 0.06, du: 0.2, dv: 0.1),
            Self.grayScott(f: 0.04, k: -0.01, du: 0.2, dv: 0.1),
            Self.grayScott(f: 0.6, k: 0.5, du: 0.2, dv: 0.1),
            Self.grayScott(f: .nan, k: 0.06, du: 0.2, dv: 0.1),
            Self.grayScott(f: 0.04, k: .infinity, du: 0.2, dv: 0.1),
        ]
        for parameters in outside {
            #expect(!rule.computesInFixedPoint(.grayScott, parameters), "\(parameters)")
        }
        for model in [Model.fitzHughNagumo, .belousovZhabotinsky] {
            #expect(!rule.computesInFixedPoint(model, model.defaultParameters))
        }
        #expect(
            !Unorm8Rule.floatingPoint.computesInFixedPoint(
                .grayScott,
                Model.grayScott.defaultParameters
            )
        )
        #expect(Unorm8Rule.current == .fixedPoint)
    }

    @Test("outside its range rule 2 steps exactly as rule 1, on every kernel")
    func fallsBackToRuleOne() {
        let seed = InitialState.make(for: .grayScott, width: 70, height: 30, seed: 4)
        let parameters = Self.grayScott(f: 0.6, k: 0.5, du: 0.3, dv: 0.1)
        for kernel in SolverKernel.available {
            let one = TestFields.solve(
                seed,
                model: .grayScott,
                parameters: parameters,
                precision: .unorm8,
                boundary: .zero,
                steps: 20,
                kernel: kernel,
                rule: .floatingPoint
            )
            let two = TestFields.solve(
                seed,
                model: .grayScott,
                parameters: parameters,
                precision: .unorm8,
                boundary: .zero,
                steps: 20,
                kernel: kernel,
                rule: .fixedPoint
            )
            #expect(one != seed, "the steps changed nothing, so the comparison would be empty")
            #expect(one == two, "\(kernel)")
        }
    }

    @Test("one step of the two rules differs in few cells, by one level at most")
    func rulesAreClose() {
        let seed = InitialState.make(for: .grayScott, width: 128, height: 128, seed: 9)
        let developed = TestFields.solve(
            seed,
            model: .grayScott,
            precision: .unorm8,
            boundary: .zero,
            steps: 500,
            rule: .floatingPoint
        )
        func step(_ rule: Unorm8Rule) -> Field {
            TestFields.solve(
                developed,
                model: .grayScott,
                precision: .unorm8,
                boundary: .zero,
                steps: 1,
                rule: rule
            )
        }
        let one = step(.floatingPoint)
        let two = step(.fixedPoint)
        var differing = 0
        for (a, b) in zip(one.values, two.values) where a != b {
            differing += 1
            #expect(abs((a - b) * 255) < 1.01, "\(a) against \(b)")
        }
        // Different rules (otherwise there would be nothing to version), but close ones.
        #expect(differing > 0)
        #expect(differing * 100 < one.values.count, "\(differing) of \(one.values.count) differ")
    }

    @Test("under rule 2 the empty background stays exactly as it is, so rows can be skipped")
    func stationaryBackground() {
        let background = Field(
            chemicalCount: 2,
            width: 40,
            height: 12,
            values: Array(repeating: 1, count: 480) + Array(repeating: 0, count: 480)
        )
        // Periodic, so that every cell sees the same neighbourhood (a zero boundary would
        // empty the edges).
        for preset in Model.grayScott.presets {
            let stepped = TestFields.solve(
                background,
                model: .grayScott,
                parameters: preset.parameters,
                precision: .unorm8,
                boundary: .periodic,
                steps: 50,
                rule: .fixedPoint
            )
            #expect(stepped == background, "\(preset.name)")
        }
    }

    @Test("a simulation says which rule it steps by, the current one unless given")
    func simulationRule() {
        let seed = InitialState.make(for: .grayScott, width: 8, height: 8, seed: 1)
        let simulation = Simulation(
            model: .grayScott,
            parameters: Model.grayScott.defaultParameters,
            field: seed
        )
        #expect(simulation.unorm8Rule == .current)
        let older = Simulation(
            model: .grayScott,
            parameters: Model.grayScott.defaultParameters,
            unorm8Rule: .floatingPoint,
            field: seed
        )
        #expect(older.unorm8Rule == .floatingPoint)
    }
}
