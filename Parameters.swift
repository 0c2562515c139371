/// The original editor's parameter record: fifteen rates and constants shared by all models.
///
/// The original kept one record for every model, so a configuration saved with one model keeps the
/// values the others would use. Each ``Model`` reads only its own entries (see
/// ``Model/parameterNames``); the rest round-trip untouched.
///
/// Values are addressed by name for the command line and for storage:
///
/// ```swift
/// var parameters = Model.grayScott.defaultParameters
/// try parameters.setValue(0.06, forName: "f")
/// let copy = try Parameters(values: parameters.values)
/// assert(copy == parameters)
/// ```
public struct Parameters: Sendable, Hashable, Codable {
    /// FitzHugh-Nagumo: the inhibitor's constant offset.
    public var a0: Float
    /// FitzHugh-Nagumo: the inhibitor's self-decay rate.
    public var a1: Float
    /// FitzHugh-Nagumo: the inhibitor's time scale.
    public var epsilon: Float
    /// FitzHugh-Nagumo: the inhibitor's diffusion rate relative to the activator's.
    public var delta: Float
    /// FitzHugh-Nagumo: the activator's linear growth rate.
    public var k1: Float
    /// FitzHugh-Nagumo: the activator's quadratic term.
    public var k2: Float
    /// FitzHugh-Nagumo: the activator's weight in the inhibitor's production.
    public var k3: Float
    /// Gray-Scott: the feed rate `F`.
    public var f: Float
    /// Gray-Scott: the kill rate `K`.
    public var k: Float
    /// Gray-Scott: `u`'s diffusion rate.
    public var du: Float
    /// Gray-Scott: `v`'s diffusion rate.
    public var dv: Float
    /// Belousov-Zhabotinsky: the rate of `a`'s reaction with `b`.
    public var alpha: Float
    /// Belousov-Zhabotinsky: the rate of `b`'s reaction with `c`.
    public var beta: Float
    /// Belousov-Zhabotinsky: the rate of `c`'s reaction with `a`.
    public var gamma: Float
    /// FitzHugh-Nagumo: the explicit Euler time step.
    public var timestep: Float

    /// Creates a parameter record; entries not given are zero.
    public init(
        a0: Float = 0,
        a1: Float = 0,
        epsilon: Float = 0,
        delta: Float = 0,
        k1: Float = 0,
        k2: Float = 0,
        k3: Float = 0,
        f: Float = 0,
        k: Float = 0,
        du: Float = 0,
        dv: Float = 0,
        alpha: Float = 0,
        beta: Float = 0,
        gamma: Float = 0,
        timestep: Float = 0
    ) {
        self.a0 = a0
        self.a1 = a1
        self.epsilon = epsilon
        self.delta = delta
        self.k1 = k1
        self.k2 = k2
        self.k3 = k3
        self.f = f
        self.k = k
        self.du = du
        self.dv = dv
        self.alpha = alpha
        self.beta = beta
        self.gamma = gamma
        self.timestep = timestep
    }

    /// All fifteen entry names, in the original record's order.
    public static let names: [String] = [
        "a0", "a1", "epsilon", "delta", "k1", "k2", "k3", "f", "k", "du", "dv", "alpha", "beta",
        "gamma", "timestep",
    ]

    private static let keyPaths: [String: WritableKeyPath<Parameters, Float>] = [
        "a0": \.a0, "a1": \.a1, "epsilon": \.epsilon, "delta": \.delta, "k1": \.k1, "k2": \.k2,
        "k3": \.k3, "f": \.f, "k": \.k, "du": \.du, "dv": \.dv, "alpha": \.alpha, "beta": \.beta,
        "gamma": \.gamma, "timestep": \.timestep,
    ]

    /// Creates a parameter record from values by name.
    ///
    /// - Parameter values: a value for some or all of ``names``; names missing are zero.
    /// - Throws: ``ParameterError`` when a name is not one of ``names``.
    public init(values: [String: Float]) throws(ParameterError) {
        self.init()
        for (name, value) in values {
            try setValue(value, forName: name)
        }
    }

    /// Every entry by name, all fifteen of them.
    public var values: [String: Float] {
        var result: [String: Float] = [:]
        for name in Self.names {
            result[name] = self[keyPath: Self.keyPaths[name]!]
        }
        return result
    }

    /// Returns the value of the entry called `name` (case-insensitive), or `nil` if there is none.
    public func value(forName name: String) -> Float? {
        Self.keyPaths[name.lowercased()].map { self[keyPath: $0] }
    }

    /// Sets the entry called `name` (case-insensitive).
    ///
    /// - Throws: ``ParameterError`` when `name` is not one of ``names``.
    public mutating func setValue(_ value: Float, forName name: String) throws(ParameterError) {
        guard let keyPath = Self.keyPaths[name.lowercased()] else {
            throw ParameterError(
                "unknown parameter '\(name)'; known parameters: \(Self.names.joined(separator: ", "))"
            )
        }
        self[keyPath: keyPath] = value
    }
}
