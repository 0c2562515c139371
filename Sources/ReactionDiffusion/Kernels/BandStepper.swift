/// What a thread of a step needs from the stepper of the state's storage: ``RowStepper`` for
/// ``Precision/float32``, ``LevelRowStepper`` for ``Precision/unorm8``.
protocol BandStepper {
    /// Whether row `y` of any chemical differs, bit for bit, between the target and the source.
    func rowDiffers(_ y: Int, chemicalCount: Int) -> Bool

    /// Computes `rows` of the target from the source with `model`'s rule.
    mutating func step(_ model: Model, _ parameters: Parameters, rows: Range<Int>)
}
