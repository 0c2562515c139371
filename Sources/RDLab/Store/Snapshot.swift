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
