import ObjectLogStore

/// One change from a stored model version to another, as the lightweight migration infers it,
/// and what it does to the stored objects.
///
/// ``PersistentContainer/migrationPreview(at:model:migratesStoreAutomatically:options:)`` lists the
/// changes an open would make; `objectlog schema` lists those between a store's versions.
/// A renamed entity or property (``ManagedObject/originalEntityName``,
/// ``ManagedObject/originalPropertyNames``, `@Attribute(originalName:)`) is one change, not a
/// removal and an addition: its values are kept.
public struct SchemaChange: Sendable, Hashable, CustomStringConvertible {
    /// What changed.
    public enum Kind: String, Sendable, Hashable {
        /// A new entity; no stored object is touched.
        case entityAdded
        /// An entity of the stored version is gone: its objects are deleted.
        case entityRemoved
        /// An entity has a new name; its objects keep their keys and values.
        case entityRenamed
        /// An entity's superentity, or whether it is abstract, changed.
        case entityChanged
        /// A new property; stored objects take its default value (or none).
        case propertyAdded
        /// A property of the stored version is gone: its stored values are dropped.
        case propertyRemoved
        /// A property has a new name; its values are kept.
        case propertyRenamed
        /// A property's type, optionality, storage or rules changed in a way the migration
        /// infers: values are converted (widened, nil given the default, moved to or from
        /// external storage).
        case propertyChanged
        /// A new uniqueness constraint: the stored objects are checked against it.
        case constraintAdded
        /// A uniqueness constraint is gone; no stored object is touched.
        case constraintRemoved
        /// A new declared index (``ManagedObject/indexes``, ``AttributeOptions/indexed``): the
        /// store builds it from the stored values; no stored object is touched.
        case indexAdded
        /// A declared index is gone: the store drops it; no stored object is touched.
        case indexRemoved
        /// A change the migration cannot infer: the open is refused (a ``MigrationPlan`` stage
        /// can make it).
        case notInferred
    }

    /// What changed.
    public var kind: Kind
    /// The entity, by its name in the newer version (in the older one for
    /// ``Kind/entityRemoved``).
    public var entity: String
    /// The property, by its name in the newer version (in the older one for
    /// ``Kind/propertyRemoved``); nil for a change to the entity itself.
    public var property: String?
    /// The older name of a renamed entity or property, or the older and newer description of
    /// a changed one (`int8 -> int64`); empty where there is nothing more to say.
    public var detail: String
    /// How many stored objects the change touches (the objects of the entity and of its
    /// subentities), where the change was computed against a store; nil otherwise.
    public var affectedObjects: Int?
    /// Whether the model declares the change (``ManagedObjectModel/declaredRemovals``): a
    /// removal that drops stored data is made only when declared.
    public var isDeclared: Bool

    /// Creates a change.
    public init(
        kind: Kind,
        entity: String,
        property: String? = nil,
        detail: String = "",
        affectedObjects: Int? = nil,
        isDeclared: Bool = false
    ) {
        self.kind = kind
        self.entity = entity
        self.property = property
        self.detail = detail
        self.affectedObjects = affectedObjects
        self.isDeclared = isDeclared
    }

    /// Whether the change drops stored data: a removed entity that has objects, a removed
    /// property of an entity that has objects (or of any entity, when the number is unknown).
    public var dropsStoredData: Bool {
        switch kind {
        case .entityRemoved, .propertyRemoved: (affectedObjects ?? 1) > 0
        default: false
        }
    }

