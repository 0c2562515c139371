/// How the state is stored between steps.
public enum Precision: String, CaseIterable, Sendable, Codable, Hashable {
    /// The original's RGBA 8-bit texture: after every step each chemical is clamped to [0, 1] and
    /// rounded to the nearest multiple of 1/255 (ties to even). The default: several presets only
    /// form their named patterns with it.
    ///
    /// A ``Simulation`` stores such a state as the texture did, one byte k per value for k/255
    /// (a quarter of the memory of ``float32``), and steps it by its ``Unorm8Rule``;
    /// ``Simulation/field`` hands out the `Float` nearest each k/255.
    case unorm8
    /// Plain 32-bit floats, without clamping or rounding.
    case float32
}
