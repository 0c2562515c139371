/// One of the three reaction-diffusion systems the solver integrates.
///
/// Each model names its chemicals in the order they are stored, in ``Field`` planes and in `.npy`
/// files, and says which entries of ``Parameters`` it reads.
///
/// ```swift
/// let model = Model(name: "gray-scott")!
/// print(model.chemicalNames)  // ["u", "v"]
/// ```
public enum Model: String, CaseIterable, Sendable, Codable, Hashable {
    /// Gray-Scott: `u + 2v → 3v`, `v → P`, with feed `F` and kill `K`.
    case grayScott = "gray-scott"
    /// FitzHugh-Nagumo: an excitable medium with activator `a` and inhibitor `b`.
    case fitzHughNagumo = "fitzhugh-nagumo"
    /// Belousov-Zhabotinsky: three chemicals `a`, `b`, `c` in a cyclic reaction, after 3×3 means.
    case belousovZhabotinsky = "belousov-zhabotinsky"

    /// Looks a model up by its command-line name (`gray-scott`, `fitzhugh-nagumo`,
    /// `belousov-zhabotinsky`), ignoring case.
    public init?(name: String) {
        self.init(rawValue: name.lowercased())
    }

    /// The model's command-line name, such as `gray-scott`.
    public var name: String { rawValue }

    /// The model's name for people, such as `Gray-Scott`.
    public var displayName: String {
        switch self {
        case .grayScott: "Gray-Scott"
        case .fitzHughNagumo: "FitzHugh-Nagumo"
        case .belousovZhabotinsky: "Belousov-Zhabotinsky"
        }
    }

    /// The chemicals' names in storage order.
    public var chemicalNames: [String] {
        switch self {
        case .grayScott: ["u", "v"]
        case .fitzHughNagumo: ["a", "b"]
        case .belousovZhabotinsky: ["a", "b", "c"]
        }
    }

    /// The number of chemicals, which is the number of planes in a ``Field`` of this model.
    public var chemicalCount: Int { chemicalNames.count }

    /// The names of the ``Parameters`` entries the model reads; the others are carried along.
    public var parameterNames: [String] {
        switch self {
        case .grayScott: ["f", "k", "du", "dv"]
        case .fitzHughNagumo: ["timestep", "a0", "a1", "epsilon", "delta", "k1", "k2", "k3"]
        case .belousovZhabotinsky: ["alpha", "beta", "gamma"]
        }
    }

    /// The model's default parameters, as the original editor started with them.
    public var defaultParameters: Parameters {
        presets[0].parameters
    }

    /// The model's named presets, its defaults first.
    public var presets: [Preset] {
        Preset.all.filter { $0.model == self }
    }
}
