import ObjectLogStore
@_spi(Reflection) import Swift

/// The entities of an application, discovered from their classes.
///
/// ```swift
/// let model = try ManagedObjectModel([Configuration.self, Snapshot.self])
/// ```
///
/// Building a model reads each class's ``Attribute`` and ``Relationship`` declarations (by
/// runtime reflection over its stored properties), resolves inverses and checks the
/// declarations. Destination classes of relationships are added even when not listed. Entity
/// tags are assigned in entity-name order, so the same classes always give the same
/// ``schema`` and ``versionHash``; a store written by an earlier version of the model keeps
/// the tags its records carry (the coordinator retags the model it opens such a store with).
public final class ManagedObjectModel: Sendable {
    /// The entities, ordered by tag.
    public let entities: [EntityDescription]
    /// The stored description of the model.
    public let schema: ModelSchema
    /// A hash that changes whenever the stored layout or rules change.
    public let versionHash: String
    /// The entities (`"Scrap"`) and properties (`"Note.obsolete"`) of earlier versions whose
    /// stored data a migration to this model may drop.
    ///
    /// A migration that would delete the objects of an entity the model no longer has, or
    /// drop the values of a property, is refused unless the removal is declared here: a class
    /// left out of a model by mistake must not cost its objects. Names are those of the
    /// stored version (for a property of a renamed entity, either name). Removing an entity
    /// that has no objects needs no declaration. Names that match nothing in a store are
    /// ignored, so a declaration can stay while older stores may still be opened.
    public let declaredRemovals: Set<String>
    private let byType: [ObjectIdentifier: EntityDescription]
    private let byTag: [EntityTag: EntityDescription]

    /// Builds the model of the given entity classes.
    /// - Throws: ``ObjectLogError/Code/invalidModel`` naming the entity and property of a
    ///   declaration the engine cannot store.
    ///
    /// - Parameters:
    ///   - types: The entity classes.
    ///   - removals: The ``declaredRemovals``: entities (`"Scrap"`) and properties
    ///     (`"Note.obsolete"`) of earlier versions whose stored data a migration may drop.
    /// - Throws: ``ObjectLogError/Code/invalidModel`` naming the entity and property of a
    ///   declaration the engine cannot store, or a removal of something the model has.
    public convenience init(
        _ types: [ManagedObject.Type],
        removing removals: [String] = []
    ) throws(ObjectLogError) {
        try self.init(types: types, tags: [:], removals: Set(removals))
    }

    /// The same model with the given entity tags (by entity name), as a store that an earlier
    /// version of the model wrote needs them: an entity keeps the tag its records carry.
    func retagged(_ tags: [String: EntityTag]) throws(ObjectLogError) -> ManagedObjectModel {
        guard entities.contains(where: { tags[$0.name] != $0.tag }) else { return self }
        return try ManagedObjectModel(
            types: entities.map(\.objectType),
            tags: tags,
            removals: declaredRemovals
        )
    }

