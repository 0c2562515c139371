import Foundation
import ReactionDiffusion
import Testing

/// The presets' named pattern classes at the original's size and length. About 10⁹ cell updates
/// each, so opt-in, and meant for optimised builds:
///
///     RD_SLOW_TESTS=1 swift test -c release --filter PresetPatternTests
@Suite(
    "Presets form their named patterns at 640 × 640 after 20,000 steps",
    .enabled(if: ProcessInfo.processInfo.environment["RD_SLOW_TESTS"] == "1", "set RD_SLOW_TESTS=1")
)
struct PresetPatternTests {
    static func census(_ presetName: String, precision: Precision) -> BlobCensus {
        let preset = Preset.named(presetName, for: .grayScott)!
        let simulation = Simulation(
            model: .grayScott,
            parameters: preset.parameters,
            precision: precision,
            field: InitialState.make(
                for: .grayScott,
                width: 640,
                height: 640,
                seed: InitialState.defaultSeed
            ),
            threadCount: ProcessInfo.processInfo.activeProcessorCount
        )
        simulation.step(count: 20_000)
        let census = BlobCensus(
            plane: Array(simulation.field.plane(1)),
            width: 640,
            height: 640,
            threshold: 0.25
        )
        print(
            "\(presetName), \(precision): \(census.count) blobs of v > 0.25, "
                + "median elongation \(census.medianElongation)"
        )
        return census
    }

    @Test("Worms, unorm8: few elongated blobs")
    func worms() {
        let census = Self.census("Worms", precision: .unorm8)
        #expect((1...100).contains(census.count))
        #expect(census.medianElongation >= 3)
    }

    @Test("Spots, unorm8: many round blobs")
    func spots() {
        let census = Self.census("Spots", precision: .unorm8)
        #expect(census.count >= 1_000)
        #expect(census.medianElongation <= 2.5)
    }

    @Test("Worms needs unorm8: in float32 it collapses into many round spots")
    func wormsFloat32() {
        let census = Self.census("Worms", precision: .float32)
        #expect(census.count >= 1_000)
        #expect(census.medianElongation <= 2.5)
    }
}
