import CommandLineKit
import ReactionDiffusion

extension OptionDefinition {
    /// `--unorm8-rule 1|2`, which `run` and `demo` take, with one help text so that both say
    /// the same about the default.
    static let unorm8Rule = OptionDefinition.option(
        "--unorm8-rule",
        value: "1|2",
        help: """
            How unorm8 steps round: 2 (default: Gray-Scott in 16-bit fixed
            point, which steps faster than float32) or 1 (the original's
            exact 8-bit rounding, to reproduce its states). For Gray-Scott
            they differ by one level in about 0.1% of cells a step, so runs
            drift apart in detail; other models step the same by either.
            """
    )
}

extension ArgumentScanner {
    /// The rule `option` names: `1` or `2`, exactly.
    ///
    /// Not ``ArgumentScanner/choice(for:from:)``: its "did you mean" would offer a rule for
    /// any mistyped digit, and a rule chosen by a guess computes other states.
    ///
    /// - Throws: ``CommandError`` (usage) when the value is missing or names no rule.
    mutating func unorm8Rule(for option: String) throws(CommandError) -> Unorm8Rule {
        let text = try value(for: option)
        guard let rule = Unorm8Rule.allCases.first(where: { String($0.rawValue) == text }) else {
            throw .usage(
                "unknown value '\(text)' for '\(option)'; use 1 (the original's 8-bit rounding) "
                    + "or 2 (the default)"
            )
        }
        return rule
    }
}
