import CommandLineKit
import Foundation
import ReactionDiffusion

/// What a finished run leaves to save: its settings, its final state, the step count reached and
/// a thumbnail of the state.
struct RunRecord {
    /// The model.
    var model: Model
    /// The preset the parameters started from, if any.
    var preset: String?
    /// The parameters.
    var parameters: Parameters
    /// The state's precision.
    var precision: Precision
    /// The rule the `unorm8` steps followed.
    var unorm8Rule: Unorm8Rule
    /// The boundary rule.
    var boundary: Boundary
    /// The final state.
    var field: Field
    /// The steps taken from the seed to `field`.
    var step: Int
    /// A PNG of `field` within a 160-pixel square.
    var thumbnail: Data

    /// Records `simulation`'s current state, drawing its thumbnail.
    ///
    /// - Parameters:
    ///   - simulation: the simulation after its run.
    ///   - preset: the preset the parameters started from, if any.
    ///   - step: the steps from the seed, which may exceed the simulation's own count when it
    ///     was resumed from a snapshot.
    /// - Throws: ``CommandError`` when the thumbnail cannot be drawn.
    init(simulation: Simulation, preset: String?, step: Int) throws(CommandError) {
        model = simulation.model
        self.preset = preset
        parameters = simulation.parameters
        precision = simulation.precision
        unorm8Rule = simulation.unorm8Rule
        boundary = simulation.boundary
        field = simulation.field
        self.step = step
        thumbnail = try StatePicture.thumbnailPNG(of: field, model: model)
    }
}