    /// One line, such as `property 'Note.heading' was renamed from 'title'` or `entity 'Scrap'
    /// was removed: deletes its 3 object(s)`.
    public var description: String {
        let place = property.map { "property '\(entity).\($0)'" } ?? "entity '\(entity)'"
        var line: String
        switch kind {
        case .entityAdded, .propertyAdded: line = "\(place) was added"
        case .entityRemoved, .propertyRemoved: line = "\(place) was removed"
        case .entityRenamed, .propertyRenamed: line = "\(place) was renamed from '\(detail)'"
        case .entityChanged, .propertyChanged: line = "\(place) changed: \(detail)"
        case .constraintAdded: line = "\(place) gained uniqueness constraint \(detail)"
        case .constraintRemoved: line = "\(place) lost uniqueness constraint \(detail)"
        case .indexAdded: line = "\(place) gained index \(detail)"
        case .indexRemoved: line = "\(place) lost index \(detail)"
        case .notInferred: return detail
        }
        if let count = affectedObjects, let effect = effect(count: count) { line += ": " + effect }
        if isDeclared { line += " (declared)" }
        return line
    }

    /// What the change does to `count` stored objects, or nil when it touches none.
    private func effect(count: Int) -> String? {
        guard count > 0 else { return nil }
        switch kind {
        case .entityRemoved: return "deletes its \(count) object(s)"
        case .propertyRemoved: return "drops its values in \(count) object(s)"
        case .propertyChanged: return "converts its values in \(count) object(s)"
        case .constraintAdded: return "checked against \(count) object(s)"
        case .indexAdded: return "built from \(count) object(s)"
        case .entityRenamed, .propertyRenamed: return "\(count) object(s) keep their values"
        default: return nil
        }
    }
}

extension SchemaMapping {
    /// The changes that take `old` to `new` (the schemas this mapping was inferred from), with
    /// the number of stored objects each touches when `counts` gives the live objects of each
    /// old entity tag, and which of them `removals` declares.
    ///
    /// A change to a property that a superentity declares is listed once, on the superentity,
    /// counting the objects of the whole hierarchy.
    func changes(
        from old: ModelSchema,
        to new: ModelSchema,
        counts: [EntityTag: Int]? = nil,
        removals: Set<String> = []
    ) -> [SchemaChange] {
        func family(_ name: String) -> Int? {
            counts.map { counts in old.family(of: name).reduce(0) { $0 + (counts[$1.tag] ?? 0) } }
        }
        var changes: [SchemaChange] = []
        for problem in problems {
            changes.append(SchemaChange(kind: .notInferred, entity: "", detail: problem))
        }
        for entity in new.entities {
            if addedTags.contains(entity.tag) {
                changes.append(SchemaChange(kind: .entityAdded, entity: entity.name))
            }
            guard let transcoder = transcoders[entity.tag] else { continue }
            let source = transcoder.old
            let objects = family(source.name)
            if source.name != entity.name {
                changes.append(
                    SchemaChange(
                        kind: .entityRenamed,
                        entity: entity.name,
                        detail: source.name,
                        affectedObjects: objects
                    )
                )
            }
            if source.superentity != entity.superentity {
                changes.append(
                    SchemaChange(
                        kind: .entityChanged,
                        entity: entity.name,
                        detail: "superentity \(source.superentity ?? "none") -> "
                            + (entity.superentity ?? "none")
                    )
                )
            }
            if source.isAbstract != entity.isAbstract {
                changes.append(
                    SchemaChange(
                        kind: .entityChanged,
                        entity: entity.name,
                        detail: entity.isAbstract ? "became abstract" : "became concrete"
                    )
                )
            }
            changes += propertyChanges(
                of: transcoder,
                old: old,
                new: new,
                objects: objects,
                removals: removals
            )
            let oldGroups = Set(source.uniquenessConstraints)
            let renamedGroups = Set(
                entity.uniquenessConstraints.map { group in
                    group.map { transcoder.sourceName(of: $0) ?? "\u{0}" }
                }
            )
            for group in newConstraints[entity.tag] ?? [] where !inherits(group, entity, new) {
                changes.append(
                    SchemaChange(
                        kind: .constraintAdded,
                        entity: entity.name,
                        detail: "(" + group.joined(separator: ", ") + ")",
                        affectedObjects: objects
                    )
                )
            }
            for group in oldGroups.subtracting(renamedGroups).sorted(by: { "\($0)" < "\($1)" })
            where !inherits(group, source, old) {
                changes.append(
                    SchemaChange(
                        kind: .constraintRemoved,
                        entity: entity.name,
                        detail: "(" + group.joined(separator: ", ") + ")"
                    )
                )
            }
            // Indexes by the stored names of their attributes: a renamed attribute keeps its
            // index.
            let oldIndexes = Set(source.indexes)
            let renamedIndexes = entity.indexes.map { group in
                group.map { transcoder.sourceName(of: $0) ?? "\u{0}" }
            }
            for (group, renamed) in zip(entity.indexes, renamedIndexes)
            where !oldIndexes.contains(renamed) {
                changes.append(
                    SchemaChange(
                        kind: .indexAdded,
                        entity: entity.name,
                        detail: "(" + group.joined(separator: ", ") + ")",
                        affectedObjects: objects
                    )
                )
            }
            for group in source.indexes where !renamedIndexes.contains(group) {
                changes.append(
                    SchemaChange(
                        kind: .indexRemoved,
                        entity: entity.name,
                        detail: "(" + group.joined(separator: ", ") + ")"
                    )
                )
            }
        }
        for tag in removedTags {
            guard let entity = old.entity(tag: tag) else { continue }
            changes.append(
                SchemaChange(
                    kind: .entityRemoved,
                    entity: entity.name,
                    affectedObjects: counts.map { $0[tag] ?? 0 },
                    isDeclared: removals.contains(entity.name)
                )
            )
        }
        return changes
    }