    /// Builds the model of the given entity classes, tagging entities as `tags` says (the
    /// others in name order after the given tags).
    init(
        types: [ManagedObject.Type],
        tags: [String: EntityTag],
        removals: Set<String> = []
    ) throws(ObjectLogError) {
        var all: [ObjectIdentifier: ManagedObject.Type] = [:]
        var pending = types
        var drafts: [ObjectIdentifier: [PropertyAccessor]] = [:]
        var checks: [ObjectIdentifier: [(accessor: PropertyAccessor, checks: [AttributeCheck])]] =
            [:]
        var transients: [ObjectIdentifier: [Int]] = [:]
        while let type = pending.popLast() {
            guard all[ObjectIdentifier(type)] == nil else { continue }
            all[ObjectIdentifier(type)] = type
            let (accessors, declaredChecks, transientOffsets) = try Self.discoverAccessors(
                of: type
            )
            drafts[ObjectIdentifier(type)] = accessors
            checks[ObjectIdentifier(type)] = declaredChecks
            transients[ObjectIdentifier(type)] = transientOffsets
            for case let relationship as RelationshipAccessor in accessors {
                pending.append(relationship.destinationType)
            }
            // The superclass's entity is the superentity, in the model even when not listed.
            if let parent = Self.superentityType(of: type) { pending.append(parent) }
        }
        // A subentity shares its superentity's accessors for the inherited properties (the
        // field walk lists them first, at the same offsets), so that a relationship, rule or
        // predicate of the parent is the same object for every entity of the hierarchy.
        // Parents first: by the depth of their class.
        for type in all.values.sorted(by: { Self.depth(of: $0) < Self.depth(of: $1) }) {
            guard let parent = Self.superentityType(of: type),
                let parentDraft = drafts[ObjectIdentifier(parent)],
                let draft = drafts[ObjectIdentifier(type)]
            else { continue }
            guard draft.count >= parentDraft.count,
                zip(draft, parentDraft).allSatisfy({ $0.name == $1.name && $0.offset == $1.offset })
            else {
                throw ObjectLogError(
                    .invalidModel,
                    "cannot lay out '\(type.entityName)' as a subentity of '\(parent.entityName)': "
                        + "its inherited properties are not its superclass's"
                )
            }
            let own = draft[parentDraft.count...]
            drafts[ObjectIdentifier(type)] = parentDraft + own
            checks[ObjectIdentifier(type)] =
                (checks[ObjectIdentifier(parent)] ?? [])
                + (checks[ObjectIdentifier(type)] ?? []).filter { check in
                    own.contains { $0 === check.accessor }
                }
        }
        let sorted = all.values.sorted { $0.entityName < $1.entityName }
        var entities: [EntityDescription] = []
        var byType: [ObjectIdentifier: EntityDescription] = [:]
        var nextTag = (tags.values.max() ?? 0) + 1
        for type in sorted {
            if let clash = entities.first(where: { $0.name == type.entityName }) {
                var message = "entity name '\(clash.name)' is used by two classes"
                if Self.inherits(type, from: clash.objectType)
                    || Self.inherits(clash.objectType, from: type)
                {
                    message +=
                        ", a class and its subclass: a subentity inherits an overridden "
                        + "entityName, so override it in the subclass too"
                }
                throw ObjectLogError(.invalidModel, message)
            }
            let tag = tags[type.entityName] ?? nextTag
            if tags[type.entityName] == nil { nextTag += 1 }
            let entity = EntityDescription(
                name: type.entityName,
                tag: tag,
                objectType: type,
                accessors: drafts[ObjectIdentifier(type)] ?? [],
                transientOffsets: transients[ObjectIdentifier(type)] ?? [],
                isAbstract: type.isAbstract
            )
            entity.attributeChecks = checks[ObjectIdentifier(type)] ?? []
            entities.append(entity)
            byType[ObjectIdentifier(type)] = entity
        }
        entities.sort { $0.tag < $1.tag }
        try Self.linkHierarchy(entities, byType: byType)
        try Self.resolve(entities, byType: byType)
        self.entities = entities
        self.byType = byType
        self.byTag = Dictionary(uniqueKeysWithValues: entities.map { ($0.tag, $0) })
        self.schema = ModelSchema(entities: entities.map(\.schema))
        self.versionHash = schema.versionHash
        try Self.check(removals: removals, in: schema)
        self.declaredRemovals = removals
    }

    /// Refuses a declared removal that is not a name, or that names what the model has.
    static func check(
        removals: Set<String>,
        in schema: ModelSchema
    )
        throws(ObjectLogError)
    {
        for removal in removals.sorted() {
            let parts = removal.split(separator: ".", omittingEmptySubsequences: false)
            guard (1...2).contains(parts.count), !parts.contains(where: \.isEmpty) else {
                throw ObjectLogError(
                    .invalidModel,
                    "the removal '\(removal)' is not an entity name or 'Entity.property'"
                )
            }
            guard let entity = schema.entity(named: String(parts[0])) else { continue }
            if parts.count == 1 {
                throw ObjectLogError(
                    .invalidModel,
                    "the model declares entity '\(removal)' removed but has it"
                )
            }
            if entity.property(named: String(parts[1])) != nil {
                throw ObjectLogError(
                    .invalidModel,
                    "the model declares property '\(removal)' removed but has it",
                    property: String(parts[1])
                )
            }
        }
    }

