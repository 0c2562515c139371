import ReactionDiffusion
import Testing

@Suite("The solver agrees bit for bit with a plain reference implementation")
struct SolverAgreementTests {
    static let configurations: [(Model, Precision, Boundary)] = Model.allCases.flatMap { model in
        Precision.allCases.flatMap { precision in
            Boundary.allCases.map { (model, precision, $0) }
        }
    }

    @Test(
        "seeded states, on grids wide enough for the vector path, its overlapping tail, and not",
        arguments: configurations,
        [(37, 23), (33, 9), (17, 5), (5, 4), (1, 3)]
    )
    func seeded(_ configuration: (Model, Precision, Boundary), size: (Int, Int)) {
        let (model, precision, boundary) = configuration
        let seed = InitialState.make(for: model, width: size.0, height: size.1, seed: 11)
        let steps = TestFields.meaningfulSteps(model, precision, 12)
        let expected = ReferenceSolver.run(
            seed,
            model: model,
            parameters: model.defaultParameters,
            precision: precision,
            boundary: boundary,
            steps: steps
        )
        let actual = TestFields.solve(
            seed,
            model: model,
            precision: precision,
            boundary: boundary,
            steps: steps,
            threads: 2
        )
        let difference = TestFields.difference(actual, expected)
        #expect(
            difference.count == 0,
            "\(difference.count) values differ, by up to \(difference.largest)"
        )
        #expect(actual.values.allSatisfy { $0.isFinite })
    }

    @Test(
        "seeded states, on grids wide enough for the pipelined row loop, with and without a tail",
        arguments: configurations,
        [(64, 6), (83, 7), (114, 5)]
    )
    func seededWide(_ configuration: (Model, Precision, Boundary), size: (Int, Int)) {
        seeded(configuration, size: size)
    }

    @Test("noise states with every preset", arguments: Preset.all, Precision.allCases)
    func presets(_ preset: Preset, precision: Precision) {
        let noise = TestFields.noise(
            chemicals: preset.model.chemicalCount,
            width: 29,
            height: 21,
            seed: 5
        )
        for boundary in Boundary.allCases {
            let expected = ReferenceSolver.run(
                noise,
                model: preset.model,
                parameters: preset.parameters,
                precision: precision,
                boundary: boundary,
                steps: TestFields.meaningfulSteps(preset.model, precision, 8)
            )
            let actual = TestFields.solve(
                noise,
                model: preset.model,
                parameters: preset.parameters,
                precision: precision,
                boundary: boundary,
                steps: TestFields.meaningfulSteps(preset.model, precision, 8)
            )
            #expect(actual.values.allSatisfy { $0.isFinite })
            let difference = TestFields.difference(actual, expected)
            #expect(
                difference.count == 0,
                "\(boundary): \(difference.count) values differ, by up to \(difference.largest)"
            )
        }
    }

    @Test("zero steps leave the state as given (after unorm8 rounding)")
    func zeroSteps() {
        let noise = TestFields.noise(chemicals: 2, width: 20, height: 10, seed: 8, in: -0.5..<1.5)
        let float32 = TestFields.solve(
            noise,
            model: .grayScott,
            precision: .float32,
            boundary: .zero,
            steps: 0
        )
        #expect(float32 == noise)
        let unorm8 = TestFields.solve(
            noise,
            model: .grayScott,
            precision: .unorm8,
            boundary: .zero,
            steps: 0
        )
        #expect(unorm8 == noise.quantizedToUnorm8())
        #expect(unorm8.values.allSatisfy { (0...1).contains($0) })
    }
}
