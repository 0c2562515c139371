import ObjectLogStore

/// What opening a store with a model would do, found without writing anything.
///
/// ```swift
/// let preview = try PersistentContainer.migrationPreview(at: path, for: [Recipe.self])
/// for change in preview.changes { print(change) }
/// if preview.outcome == .refused { print(preview.refusals.joined(separator: "\n")) }
/// ```
///
/// An open that would be refused throws ``ObjectLogError/Code/modelMismatch`` with the same
/// lines; `objectlog schema PATH --check-model MODEL` prints the same preview.
public struct MigrationPreview: Sendable, CustomStringConvertible {
    /// What the open does.
    public enum Outcome: String, Sendable, Hashable {
        /// There is no store, or one without a model: the open records the model.
        case createsStore
        /// The store is at the model's version: the open changes nothing.
        case opensUnchanged
        /// The open migrates the store in one transaction, making ``changes``.
        case migrates
        /// The open is refused, for the reasons in ``refusals``; nothing is written.
        case refused
    }

    /// What the open does.
    public var outcome: Outcome
    /// The hash of the model version that wrote the store last; nil without a store or model.
    public var storeVersion: String?
    /// The hash the model has in this store (``ManagedObjectModel/versionHash`` after the
    /// store's entity tags are applied: what `ObjectLog.modelHash` would say after the open).
    public var modelVersion: String
    /// How many model versions the store records.
    public var storeVersionCount: Int
    /// Where the model is one of the store's earlier versions (1 for the first): the store was
    /// written by a newer version of the model, and the open is refused.
    public var olderRecordedVersion: Int?
    /// The changes a migration makes, with the objects each touches.
    ///
    /// Empty unless the store is at another version.
    public var changes: [SchemaChange]
    /// Why the open is refused, one line each; empty unless ``outcome`` is
    /// ``Outcome/refused``.
    public var refusals: [String]

    /// Creates a preview.
    public init(
        outcome: Outcome,
        storeVersion: String?,
        modelVersion: String,
        storeVersionCount: Int = 0,
        olderRecordedVersion: Int? = nil,
        changes: [SchemaChange] = [],
        refusals: [String] = []
    ) {
        self.outcome = outcome
        self.storeVersion = storeVersion
        self.modelVersion = modelVersion
        self.storeVersionCount = storeVersionCount
        self.olderRecordedVersion = olderRecordedVersion
        self.changes = changes
        self.refusals = refusals
    }

    /// Whether the store was written by a newer version of the model than this one.
    public var storeIsNewer: Bool { olderRecordedVersion != nil }

    /// A summary line, then each change and each refusal on a line of its own.
    public var description: String {
        var lines: [String]
        switch outcome {
        case .createsStore: lines = ["creates the store with model \(modelVersion)"]
        case .opensUnchanged: lines = ["opens unchanged: the store is at model \(modelVersion)"]
        case .migrates:
            lines = ["migrates the store from model \(storeVersion ?? "?") to \(modelVersion)"]
        case .refused:
            lines = ["refused: the store (model \(storeVersion ?? "none")) is left unchanged"]
        }
        lines += changes.map { "  " + $0.description }
        lines += refusals.map { "  refused: " + $0 }
        return lines.joined(separator: "\n")
    }
}

/// Who decided that a store may move to another model version.
enum MigrationAuthority: Sendable, Equatable {
    /// A plain open: changes that the migration infers, except removals of stored data that
    /// the model does not declare.
    case automatic
    /// A plain open that migrates nothing (``PersistentContainer``'s
    /// `migratesStoreAutomatically: false`).
    case manual
    /// A stage of a ``MigrationPlan``, whose versions declare every change; with
    /// `acceptingUninferred`, a stage that sets what cannot be inferred itself.
    case planned(acceptingUninferred: Bool)

    var isPlanned: Bool {
        if case .planned = self { return true }
        return false
    }
}

/// What an open of a store with a model does: the model's entity tags in the store, the
/// mapping of a migration, and the preview that says so.
struct MigrationDecision {
    /// The tags the model takes (by entity name).
    var tags: [String: EntityTag] = [:]
    /// The mapping from the stored version, when the open migrates or is refused for it.
    var mapping: SchemaMapping?
    var preview: MigrationPreview

