import Foundation
import ReactionDiffusion
import Testing

@Suite("Parameters and presets")
struct ParametersTests {
    /// A record whose fifteen entries are all different.
    static func distinct() throws -> Parameters {
        var values: [String: Float] = [:]
        for (index, name) in Parameters.names.enumerated() {
            values[name] = Float(index + 1) * 0.125 - 0.5
        }
        return try Parameters(values: values)
    }

    @Test("all fifteen entries round-trip by name")
    func roundTripByName() throws {
        let parameters = try Self.distinct()
        #expect(Parameters.names.count == 15)
        #expect(Set(Parameters.names).count == 15)
        #expect(parameters.values.count == 15)
        #expect(Set(parameters.values.values).count == 15)
        #expect(try Parameters(values: parameters.values) == parameters)
        for name in Parameters.names {
            var copy = Parameters()
            try copy.setValue(parameters.value(forName: name)!, forName: name.uppercased())
            #expect(copy.value(forName: name) == parameters.value(forName: name))
            #expect(
                copy.values.filter { $0.value != 0 }.count
                    == (parameters.value(forName: name) == 0 ? 0 : 1)
            )
        }
    }

    @Test("all fifteen entries round-trip through JSON")
    func roundTripJSON() throws {
        let parameters = try Self.distinct()
        let data = try JSONEncoder().encode(parameters)
        #expect(try JSONDecoder().decode(Parameters.self, from: data) == parameters)
    }

    @Test("an unknown name is refused with a message naming it")
    func unknownName() {
        var parameters = Parameters()
        #expect(throws: ParameterError.self) { try parameters.setValue(1, forName: "feed") }
        do {
            try parameters.setValue(1, forName: "feed")
        } catch {
            #expect(error.message.contains("'feed'"))
        }
        #expect(parameters.value(forName: "feed") == nil)
    }

    @Test("presets have the issue's values and each model's defaults come first")
    func presetValues() {
        let worms = Preset.named("worms", for: .grayScott)
        #expect(
            worms?.parameters == Parameters(f: 0.049023, k: 0.070117, du: 0.172852, dv: 0.058594)
        )
        #expect(
            Model.grayScott.defaultParameters
                == Parameters(f: 0.057031, k: 0.063672, du: 0.155762, dv: 0.0644)
        )
        #expect(
            Model.grayScott.presets.map(\.name) == [
                "Default", "Worms", "Spots", "Strings", "Bifurcation",
            ]
        )
        #expect(Model.fitzHughNagumo.presets.map(\.name) == ["Liquid", "SpiralCoral"])
        #expect(Model.fitzHughNagumo.defaultParameters.timestep == 0.02)
        #expect(Preset.named("SPIRALCORAL", for: .fitzHughNagumo)?.parameters.delta == 4)
        #expect(
            Model.belousovZhabotinsky.defaultParameters == Parameters(alpha: 1, beta: 1, gamma: 1)
        )
        #expect(Preset.named("Worms", for: .fitzHughNagumo) == nil)
    }

    @Test("every preset is within the stable range; out-of-range values are named")
    func stability() {
        for preset in Preset.all {
            #expect(
                preset.parameters.stabilityProblems(for: preset.model).isEmpty,
                "\(preset.name)"
            )
        }
        var parameters = Model.grayScott.defaultParameters
        parameters.du = 0.3
        let problems = parameters.stabilityProblems(for: .grayScott)
        #expect(problems.count == 1)
        #expect(problems.first?.hasPrefix("du = 0.3 is outside [0.0, 0.25]") == true)
        parameters.du = .nan
        #expect(
            parameters.stabilityProblems(for: .grayScott).first?.contains("not a finite number")
                == true
        )
        var fhn = Model.fitzHughNagumo.defaultParameters
        fhn.delta = 20
        #expect(fhn.stabilityProblems(for: .fitzHughNagumo).count == 1)
        fhn.timestep = 0
        #expect(fhn.stabilityProblems(for: .fitzHughNagumo).first?.hasPrefix("timestep") == true)
    }

    @Test("models are found by their command-line names")
    func modelNames() {
        #expect(Model(name: "Gray-Scott") == .grayScott)
        #expect(Model(name: "fitzhugh-nagumo") == .fitzHughNagumo)
        #expect(Model(name: "belousov-zhabotinsky")?.chemicalNames == ["a", "b", "c"])
        #expect(Model(name: "grayscott") == nil)
    }
}