    /// The entity of a class.
    public func entity(for type: ManagedObject.Type) -> EntityDescription? {
        byType[ObjectIdentifier(type)]
    }

    /// The entity with a name.
    public func entity(named name: String) -> EntityDescription? {
        entities.first { $0.name == name }
    }

    /// The entity with a tag.
    func entity(tag: EntityTag) -> EntityDescription? {
        byTag[tag]
    }

    // MARK: - Discovery

    /// Finds the wrapped properties of a class by walking its stored fields.
    ///
    /// The attribute options come from a prototype made with ``AttributeDiscovery``.
    /// Also returns the validation checks of the attributes that declare a rule; a rule the
    /// model cannot use (a pattern that does not compile) is an error; and the field offsets
    /// of the transient attributes, which get no accessor (observers track them by offset).
    private static func discoverAccessors(
        of type: ManagedObject.Type
    ) throws(ObjectLogError) -> (
        accessors: [PropertyAccessor],
        checks: [(accessor: PropertyAccessor, checks: [AttributeCheck])],
        transientOffsets: [Int]
    ) {
        let recorded = AttributeDiscovery.makePrototype(of: type).options
        guard let walkOrder = AttributeDiscovery.fieldOptions(of: type, recorded: recorded) else {
            throw ObjectLogError(
                .invalidModel,
                "cannot read the attribute options of '\(type.entityName)': its init() made "
                    + "\(recorded.count) attributes, not one per @Attribute property"
            )
        }
        var options = walkOrder[...]
        var accessors: [PropertyAccessor] = []
        var checks: [(accessor: PropertyAccessor, checks: [AttributeCheck])] = []
        var transientOffsets: [Int] = []
        // The class-type walk visits inherited fields too, base class first.
        _ = _forEachField(of: type, options: _EachFieldOptions(rawValue: 1)) {
            name,
            offset,
            fieldType,
            _ in
            guard let wrapper = fieldType as? any PropertyWrapperDescribing.Type else {
                return true
            }
            var propertyName = String(cString: name)
            if propertyName.hasPrefix("_") { propertyName.removeFirst() }
            let declared = wrapper.isAttribute ? options.popFirst() : nil
            let accessor = wrapper.makeAccessor(
                name: propertyName,
                offset: offset,
                options: declared?.options ?? []
            )
            accessor.originalName =
                declared?.originalName ?? type.originalPropertyNames[propertyName]
            if let attribute = accessor.attribute, attribute.options.contains(.transient) {
                transientOffsets.append(offset)
                return true
            }
            accessors.append(accessor)
            if let declaredChecks = declared?.checks, !declaredChecks.isEmpty {
                checks.append((accessor, declaredChecks))
            }
            return true
        }
        for (accessor, declaredChecks) in checks {
            if let problem = declaredChecks.lazy.compactMap(\.modelError).first {
                throw ObjectLogError(
                    .invalidModel,
                    "the validation rule of '\(type.entityName).\(accessor.name)' cannot be used: "
                        + problem,
                    property: accessor.name
                )
            }
        }
        return (accessors, checks, transientOffsets)
    }