    /// Decides how a store that records `history` opens with the model of `schema`, whose
    /// `removals` are declared, under `authority`; `count` gives the live objects of an entity
    /// tag (nil: of every entity).
    init(
        history: ModelHistory?,
        schema: ModelSchema,
        removals: Set<String>,
        authority: MigrationAuthority,
        count: (EntityTag?) throws(ObjectLogError) -> Int
    ) throws(ObjectLogError) {
        guard let history, let stored = history.current else {
            preview = MigrationPreview(
                outcome: .createsStore,
                storeVersion: nil,
                modelVersion: schema.versionHash
            )
            let foreign = try count(nil)
            if history == nil, foreign > 0 {
                preview.outcome = .refused
                preview.refusals = [
                    "the store holds \(foreign) object(s) but no ObjectLog model: it was not "
                        + "written by ObjectLog's engine"
                ]
            }
            return
        }
        tags = SchemaMapping.tags(
            for: schema.entities.map { ($0.name, $0.originalName) },
            continuing: stored.schema,
            earlier: history.versions.dropLast().reversed().map(\.schema),
            used: history.usedTags
        )
        let retagged = schema.retagged(tags)
        preview = MigrationPreview(
            outcome: .opensUnchanged,
            storeVersion: stored.hash,
            modelVersion: retagged.versionHash,
            storeVersionCount: history.versions.count
        )
        guard stored.hash != retagged.versionHash else { return }
        preview.outcome = .refused
        // A plan names its versions: one may return to an earlier model on purpose.
        if !authority.isPlanned, let earlier = history.earlierVersion(matching: schema) {
            let version = history.versions[earlier]
            preview.olderRecordedVersion = earlier + 1
            preview.modelVersion = version.hash
            preview.refusals = [
                "the store was written by a newer version of its model (\(stored.hash), since "
                    + "transaction \(stored.transaction)) than this one (\(version.hash), version "
                    + "\(earlier + 1) of \(history.versions.count)): open it with the newer app; "
                    + "this one neither reads nor writes it"
            ]
            return
        }
        let mapping = SchemaMapping(from: stored.schema, to: retagged)
        self.mapping = mapping
        preview.changes = mapping.changes(
            from: stored.schema,
            to: retagged,
            counts: try Dictionary(
                uniqueKeysWithValues: stored.schema.entities.map { entity throws(ObjectLogError) in
                    (entity.tag, try count(entity.tag))
                }
            ),
            removals: removals
        )
        switch authority {
        case .manual:
            preview.refusals = [
                "the store is at model \(stored.hash) and automatic migration is off: migrate "
                    + "it through a MigrationPlan, or open it with migratesStoreAutomatically"
            ]
        case .automatic:
            preview.refusals = mapping.problems
            for change in preview.changes where change.dropsStoredData && !change.isDeclared {
                let name = change.property.map { "\(change.entity).\($0)" } ?? change.entity
                preview.refusals.append(
                    "\(change); declare the removal (removing: [\"\(name)\"]) to "
                        + (change.kind == .entityRemoved ? "delete them" : "drop them")
                        + ", or keep it in the model"
                )
            }
        case .planned(let acceptingUninferred):
            preview.refusals = acceptingUninferred ? [] : mapping.problems
        }
        if preview.refusals.isEmpty { preview.outcome = .migrates }
    }

    /// The error that refuses the open of the store at `path`: the one reason, or every reason
    /// as an error of its own.
    func refusal(path: String) -> ObjectLogError {
        let reasons = preview.refusals
        let from = preview.storeVersion.map { "from model \($0) " } ?? ""
        if reasons.count == 1 {
            return ObjectLogError(
                .modelMismatch,
                "cannot open the store '\(path)' \(from)with model \(preview.modelVersion): "
                    + reasons[0]
            )
        }
        return ObjectLogError(
            .modelMismatch,
            "cannot migrate the store '\(path)' \(from)to model \(preview.modelVersion): "
                + "\(reasons.count) changes are refused",
            errors: reasons.map { ObjectLogError(.modelMismatch, $0) }
        )
    }
}

extension ModelSchema {
    /// The same schema with the given entity tags (by entity name; others keep theirs), in
    /// tag order.
    func retagged(_ tags: [String: EntityTag]) -> ModelSchema {
        var schema = self
        for index in schema.entities.indices {
            if let tag = tags[schema.entities[index].name] { schema.entities[index].tag = tag }
        }
        schema.entities.sort { $0.tag < $1.tag }
        return schema
    }
}

extension ModelHistory {
    /// The earlier version (an index below the newest) that a model of `schema` is, each
    /// version tried with its own entity tags; nil if none.
    ///
    /// A model's hash depends on its tags, and the tags an open assigns continue the newest
    /// version: an entity renamed since would get a fresh tag under its old name, and the
    /// older version would not be recognised by its hash.
    func earlierVersion(matching schema: ModelSchema) -> Int? {
        for index in versions.indices.dropLast().reversed() {
            let version = versions[index]
            var tags: [String: EntityTag] = [:]
            for entity in schema.entities {
                guard let recorded = version.schema.entity(named: entity.name) else { break }
                tags[entity.name] = recorded.tag
            }
            guard tags.count == schema.entities.count else { continue }
            if schema.retagged(tags).versionHash == version.hash { return index }
        }
        return nil
    }
}
