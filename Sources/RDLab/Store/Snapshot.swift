import CommandLineKit
import Foundation
import ObjectLog
import ReactionDiffusion

/// One saved state of a configuration: the step it was reached at, the whole field and a
/// thumbnail.
///
/// The field is kept in external storage, encoded by ``StateCoding``: one byte per chemical per
/// cell in `unorm8` precision, the exact 32-bit floats in `float32`, so that resuming from it
/// continues exactly as the run would have.
final class Snapshot: ManagedObject {
    /// The number of steps taken from the seed to this state.
    @Attribute var step = 0
    /// The encoding of ``state``: `unorm8` or `float32`.
    @Attribute var precision = Precision.unorm8.rawValue
    /// The ``ReactionDiffusion/Unorm8Rule`` a `unorm8` state was computed with.
    ///
    /// Resuming the state continues with it. States saved before there were two rules (stores
    /// written by the lab's first three models) were computed with rule 1, the default they
    /// migrate with.
    @Attribute var unorm8Rule = Unorm8Rule.floatingPoint.rawValue
    /// The number of chemicals in ``state``.
    @Attribute var chemicalCount = 0
    /// The grid's width in cells.
    @Attribute var width = 0
    /// The grid's height in cells.
    @Attribute var height = 0
    /// The encoded field.
    @Attribute(.externalStorage) var state = Data()
    /// A PNG of the state within a 160-pixel square.
    @Attribute var thumbnail: Data? = nil
    /// When the state was saved (called `timestamp` by the lab's first model: stores it wrote
    /// are migrated on open; `--json` output keeps the key `timestamp`).
    @Attribute(originalName: "timestamp") var savedAt = Date()
    /// The configuration the state belongs to.
    @Relationship var configuration: Configuration?

    /// The rule of ``unorm8Rule``.
    ///
    /// - Throws: ``CommandError`` (data error) for a rule this rdlab does not know.
    func rule() throws(CommandError) -> Unorm8Rule {
        guard let rule = Unorm8Rule(rawValue: unorm8Rule) else {
            throw CommandError(
                "snapshot at step \(step) was computed with unorm8 rule \(unorm8Rule), which this "
                    + "rdlab does not know",
                exitCode: .dataError
            )
        }
        return rule
    }

    /// Decodes the field.
    ///
    /// - Throws: ``CommandError`` (data error) when the stored bytes do not fit the stored shape.
    func field() throws(CommandError) -> Field {
        guard let precision = Precision(rawValue: precision) else {
            throw CommandError(
                "snapshot at step \(step) has an unknown precision '\(self.precision)'",
                exitCode: .dataError
            )
        }
        return try StateCoding.decode(
            state,
            precision: precision,
            chemicalCount: chemicalCount,
            width: width,
            height: height
        )
    }
}
