import ReactionDiffusion
import Testing

@Suite("unorm8 stores exactly k/255")
struct Unorm8Tests {
    @Test("every k/255, and values near it, quantise to the correctly rounded k/255")
    func allLevels() {
        var inputs: [Float] = []
        var expected: [Float] = []
        for k in 0...255 {
            let level = Float(k) / 255
            for offset: Float in [0, -0.49, 0.49] {
                inputs.append(level + offset / 255)
                expected.append(level)
            }
        }
        inputs += [-3, -0.001, 1.001, 7, .nan, -.infinity, .infinity]
        expected += [0, 0, 1, 1, 0, 0, 1]
        let field = Field(chemicalCount: 1, width: inputs.count, height: 1, values: inputs)
        let quantized = field.quantizedToUnorm8()
        for (index, (value, wanted)) in zip(quantized.values, expected).enumerated() {
            #expect(value.bitPattern == wanted.bitPattern, "input \(inputs[index])")
        }
    }

    @Test("exact ties (x·255 = k + ½) round to the even k, as the GPU's conversion does")
    func ties() {
        var inputs: [Float] = []
        var expected: [Float] = []
        for k in 0..<255 {
            let tie = Float(k) + 0.5
            let guess = tie / 255
            for x in [guess.nextDown, guess, guess.nextUp] where x * 255 == tie {
                inputs.append(x)
                expected.append(Float(k % 2 == 0 ? k : k + 1) / 255)
            }
        }
        #expect(inputs.count > 20, "too few exact ties found to test")
        let field = Field(chemicalCount: 1, width: inputs.count, height: 1, values: inputs)
        #expect(field.quantizedToUnorm8().values == expected)
    }

    @Test("after many steps every value of every model is some k/255", arguments: Model.allCases)
    func stepsStayOnLevels(model: Model) {
        let seed = InitialState.make(for: model, width: 48, height: 32, seed: 21)
        let result = TestFields.solve(
            seed,
            model: model,
            precision: .unorm8,
            boundary: .zero,
            steps: 40,
            threads: 2
        )
        var offLevel = 0
        for value in result.values {
            let k = (value * 255).rounded()
            if !(0...255).contains(k) || Float(k) / 255 != value {
                offLevel += 1
            }
        }
        #expect(offLevel == 0)
    }
}

@Suite("Every kernel's vector path stores every level exactly")
struct Unorm8VectorPathTests {
    @Test("a step that changes nothing keeps all 256 levels k/255 bit for bit")
    func identityStep() {
        // With every Gray-Scott rate zero and u·v = 0 in every cell, u' = u and v' = v: the step
        // only re-quantises. Rows alternate between levels in u and levels in v.
        var field = Field(chemicalCount: 2, width: 300, height: 4, repeating: 0)
        for y in 0..<4 {
            for x in 0..<300 {
                field[y % 2, y, x] = Float((x + 7 * y) % 256) / 255
            }
        }
        for kernel in SolverKernel.available {
            let result = TestFields.solve(
                field,
                model: .grayScott,
                parameters: Parameters(),
                precision: .unorm8,
                boundary: .zero,
                steps: 3,
                kernel: kernel
            )
            #expect(TestFields.difference(result, field).count == 0, "\(kernel)")
        }
    }

    @Test(
        "NaN and infinite results clamp the same way on the vector path and the edges",
        arguments: [Float.nan, .infinity, -.infinity, 1e30]
    )
    func nonFinite(feed: Float) {
        let seed = InitialState.make(for: .grayScott, width: 40, height: 12, seed: 6)
        var parameters = Model.grayScott.defaultParameters
        parameters.f = feed
        let expected = ReferenceSolver.run(
            seed,
            model: .grayScott,
            parameters: parameters,
            precision: .unorm8,
            boundary: .zero,
            steps: 2
        )
        for kernel in SolverKernel.available {
            let actual = TestFields.solve(
                seed,
                model: .grayScott,
                parameters: parameters,
                precision: .unorm8,
                boundary: .zero,
                steps: 2,
                kernel: kernel
            )
            #expect(TestFields.difference(actual, expected).count == 0, "\(kernel)")
            #expect(actual.values.allSatisfy { (0...1).contains($0) }, "\(kernel)")
        }
    }
}
