import Foundation
import ObjectLog
import ReactionDiffusion

/// A saved configuration: a named model with all its parameters, grid and precision, as the
/// original editor's record kept them, plus a thumbnail of its latest state.
///
/// Its ``snapshots`` hold the states it has reached; deleting the configuration deletes them.
final class Configuration: ManagedObject {
    /// The name, unique in the store.
    @Attribute(.unique) var name = ""
    /// The model's name (``ReactionDiffusion/Model/name``).
    @Attribute var model = Model.grayScott.name
    /// The preset the parameters started from, if any.
    @Attribute var preset: String? = nil
    /// FitzHugh-Nagumo's time step.
    @Attribute var timestep: Float = 0
    /// FitzHugh-Nagumo's a0.
    @Attribute var a0: Float = 0
    /// FitzHugh-Nagumo's a1.
    @Attribute var a1: Float = 0
    /// FitzHugh-Nagumo's epsilon.
    @Attribute var epsilon: Float = 0
    /// FitzHugh-Nagumo's delta.
    @Attribute var delta: Float = 0
    /// FitzHugh-Nagumo's k1.
    @Attribute var k1: Float = 0
    /// FitzHugh-Nagumo's k2.
    @Attribute var k2: Float = 0
    /// FitzHugh-Nagumo's k3.
    @Attribute var k3: Float = 0
    /// Gray-Scott's feed rate F.
    @Attribute var f: Float = 0
    /// Gray-Scott's kill rate K.
    @Attribute var k: Float = 0
    /// Gray-Scott's diffusion rate of u.
    @Attribute var du: Float = 0
    /// Gray-Scott's diffusion rate of v.
    @Attribute var dv: Float = 0
    /// Belousov-Zhabotinsky's alpha.
    @Attribute var alpha: Float = 0
    /// Belousov-Zhabotinsky's beta.
    @Attribute var beta: Float = 0
    /// Belousov-Zhabotinsky's gamma.
    @Attribute var gamma: Float = 0
    /// The state's precision (``ReactionDiffusion/Precision`` raw value).
    @Attribute var precision = Precision.unorm8.rawValue
    /// The boundary rule (``ReactionDiffusion/Boundary`` raw value).
    @Attribute var boundary = Boundary.zero.rawValue
    /// The grid's width in cells.
    @Attribute var width = 0
    /// The grid's height in cells.
    @Attribute var height = 0
    /// When the configuration was first saved.
    @Attribute var created = Date()
    /// When it was last saved.
    @Attribute var modified = Date()
    /// Whether this is the automatic save of the last run.
    @Attribute var autoSaved = false
    /// A PNG of the latest state within a 160-pixel square, in a blob file beside the store
    /// (``LabStore`` stores data from 1 KiB in blobs), so that editing or renaming the
    /// configuration writes only its small record (kept inline by rdlab's first two models;
    /// stores they wrote are migrated on open).
    @Attribute(.externalStorage) var thumbnail: Data? = nil
    /// Free-text notes, as in a lab notebook; empty when there are none.
    @Attribute var notes = ""
    /// Tags for finding the configuration again (`rdlab list --tag`, the gallery's filter), in
    /// the order they were added, without duplicates (compared ignoring case).
    @Attribute var tags: [String] = []
    /// The states reached, deleted with the configuration.
    @Relationship(inverse: \Snapshot.configuration, deleteRule: .cascade)
    var snapshots: Set<Snapshot>

    override func willSave() {
        modified = Date()
    }

    /// The model, or `nil` when the stored name is unknown to this version.
    var modelValue: Model? { Model(name: model) }

    /// The precision, `unorm8` when the stored name is unknown.
    var precisionValue: Precision { Precision(rawValue: precision) ?? .unorm8 }

    /// The boundary rule, `zero` when the stored name is unknown.
    var boundaryValue: Boundary { Boundary(rawValue: boundary) ?? .zero }

    /// All fifteen parameters.
    var parameters: Parameters {
        get {
            Parameters(
                a0: a0,
                a1: a1,
                epsilon: epsilon,
                delta: delta,
                k1: k1,
                k2: k2,
                k3: k3,
                f: f,
                k: k,
                du: du,
                dv: dv,
                alpha: alpha,
                beta: beta,
                gamma: gamma,
                timestep: timestep
            )
        }
        set {
            a0 = newValue.a0
            a1 = newValue.a1
            epsilon = newValue.epsilon
            delta = newValue.delta
            k1 = newValue.k1
            k2 = newValue.k2
            k3 = newValue.k3
            f = newValue.f
            k = newValue.k
            du = newValue.du
            dv = newValue.dv
            alpha = newValue.alpha
            beta = newValue.beta
            gamma = newValue.gamma
            timestep = newValue.timestep
        }
    }

    /// Whether the configuration has `tag`, ignoring case.
    func hasTag(_ tag: String) -> Bool {
        tags.contains { $0.lowercased() == tag.lowercased() }
    }

    /// The snapshot with the most steps, if any.
    var latestSnapshot: Snapshot? {
        snapshots.max { ($0.step, $0.savedAt) < ($1.step, $1.savedAt) }
    }
}
