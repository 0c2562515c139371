import Foundation
import ReactionDiffusion
import Testing

/// The solver keeps a `unorm8` state as one byte k per value (for k/255) and converts with each
/// kernel's vector code, which `Field.quantizedToUnorm8(kernel:)` shares; these tests check that
/// every kernel's conversions follow the rounding rule exactly, including ties, and that the
/// byte rows' edge handling is exact on the grid shapes the other suites do not reach.
@Suite("unorm8 state stored as level bytes")
struct Unorm8StorageTests {
    /// The rule, written independently: clamp to [0, 1] (NaN, negatives and zeros give +0), scale
    /// by 255 in `Float`, round half to even, divide by 255.
    static func reference(_ value: Float) -> Float {
        guard value > 0 else { return 0 }
        guard value < 1 else { return 1 }
        return (value * 255).rounded(.toNearestOrEven) / 255
    }

    /// The bit patterns in `patterns` whose quantised value differs from the reference, as a
    /// count and the first few, through every conversion the solver has: each kernel's of
    /// `Field.quantizedToUnorm8(kernel:)` (with a tail lane by lane when the count is not a
    /// multiple of the kernel's vector) and the one a `unorm8` simulation stores its starting
    /// state with.
    static func mismatches(_ patterns: [UInt32]) -> (count: Int, first: [UInt32]) {
        var inputs = patterns.map(Float.init(bitPattern:))
        if inputs.count % 2 == 1 {
            inputs.append(0)  // Two chemicals for the simulation.
        }
        let field = Field(chemicalCount: 1, width: inputs.count, height: 1, values: inputs)
        let stored = Simulation(
            model: .grayScott,
            parameters: Model.grayScott.defaultParameters,
            precision: .unorm8,
            field: Field(chemicalCount: 2, width: inputs.count / 2, height: 1, values: inputs)
        ).field
        var count = 0
        var first: [UInt32] = []
        for kernel in SolverKernel.available {
            let quantized = field.quantizedToUnorm8(kernel: kernel).values
            for (index, (vector, scalar)) in zip(quantized, stored.values).enumerated() {
                let wanted = reference(inputs[index]).bitPattern
                if vector.bitPattern != wanted || scalar.bitPattern != wanted {
                    count += 1
                    if first.count < 5 {
                        first.append(inputs[index].bitPattern)
                    }
                }
            }
        }
        return (count, first)
    }

    @Test("a million Float bit patterns, evenly spread, and every tie quantise by the rule")
    func sampledPatterns() {
        // A stride prime to 2³² reaches every exponent and sign; ties (x·255 rounding to k + ½)
        // and their neighbours are added explicitly, being too rare to be sampled.
        var patterns = Array(stride(from: UInt64(0), to: 1 << 32, by: 4_099).map { UInt32($0) })
        for k in 0..<255 {
            let guess = (Float(k) + 0.5) / 255
            var x = guess.nextDown.nextDown
            for _ in 0..<5 {
                patterns.append(x.bitPattern)
                x = x.nextUp
            }
        }
        patterns.append(contentsOf: [
            0x8000_0000, 0x7F80_0000, 0xFF80_0000, 0x7FC0_0000, 0xFFC0_0000,
        ])
        patterns.append(0x0000_0001)  // The smallest denormal.
        let result = Self.mismatches(patterns + [0x3F80_0000])  // An odd count: a scalar tail.
        #expect(result.count == 0, "first differing bit patterns: \(result.first)")
    }

    /// Every one of the 2³² `Float` bit patterns, in 64 slices on all cores: about a minute of
    /// CPU in a release build.
    ///
    ///     RD_SLOW_TESTS=1 swift test -c release --filter Unorm8StorageTests
    @Test(
        "every Float bit pattern quantises by the rule",
        .enabled(
            if: ProcessInfo.processInfo.environment["RD_SLOW_TESTS"] == "1",
            "set RD_SLOW_TESTS=1"
        )
    )
    func allPatterns() async {
        let slices = 64
        let sliceSize = (1 << 32) / slices
        let chunkSize = 1 << 20
        let failures = await withTaskGroup(of: (Int, [UInt32]).self) { group in
            for slice in 0..<slices {
                group.addTask {
                    var count = 0
                    var first: [UInt32] = []
                    var start = slice * sliceSize
                    while start < (slice + 1) * sliceSize {
                        let patterns = (start..<(start + chunkSize)).map { UInt32($0) }
                        let result = Self.mismatches(patterns)
                        count += result.count
                        first += result.first
                        start += chunkSize
                    }
                    return (count, first)
                }
            }
            var total = (0, [UInt32]())
            for await result in group {
                total.0 += result.0
                total.1 += result.1
            }
            return total
        }
        #expect(failures.0 == 0, "first differing bit patterns: \(failures.1.prefix(5))")
    }

    @Test(
        "grids one or two rows high, or exactly one or two vectors wide, agree with the reference",
        arguments: Model.allCases,
        [(16, 1), (16, 2), (20, 2), (3, 1), (32, 3), (16, 6), (8, 2), (33, 2), (64, 2)]
    )
    func smallGrids(model: Model, size: (Int, Int)) {
        let noise = TestFields.noise(
            chemicals: model.chemicalCount,
            width: size.0,
            height: size.1,
            seed: 31,
            in: -0.1..<1.1
        )
        for boundary in Boundary.allCases {
            let expected = ReferenceSolver.run(
                noise,
                model: model,
                parameters: model.defaultParameters,
                precision: .unorm8,
                boundary: boundary,
                steps: 6
            )
            for kernel in SolverKernel.available {
                for threads in [1, 2] {
                    let actual = TestFields.solve(
                        noise,
                        model: model,
                        precision: .unorm8,
                        boundary: boundary,
                        steps: 6,
                        threads: threads,
                        kernel: kernel
                    )
                    let difference = TestFields.difference(actual, expected)
                    #expect(
                        difference.count == 0,
                        "\(kernel), \(boundary), \(threads) threads: \(difference.count) values differ"
                    )
                }
            }
        }
    }
}
