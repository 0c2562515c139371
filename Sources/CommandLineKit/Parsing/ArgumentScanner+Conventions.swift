extension ArgumentScanner {
    /// What a scanner takes for an option and for an option's value.
    ///
    /// Tools differ here, and each keeps its own: a tool with short options (`-o`) refuses `-x`
    /// as a value, so that a forgotten value is reported rather than swallowing the next option;
    /// a tool whose options are all long takes it as the value.
    public struct Conventions: Hashable, Sendable {
        /// Whether a dash followed by a digit or a point (`-5`, `-0.5`, `-.5`) is an argument
        /// (a positional argument or a value) rather than an option.
        public var negativeNumbersAreValues: Bool
        /// Whether a value given as the next argument may start with a single dash.
        ///
        /// When it may, `--notes -x` gives `-x` as the value; when not, only an argument that
        /// is not an option can be a value, and `--notes=-x` gives such a value. A value after
        /// a space never starts with `--`.
        public var valuesMayStartWithSingleDash: Bool

        /// Creates conventions.
        public init(negativeNumbersAreValues: Bool, valuesMayStartWithSingleDash: Bool) {
            self.negativeNumbersAreValues = negativeNumbersAreValues
            self.valuesMayStartWithSingleDash = valuesMayStartWithSingleDash
        }
    }
}