    /// The changes to the properties of one entity that its superentity does not make too.
    private func propertyChanges(
        of transcoder: EntityTranscoder,
        old: ModelSchema,
        new: ModelSchema,
        objects: Int?,
        removals: Set<String>
    ) -> [SchemaChange] {
        let source = transcoder.old
        let entity = transcoder.new
        // Properties a superentity has in both versions are the superentity's to report.
        let newParent = entity.superentity.flatMap { new.entity(named: $0) }
        let oldParent = source.superentity.flatMap { old.entity(named: $0) }
        var changes: [SchemaChange] = []
        var continued = Set<Int>()
        for (index, property) in entity.properties.enumerated() {
            let sourceIndex = transcoder.sources[index]
            if let sourceIndex { continued.insert(sourceIndex) }
            if newParent?.property(named: property.name) != nil { continue }
            guard let sourceIndex else {
                changes.append(
                    SchemaChange(kind: .propertyAdded, entity: entity.name, property: property.name)
                )
                continue
            }
            let before = source.properties[sourceIndex]
            if before.name != property.name {
                changes.append(
                    SchemaChange(
                        kind: .propertyRenamed,
                        entity: entity.name,
                        property: property.name,
                        detail: before.name,
                        affectedObjects: objects
                    )
                )
            }
            if case .constant = transcoder.steps[index] { continue }  // A problem: listed above.
            if before.summary != property.summary {
                let converts: Bool
                if case .convert = transcoder.steps[index] {
                    converts = true
                } else {
                    converts = false
                }
                changes.append(
                    SchemaChange(
                        kind: .propertyChanged,
                        entity: entity.name,
                        property: property.name,
                        detail: "\(before.summary) -> \(property.summary)",
                        affectedObjects: converts ? objects : nil
                    )
                )
            }
        }
        for (index, property) in source.properties.enumerated() where !continued.contains(index) {
            if oldParent?.property(named: property.name) != nil { continue }
            let declared = ([source.name, entity.name]).contains { name in
                removals.contains("\(name).\(property.name)")
            }
            changes.append(
                SchemaChange(
                    kind: .propertyRemoved,
                    entity: source.name,
                    property: property.name,
                    affectedObjects: objects,
                    isDeclared: declared
                )
            )
        }
        return changes
    }

    /// Whether `entity`'s superentity in `schema` has the constraint `group` too.
    private func inherits(
        _ group: [String],
        _ entity: ModelSchema.Entity,
        _ schema: ModelSchema
    )
        -> Bool
    {
        entity.superentity.flatMap { schema.entity(named: $0) }?.uniquenessConstraints.contains(
            group
        ) ?? false
    }
}
