import ReactionDiffusion
import Testing

@Suite("rdlab presets, end to end")
struct PresetsCommandTests {
    @Test("lists every preset of every model with the parameters it sets")
    func all() throws {
        let result = try RDLabProcess.run(["presets"])
        #expect(result.exitCode == 0)
        #expect(result.standardError == "")
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.contains("gray-scott (u, v)"))
        #expect(lines.contains("belousov-zhabotinsky (a, b, c)"))
        #expect(
            lines.contains {
                $0.hasPrefix("  Worms ")
                    && $0.hasSuffix("f=0.049023 k=0.070117 du=0.172852 dv=0.058594")
            }
        )
        for preset in Preset.all {
            #expect(lines.contains { $0.hasPrefix("  \(preset.name) ") }, "\(preset.name)")
        }
    }

    @Test("--model limits the list to one model")
    func oneModel() throws {
        let result = try RDLabProcess.run(["presets", "--model", "fitzhugh-nagumo"])
        #expect(result.exitCode == 0)
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines.first == "fitzhugh-nagumo (a, b)")
        #expect(lines[2].hasPrefix("  SpiralCoral  timestep=0.02 a0=0.664062"))
    }
}
