import ReactionDiffusion
import Testing

@Suite("Skipping unchanged rows never changes a result")
struct RowSkippingTests {
    static func run(
        _ seed: Field,
        model: Model,
        precision: Precision,
        boundary: Boundary,
        skipping: Bool,
        threads: Int,
        body: (Simulation) -> Void
    ) -> Field {
        let simulation = Simulation(
            model: model,
            parameters: model.defaultParameters,
            precision: precision,
            boundary: boundary,
            field: seed,
            threadCount: threads
        )
        simulation.skipsUnchangedRows = skipping
        body(simulation)
        return simulation.field
    }

    @Test(
        "a mostly empty grid gives the same state with and without skipping",
        arguments: Model.allCases,
        Precision.allCases
    )
    func sameResult(model: Model, precision: Precision) {
        // A small pattern in a large empty field: most rows are stationary for a long time.
        var seed = InitialState.make(for: model, width: 40, height: 72, seed: 12)
        if model == .grayScott {
            for y in 0..<72 where y < 24 || y >= 48 {
                for x in 0..<40 {
                    seed[0, y, x] = 1
                    seed[1, y, x] = 0
                }
            }
        }
        let steps = TestFields.meaningfulSteps(model, precision, 150)
        for boundary in Boundary.allCases {
            for threads in [1, 3] {
                let plain = Self.run(
                    seed,
                    model: model,
                    precision: precision,
                    boundary: boundary,
                    skipping: false,
                    threads: threads
                ) { $0.step(count: steps) }
                let skipping = Self.run(
                    seed,
                    model: model,
                    precision: precision,
                    boundary: boundary,
                    skipping: true,
                    threads: threads
                ) { simulation in
                    // In several calls, of odd and even lengths, to cross generations.
                    var left = steps
                    for chunk in [1, 2, 7, 40] where left > 0 {
                        simulation.step(count: min(chunk, left))
                        left -= min(chunk, left)
                    }
                    simulation.step(count: left)
                }
                #expect(
                    TestFields.difference(skipping, plain).count == 0,
                    "\(boundary), \(threads) threads"
                )
            }
        }
    }

    @Test("changing parameters, or turning skipping off and on, between steps is honoured")
    func parameterChange() {
        var seed = Field(chemicalCount: 2, width: 40, height: 40, repeating: 0)
        for y in 0..<40 {
            for x in 0..<40 {
                seed[0, y, x] = 1
                if (15..<25).contains(y) && (15..<25).contains(x) {
                    seed[0, y, x] = 0.3
                    seed[1, y, x] = 0.7
                }
            }
        }
        func script(_ simulation: Simulation) {
            simulation.step(count: 200)
            // With F = 0.2, even the empty background (u = 1, v = 0) is no longer stationary
            // where u < 1 near the edges, and the pattern's rows all change.
            simulation.parameters.f = 0.2
            simulation.step(count: 5)
            let keep = simulation.skipsUnchangedRows
            simulation.skipsUnchangedRows = false
            simulation.step(count: 3)
            simulation.skipsUnchangedRows = keep
            simulation.parameters.f = 0.03
            simulation.step(count: 50)
        }
        for precision in Precision.allCases {
            let plain = Self.run(
                seed,
                model: .grayScott,
                precision: precision,
                boundary: .zero,
                skipping: false,
                threads: 2,
                body: script
            )
            let skipping = Self.run(
                seed,
                model: .grayScott,
                precision: precision,
                boundary: .zero,
                skipping: true,
                threads: 2,
                body: script
            )
            #expect(TestFields.difference(skipping, plain).count == 0, "\(precision)")
        }
    }
}