    /// Resolves inverses, rules and constraints, and fills in each entity's schema.
    private static func resolve(
        _ entities: [EntityDescription],
        byType: [ObjectIdentifier: EntityDescription]
    ) throws(ObjectLogError) {
        var prototypes: [ObjectIdentifier: ManagedObject] = [:]
        for entity in entities {
            prototypes[ObjectIdentifier(entity.objectType)] = entity.objectType.init()
        }
        for entity in entities {
            let prototype = prototypes[ObjectIdentifier(entity.objectType)]!
            for accessor in entity.relationshipAccessors {
                let (inverse, rule, minimum, maximum) = accessor.declaration(of: prototype)
                entity.declaredInverses.append(inverse)
                entity.rules.append((rule, minimum, maximum))
                accessor.destination = byType[ObjectIdentifier(accessor.destinationType)]
            }
        }
        for entity in entities {
            // Inherited relationships are resolved once, by the entity that declares them.
            let inheritedRelationships = entity.superentity?.relationshipAccessors.count ?? 0
            for (index, accessor) in entity.relationshipAccessors.enumerated()
            where index >= inheritedRelationships {
                guard let inversePath = entity.declaredInverses[index],
                    let destination = accessor.destination,
                    let destinationPrototype = prototypes[ObjectIdentifier(destination.objectType)]
                else { continue }
                guard let inverse = probe(inversePath, on: destinationPrototype, of: destination)
                else {
                    throw ObjectLogError(
                        .invalidModel,
                        "the inverse of '\(entity.name).\(accessor.name)' is not a relationship"
                            + " of '\(destination.name)'",
                        property: accessor.name
                    )
                }
                guard inverse.accessor.destinationType == entity.objectType else {
                    throw ObjectLogError(
                        .invalidModel,
                        "the inverse '\(destination.name).\(inverse.accessor.name)' of "
                            + "'\(entity.name).\(accessor.name)' does not point back to '\(entity.name)'",
                        property: accessor.name
                    )
                }
                accessor.inverse = inverse.accessor
                if let existing = inverse.accessor.inverse, existing !== accessor {
                    throw ObjectLogError(
                        .invalidModel,
                        "'\(destination.name).\(inverse.accessor.name)' is the inverse of two relationships",
                        property: inverse.accessor.name
                    )
                }
                inverse.accessor.inverse = accessor
                destination.relationshipsByStorage[inverse.storage] = inverse.accessor
            }
        }
        // A subentity's objects reach the inherited relationships through the same storage.
        func inherit(_ entity: EntityDescription) {
            for child in entity.subentities {
                child.relationshipsByStorage.merge(entity.relationshipsByStorage) { own, _ in own }
                inherit(child)
            }
        }
        for entity in entities where entity.superentity == nil { inherit(entity) }
        func describeFamily(_ entity: EntityDescription) throws(ObjectLogError) {
            try describe(entity)
            for child in entity.subentities { try describeFamily(child) }
        }
        for entity in entities where entity.superentity == nil { try describeFamily(entity) }
    }

    /// Finds which relationship of `entity` a wrapped-property key path reaches, by reading it
    /// from a prototype in probing mode with each relationship's storage marked.
    private static func probe(
        _ path: AnyKeyPath,
        on prototype: ManagedObject,
        of entity: EntityDescription
    ) -> (accessor: RelationshipAccessor, storage: AnyKeyPath)? {
        for (index, accessor) in entity.relationshipAccessors.enumerated() {
            accessor.mark(prototype, with: ObjectKey(index + 1))
        }
        prototype.accessState = .probing
        let probe = Probe()
        prototype.probe = probe
        _ = prototype[keyPath: path]
        prototype.accessState = []
        defer {
            for accessor in entity.relationshipAccessors { accessor.mark(prototype, with: 0) }
        }
        prototype.probe = nil
        guard let storage = probe.storage,
            let wrapper = prototype[keyPath: storage] as? any RelationshipStorage
        else { return nil }
        let marker = Int(wrapper.probeMarker)
        guard marker >= 1, marker <= entity.relationshipAccessors.count else { return nil }
        return (entity.relationshipAccessors[marker - 1], storage)
    }

