/// A named parameter set of one model, as the original editor offered them.
///
/// ```swift
/// let worms = Preset.named("worms", for: .grayScott)!
/// var simulation = Simulation(model: .grayScott, parameters: worms.parameters, ...)
/// ```
public struct Preset: Sendable, Hashable {
    /// The preset's name, such as `Worms`.
    public var name: String
    /// The model the preset belongs to.
    public var model: Model
    /// The preset's parameters.
    public var parameters: Parameters

    /// Creates a preset.
    public init(name: String, model: Model, parameters: Parameters) {
        self.name = name
        self.model = model
        self.parameters = parameters
    }

    /// Finds a model's preset by name, ignoring case.
    public static func named(_ name: String, for model: Model) -> Preset? {
        all.first { $0.model == model && $0.name.lowercased() == name.lowercased() }
    }

    /// FitzHugh-Nagumo's default preset.
    static let liquid = Preset(
        name: "Liquid",
        model: .fitzHughNagumo,
        parameters: Parameters(
            a0: 0.289062,
            a1: 0.177734,
            epsilon: 1.152344,
            delta: 1.25,
            k1: 2.0996,
            k2: 0.083008,
            k3: 1.723,
            timestep: 0.02
        )
    )

    /// Every preset of every model; each model's defaults come first among its own.
    public static let all: [Preset] = [
        grayScott("Default", f: 0.057031, k: 0.063672, du: 0.155762, dv: 0.0644),
        grayScott("Worms", f: 0.049023, k: 0.070117, du: 0.172852, dv: 0.058594),
        grayScott("Spots", f: 0.033945, k: 0.067461, du: 0.144531, dv: 0.046387),
        grayScott("Strings", f: 0.050391, k: 0.070508, du: 0.182129, dv: 0.062012),
        grayScott("Bifurcation", f: 0.023867, k: 0.0725, du: 0.194824, dv: 0.010254),
        liquid,
        Preset(
            name: "SpiralCoral",
            model: .fitzHughNagumo,
            parameters: Parameters(
                a0: 0.664062,
                a1: 0.451172,
                epsilon: 0.136719,
                delta: 4.0,
                k1: 1.645508,
                k2: 0.0097,
                k3: 2.2314,
                timestep: 0.02
            )
        ),
        Preset(
            name: "Default",
            model: .belousovZhabotinsky,
            parameters: Parameters(alpha: 1, beta: 1, gamma: 1)
        ),
    ]

    private static func grayScott(
        _ name: String,
        f: Float,
        k: Float,
        du: Float,
        dv: Float
    ) -> Preset {
        Preset(name: name, model: .grayScott, parameters: Parameters(f: f, k: k, du: du, dv: dv))
    }
}
