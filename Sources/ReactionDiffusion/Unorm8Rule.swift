import CReactionDiffusionSupport

/// How a ``Precision/unorm8`` step computes the next levels from the current ones.
///
/// A state stored in 8 bits is rounded to a level after every step, so the arithmetic between
/// two roundings decides which level a cell lands on: two rules give slightly different
/// (equally faithful) runs. Each rule is fixed forever and numbered, so that a state saved
/// under one continues under the same one, bit for bit; new simulations use ``current``.
///
/// - ``floatingPoint`` (rule 1) expands each level k to the `Float` nearest k/255, applies the
///   model's `Float` formula (as ``Precision/float32`` does) and rounds back to a level.
/// - ``fixedPoint`` (rule 2) computes Gray-Scott on the levels in 16-bit fixed point, each
///   value carried to 1/128 of a level, with the parameters rounded to 2⁻¹⁵ (`f`, `f + k`) and
///   2⁻¹⁷ (`du`, `dv`): twice as many cells per vector instruction as `Float`, and the clamp
///   to [0, 255] comes free, which makes 8-bit states faster to step than `Float` ones. It
///   covers Gray-Scott with parameters in its stable ranges (`du`, `dv` in [0, 0.25], `f` and
///   `k` not negative, `f + k` ≤ 1); other models and parameters step by rule 1 under it.
///
/// The two rules agree on about 99.9% of the cells of one step, and never by more than one
/// level; over thousands of steps the patterns differ in detail, not in kind (every preset
/// forms its named pattern under both).
public enum Unorm8Rule: Int, CaseIterable, Sendable, Codable, Hashable {
    /// Rule 1: the `Float` formula on the `Float` nearest each k/255, rounded back to a level.
    case floatingPoint = 1
    /// Rule 2: Gray-Scott in 16-bit fixed point on the levels; rule 1 elsewhere.
    case fixedPoint = 2

    /// The rule new simulations use.
    public static let current = Unorm8Rule.fixedPoint

    /// Whether a step of `model` with `parameters` under this rule uses its own arithmetic
    /// rather than rule 1's: true for ``fixedPoint`` with Gray-Scott in its stable ranges.
    public func computesInFixedPoint(_ model: Model, _ parameters: Parameters) -> Bool {
        guard self == .fixedPoint, model == .grayScott else { return false }
        var copy = rd_parameters(parameters)
        return rd_unorm8_fixed_rule_applies(Int32(RD_MODEL_GRAY_SCOTT), &copy) != 0
    }
}
