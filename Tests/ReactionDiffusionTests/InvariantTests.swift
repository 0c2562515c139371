import Foundation
import ReactionDiffusion
import Testing

@Suite("Invariants of the equations hold in the solver")
struct InvariantTests {
    @Test("a uniform (1, 0) Gray-Scott field stays exactly fixed", arguments: Precision.allCases)
    func uniformFixedPoint(precision: Precision) {
        var field = Field(chemicalCount: 2, width: 40, height: 24, repeating: 0)
        for i in 0..<field.cellCount {
            field.values[i] = 1
        }
        let result = TestFields.solve(
            field,
            model: .grayScott,
            precision: precision,
            boundary: .periodic,
            steps: 50,
            threads: 2
        )
        #expect(result == field)
    }

    @Test(
        "a cosine mode of u decays by 1 − F − 4·Du·sin²(πk/N) per step (v = 0, periodic, float32)",
        arguments: [1, 3, 8, 16, 32]
    )
    func cosineModeDecay(wavenumber k: Int) {
        let n = 64
        let amplitude: Float = 0.25
        let parameters = Model.grayScott.defaultParameters
        let sine = sin(Double.pi * Double(k) / Double(n))
        let factor = 1 - Double(parameters.f) - 4 * Double(parameters.du) * sine * sine
        let steps = 5
        for alongRows in [true, false] {
            let width = alongRows ? n : 8
            let height = alongRows ? 8 : n
            var field = Field(chemicalCount: 2, width: width, height: height, repeating: 0)
            for y in 0..<height {
                for x in 0..<width {
                    let phase = 2 * Double.pi * Double(k * (alongRows ? x : y)) / Double(n)
                    field[0, y, x] = 1 + amplitude * Float(cos(phase))
                }
            }
            let result = TestFields.solve(
                field,
                model: .grayScott,
                precision: .float32,
                boundary: .periodic,
                steps: steps
            )
            var largestError: Double = 0
            for y in 0..<height {
                for x in 0..<width {
                    let initial = Double(field[0, y, x]) - 1
                    let expected = initial * pow(factor, Double(steps))
                    largestError = max(largestError, abs(Double(result[0, y, x]) - 1 - expected))
                    #expect(result[1, y, x] == 0)
                }
            }
            #expect(largestError < 1e-6, "k = \(k): off by \(largestError)")
        }
    }

    @Test(
        "shifting the initial state on a periodic grid shifts the result",
        arguments: Model.allCases,
        Precision.allCases
    )
    func shiftEquivariance(model: Model, precision: Precision) {
        let seed = InitialState.make(for: model, width: 41, height: 19, seed: 3)
        let (dx, dy) = (13, 5)
        let steps = TestFields.meaningfulSteps(model, precision, 15)
        let direct = TestFields.solve(
            seed,
            model: model,
            precision: precision,
            boundary: .periodic,
            steps: steps
        )
        let shifted = TestFields.solve(
            seed.shiftedCyclically(dx: dx, dy: dy),
            model: model,
            precision: precision,
            boundary: .periodic,
            steps: steps
        )
        #expect(TestFields.difference(shifted, direct.shiftedCyclically(dx: dx, dy: dy)).count == 0)
        #expect(direct != seed, "the state should have changed")
        #expect(direct.values.allSatisfy { $0.isFinite })
    }

    @Test(
        "results are identical for any thread count",
        arguments: Model.allCases,
        Boundary.allCases
    )
    func threadCountIndependence(model: Model, boundary: Boundary) {
        let seed = InitialState.make(for: model, width: 45, height: 31, seed: 9)
        for precision in Precision.allCases {
            let steps = TestFields.meaningfulSteps(model, precision, 9)
            let single = TestFields.solve(
                seed,
                model: model,
                precision: precision,
                boundary: boundary,
                steps: steps
            )
            #expect(single.values.allSatisfy { $0.isFinite })
            for threads in [2, 3, 5, 31, 64] {
                let parallel = TestFields.solve(
                    seed,
                    model: model,
                    precision: precision,
                    boundary: boundary,
                    steps: steps,
                    threads: threads
                )
                #expect(
                    TestFields.difference(parallel, single).count == 0,
                    "\(precision), \(threads) threads"
                )
            }
        }
    }

    @Test("stepping in several calls equals stepping in one")
    func splitSteps() {
        let seed = InitialState.make(for: .fitzHughNagumo, width: 30, height: 20, seed: 4)
        let simulation = Simulation(
            model: .fitzHughNagumo,
            parameters: Model.fitzHughNagumo.defaultParameters,
            field: seed,
            threadCount: 2
        )
        simulation.step(count: 3)
        simulation.step()
        simulation.step(count: 5)
        #expect(simulation.stepCount == 9)
        let once = TestFields.solve(
            seed,
            model: .fitzHughNagumo,
            precision: .unorm8,
            boundary: .zero,
            steps: 9,
            threads: 3
        )
        #expect(simulation.field == once)
    }
}