    /// Fills in an entity's schema and uniqueness constraints.
    private static func describe(_ entity: EntityDescription) throws(ObjectLogError) {
        var properties: [ModelSchema.Property] = []
        // Defaults are what a fresh object holds: the values objects written before an
        // attribute existed take when a store is migrated.
        let prototype = entity.objectType.init()
        var constraints: [[String]] = []
        for accessor in entity.accessors {
            if let attribute = accessor.attribute {
                if attribute.options.contains(.externalStorage), attribute.type != .data {
                    throw ObjectLogError(
                        .invalidModel,
                        "'\(entity.name).\(accessor.name)': external storage needs a Data attribute",
                        property: accessor.name
                    )
                }
                let unique = attribute.options.contains(.unique)
                if unique { constraints.append([accessor.name]) }
                var writer = PayloadWriter()
                var sink = BlobSink(store: nil)
                try? accessor.encode(prototype, to: &writer, blobs: &sink)
                properties.append(
                    .attribute(
                        accessor.name,
                        type: attribute.type,
                        isOptional: attribute.isOptional,
                        isUnique: unique,
                        isExternal: attribute.options.contains(.externalStorage),
                        defaultValue: sink.blobs.isEmpty ? writer.bytes : nil,
                        originalName: accessor.originalName
                    )
                )
            } else if let relationship = accessor as? RelationshipAccessor {
                let rule = entity.rules[entity.ruleIndex(of: relationship)]
                properties.append(
                    ModelSchema.Property(
                        name: relationship.name,
                        kind: .relationship,
                        type: nil,
                        isOptional: rule.minimumCount == 0,
                        isUnique: false,
                        isExternal: false,
                        destination: relationship.destination?.name,
                        inverse: relationship.inverse?.name,
                        isToMany: relationship.isToMany,
                        isOrdered: relationship.isOrdered,
                        deleteRule: rule.deleteRule,
                        minimumCount: rule.minimumCount,
                        maximumCount: rule.maximumCount,
                        originalName: accessor.originalName
                    )
                )
            }
        }
        for group in entity.objectType.uniquenessConstraints where !constraints.contains(group) {
            constraints.append(group)
        }
        var indices: [[Int]] = []
        for group in constraints {
            var members: [Int] = []
            for name in group {
                guard let index = entity.accessors.firstIndex(where: { $0.name == name }),
                    entity.accessors[index].attribute != nil
                else {
                    throw ObjectLogError(
                        .invalidModel,
                        "uniqueness constraint of '\(entity.name)' names '\(name)', "
                            + "which is not a stored attribute",
                        property: name
                    )
                }
                members.append(index)
            }
            indices.append(members)
        }
        entity.uniquenessConstraints = indices
        var declaredIndexes: [[String]] = entity.accessors.compactMap { accessor in
            accessor.attribute?.options.contains(.indexed) == true ? [accessor.name] : nil
        }
        for group in entity.objectType.indexes where !declaredIndexes.contains(group) {
            declaredIndexes.append(group)
        }
        entity.indexes = try declaredIndexes.map { group throws(ObjectLogError) -> [Int] in
            guard !group.isEmpty else {
                throw ObjectLogError(.invalidModel, "an index of '\(entity.name)' names nothing")
            }
            return try group.map { name throws(ObjectLogError) -> Int in
                guard let index = entity.accessors.firstIndex(where: { $0.name == name }),
                    entity.accessors[index].attribute != nil
                else {
                    throw ObjectLogError(
                        .invalidModel,
                        "an index of '\(entity.name)' names '\(name)', "
                            + "which is not a stored attribute",
                        property: name
                    )
                }
                return index
            }
        }
        // A constraint the superentity has spans the hierarchy below the entity that declared it
        // (described first); the others span this entity's own family.
        let parent = entity.superentity
        entity.uniquenessScopes = constraints.map { group in
            guard let parent, let index = parent.schema.uniquenessConstraints.firstIndex(of: group)
            else { return entity.tag }
            return parent.uniquenessScopes[index]
        }
        // A subclass inherits the class variable: only a name of its own is its own.
        var originalName = entity.objectType.originalEntityName
        if let parent, originalName == parent.objectType.originalEntityName { originalName = nil }
        entity.schema = ModelSchema.Entity(
            name: entity.name,
            tag: entity.tag,
            properties: properties,
            uniquenessConstraints: constraints,
            originalName: originalName,
            superentity: parent?.name,
            isAbstract: entity.isAbstract
        )
        entity.schema.indexes = declaredIndexes
    }
}

/// Lets model discovery read a relationship wrapper's probe marker without knowing its type.
protocol RelationshipStorage {
    /// The to-one key field, which holds the probe marker during discovery.
    var probeMarker: ObjectKey { get }
}

extension Relationship: RelationshipStorage {
    var probeMarker: ObjectKey { key }
}
