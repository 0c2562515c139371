import Foundation
import ObjectLogStore

/// The versions of a model, oldest first, and the stages that take a store from each to the
/// next: what a store needs when a change cannot be inferred (see <doc:MigratingYourModel>).
///
/// ```swift
/// let plan = MigrationPlan(
///     versions: [
///         ModelVersion("1", [RecipeV1.self]),
///         ModelVersion("2", [RecipeV2.self]),
///     ],
///     stages: [
///         .custom(from: "1", to: "2") { migration in
///             // Version 1 kept servings as text; version 2 keeps a number.
///             for old in try migration.oldObjects("Recipe") {
///                 guard case .string(let text)? = old["servings"] else { continue }
///                 try migration.newObject(for: old, as: RecipeV2.self)?.servings = Int(text) ?? 1
///             }
///         },
///     ]
/// )
/// let container = try PersistentContainer(path: path, plan: plan)
/// ```
///
/// A store at any version of the plan opens with the last one: the stages from its version on
/// run in order, on a copy of the store that replaces it in one rename when every stage has
/// succeeded. An error (or a crash) at any point leaves the store at its old version, readable
/// by the app that wrote it.
public struct MigrationPlan: Sendable {
    /// The versions, oldest first; the last is the model the container opens with.
    public var versions: [ModelVersion]
    /// The stages; each takes a store from one version to the next one in ``versions``.
    public var stages: [MigrationStage]

    /// Creates a plan.
    public init(versions: [ModelVersion], stages: [MigrationStage]) {
        self.versions = versions
        self.stages = stages
    }
}

/// One identified version of a model: the entity classes that describe it.
public struct ModelVersion: Sendable {
    /// A name for the version, used by ``MigrationStage`` and in errors.
    public var identifier: String
    /// The entity classes.
    public var entities: [ManagedObject.Type]

    /// Creates a version.
    public init(_ identifier: String, _ entities: [ManagedObject.Type]) {
        self.identifier = identifier
        self.entities = entities
    }
}

/// How a store goes from one model version to the next.
public enum MigrationStage: Sendable {
    /// The inferred migration (the one a plain open does).
    case lightweight(from: String, to: String)
    /// The inferred migration where it can be inferred, then `migrate`, which sees every object
    /// as the old version stored it and a context on the new version, and makes the new
    /// version's objects what they should be; the context is saved after it returns.
    ///
    /// Properties whose change cannot be inferred start at their default in the new context.
    case custom(
        from: String,
        to: String,
        migrate: @Sendable (MigrationStageContext) throws -> Void
    )

    /// The inferred migration where it can be inferred, then, for each old entity named in
    /// `entities`, its closure once per object, as the store is rewritten in one pass (a
    /// compaction): for changes made object by object (a type change, a computed value), at
    /// close to compaction's speed, without loading the objects into a context.
    ///
    /// The closure sees the old object as the old version stored it and the new one as the
    /// inferred migration makes it, and sets the new one's values. It cannot change
    /// relationships (their inverses would not follow) or create and delete objects: a
    /// ``custom(from:to:migrate:)`` stage can.
    ///
    /// ```swift
    /// .rewrite(from: "1", to: "2", entities: [
    ///     "Recipe": { old, new in
    ///         guard case .string(let text)? = old["servings"] else { return }
    ///         new["servings"] = .int(Int64(text) ?? 1)
    ///     },
    /// ])
    /// ```
    case rewrite(from: String, to: String, entities: [String: ObjectRewrite])

    /// Sets the values of one object of the new version (`new`) from the old version's
    /// (`old`), in a ``rewrite(from:to:entities:)`` stage.
    public typealias ObjectRewrite =
        @Sendable (_ old: StoredObject, _ new: inout MigratedObject) throws -> Void

    /// The version the stage starts from.
    public var source: String {
        switch self {
        case .lightweight(let from, _), .custom(let from, _, _), .rewrite(let from, _, _): from
        }
    }

    /// The version the stage ends at.
    public var destination: String {
        switch self {
        case .lightweight(_, let to), .custom(_, let to, _), .rewrite(_, let to, _): to
        }
    }
}

/// What a custom ``MigrationStage`` works with: the old objects and the new context together.
public final class MigrationStageContext {
    /// The context on the new version; objects that continue old ones have the same keys.
    public let context: ManagedObjectContext
    private let old: [String: [GenericObject]]
    private let tags: [String: EntityTag]
    /// The classes whose objects have been fetched into ``context`` in bulk.
    private var fetched: Set<ObjectIdentifier> = []

    init(
        context: ManagedObjectContext,
        old: [String: [GenericObject]],
        tags: [String: EntityTag]
    ) {
        self.context = context
        self.old = old
        self.tags = tags
    }

    /// The names of the old version's entities.
    public var oldEntityNames: [String] { old.keys.sorted() }

    /// Every object of the old version's entity `name`, with its values as that version stored
    /// them (by property name), in key order.
    /// - Throws: ``ObjectLogError/Code/invalidArgument`` if the old version has no such entity.
    public func oldObjects(_ name: String) throws(ObjectLogError) -> [GenericObject] {
        guard let objects = old[name] else {
            throw ObjectLogError(
                .invalidArgument,
                "the old model version has no entity '\(name)' (its entities: "
                    + oldEntityNames.joined(separator: ", ") + ")"
            )
        }
        return objects
    }

    /// The object of the new version that continues `old` (same key), or nil if its entity was
    /// removed, or it is not of type `type`.
    public func newObject<T: ManagedObject>(
        for old: GenericObject,
        as type: T.Type
    ) throws(ObjectLogError) -> T? {
        guard let tag = tags[old.entity],
            let entity = context.model.entities.first(where: { $0.tag == tag })
        else { return nil }
        // One bulk fetch of the class's objects instead of one load per object: stages
        // usually visit every object.
        if fetched.insert(ObjectIdentifier(type)).inserted, context.model.entity(for: type) != nil {
            _ = try context.fetch(type)
        }
        let object = try context.existingObject(
            with: ObjectID(entityName: entity.name, key: old.key)
        )
        return object as? T
    }
}

/// How far a staged migration has come, reported before each stage, now and then during a
/// rewriting stage, and at the end.
public struct MigrationProgress: Sendable, Equatable {
    /// The stages done.
    public var completedStages: Int
    /// The stages to run in all (from the store's version to the plan's last).
    public var stageCount: Int
    /// The stage running or about to run, as `from -> to`; nil at the end.
    public var nextStage: String?
    /// The share of that stage done, from 0 to 1 (0 before it starts; a custom stage reports
    /// none in between).
    public var stageFraction: Double

    /// Creates a report.
    public init(
        completedStages: Int,
        stageCount: Int,
        nextStage: String?,
        stageFraction: Double = 0
    ) {
        self.completedStages = completedStages
        self.stageCount = stageCount
        self.nextStage = nextStage
        self.stageFraction = stageFraction
    }

    /// The share of the whole migration done, from 0 to 1.
    public var fraction: Double {
        stageCount == 0
            ? 1 : (Double(completedStages) + min(max(stageFraction, 0), 1)) / Double(stageCount)
    }
}
