import ReactionDiffusion
import Testing

@Suite("Every kernel agrees bit for bit with a plain reference implementation")
struct SolverAgreementTests {
    /// The unorm8 rules (each a rule of its own, fixed forever), or one for float32, where
    /// there is no rule to choose.
    static func rules(_ precision: Precision) -> [Unorm8Rule] {
        precision == .unorm8 ? Unorm8Rule.allCases : [.floatingPoint]
    }

    static let configurations: [(Model, Precision, Boundary)] = Model.allCases.flatMap { model in
        Precision.allCases.flatMap { precision in
            Boundary.allCases.map { (model, precision, $0) }
        }
    }

    @Test(
        "seeded states, on grids wide enough for the vector path, its overlapping tail, and not",
        arguments: configurations,
        [(37, 23), (33, 9), (17, 5), (8, 3), (5, 4), (1, 3)]
    )
    func seeded(_ configuration: (Model, Precision, Boundary), size: (Int, Int)) {
        let (model, precision, boundary) = configuration
        let seed = InitialState.make(for: model, width: size.0, height: size.1, seed: 11)
        let steps = TestFields.meaningfulSteps(model, precision, 12)
        for rule in Self.rules(precision) {
            let expected = ReferenceSolver.run(
                seed,
                model: model,
                parameters: model.defaultParameters,
                precision: precision,
                boundary: boundary,
                steps: steps,
                rule: rule
            )
            for kernel in SolverKernel.available {
                let actual = TestFields.solve(
                    seed,
                    model: model,
                    precision: precision,
                    boundary: boundary,
                    steps: steps,
                    threads: 2,
                    kernel: kernel,
                    rule: rule
                )
                let difference = TestFields.difference(actual, expected)
                #expect(
                    difference.count == 0,
                    "\(kernel), \(rule): \(difference.count) values differ, by up to \(difference.largest)"
                )
                #expect(actual.values.allSatisfy { $0.isFinite }, "\(kernel)")
            }
        }
    }

    @Test(
        "seeded states, on grids one or more blocks of vectors wide, with and without a tail",
        arguments: configurations,
        [(31, 4), (32, 4), (40, 5), (64, 6), (83, 7), (114, 5)]
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
            for rule in Self.rules(precision) {
                check(preset, precision: precision, boundary: boundary, rule: rule, noise)
            }
        }
    }

    /// Every kernel's steps of `preset` from `noise` against the reference's.
    func check(
        _ preset: Preset,
        precision: Precision,
        boundary: Boundary,
        rule: Unorm8Rule,
        _ noise: Field
    ) {
        let expected = ReferenceSolver.run(
            noise,
            model: preset.model,
            parameters: preset.parameters,
            precision: precision,
            boundary: boundary,
            steps: TestFields.meaningfulSteps(preset.model, precision, 8),
            rule: rule
        )
        for kernel in SolverKernel.available {
            let actual = TestFields.solve(
                noise,
                model: preset.model,
                parameters: preset.parameters,
                precision: precision,
                boundary: boundary,
                steps: TestFields.meaningfulSteps(preset.model, precision, 8),
                kernel: kernel,
                rule: rule
            )
            #expect(actual.values.allSatisfy { $0.isFinite }, "\(kernel)")
            let difference = TestFields.difference(actual, expected)
            #expect(
                difference.count == 0,
                "\(kernel), \(boundary), \(rule): \(difference.count) differ, by up to \(difference.largest)"
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

    @Test(
        "a developed pattern on a wide grid comes out the same on every kernel and thread count",
        arguments: Model.allCases,
        Precision.allCases
    )
    func kernelsAgreeOnDevelopedPattern(model: Model, precision: Precision) {
        for rule in Self.rules(precision) {
            kernelsAgreeOnDevelopedPattern(model: model, precision: precision, rule: rule)
        }
    }

    func kernelsAgreeOnDevelopedPattern(model: Model, precision: Precision, rule: Unorm8Rule) {
        let seed = InitialState.make(for: model, width: 200, height: 40, seed: 3)
        let steps = TestFields.meaningfulSteps(model, precision, 60)
        let expected = TestFields.solve(
            seed,
            model: model,
            precision: precision,
            boundary: .periodic,
            steps: steps,
            kernel: .scalar,
            rule: rule
        )
        #expect(expected != seed, "the steps changed nothing, so the comparison would be empty")
        for kernel in SolverKernel.available {
            for threads in [1, 2] {
                let actual = TestFields.solve(
                    seed,
                    model: model,
                    precision: precision,
                    boundary: .periodic,
                    steps: steps,
                    threads: threads,
                    kernel: kernel,
                    rule: rule
                )
                let difference = TestFields.difference(actual, expected)
                #expect(
                    difference.count == 0,
                    "\(kernel), \(rule), \(threads) threads: \(difference.count) differ"
                )
            }
        }
    }
}
