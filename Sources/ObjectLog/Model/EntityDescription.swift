import ObjectLogStore

/// One entity of a model: a ``ManagedObject`` subclass, its tag and its properties.
///
/// Entity descriptions are immutable once their model is built.
// The `nonisolated(unsafe)` properties below are written only while `ManagedObjectModel.init`
// builds the model, before the description is shared; afterwards they are only read.
public final class EntityDescription: Sendable, CustomStringConvertible {
    /// The entity name.
    public let name: String
    /// The number that marks this entity's records in the log.
    public let tag: EntityTag
    /// The class of the entity's objects.
    let objectType: ManagedObject.Type
    /// Persistent properties in payload order.
    let accessors: [PropertyAccessor]
    /// Whether some attribute has external storage.
    let hasExternalData: Bool
    /// The fast payload layout when every persistent property is a common scalar attribute.
    let scalarLayout: ScalarLayout?
    /// The relationships among ``accessors``.
    let relationshipAccessors: [RelationshipAccessor]
    /// The field offsets of the transient attributes, which have no accessor.
    let transientOffsets: [Int]
    /// What observers of the entity's objects track (see
    /// ``ManagedObject/subscript(observedProperty:)``), by observation slot: the persistent
    /// properties at their ``PropertyAccessor/index``, then the transient attributes in the
    /// order of ``transientOffsets``.
    ///
    /// Made once, with the entity: a key path with a subscript argument is an allocation, too
    /// much for every observed read. `nonisolated(unsafe)`: key paths are immutable, but
    /// `KeyPath` is not declared `Sendable`.
    nonisolated(unsafe) let observationKeyPaths: [KeyPath<ManagedObject, Int>]
    /// Relationship accessors by their wrapper's storage key path, learnt by probing inverses.
    nonisolated(unsafe) var relationshipsByStorage: [AnyKeyPath: RelationshipAccessor] = [:]
    /// The declared inverse key path of each relationship, parallel to ``relationshipAccessors``.
    nonisolated(unsafe) var declaredInverses: [AnyKeyPath?] = []
    /// Delete rules and counts, parallel to ``relationshipAccessors``.
    nonisolated(unsafe) var rules:
        [(deleteRule: DeleteRule, minimumCount: Int, maximumCount: Int)] = []
    /// The validation checks of the attributes that declare a ``ValidationRule``, in payload
    /// order; empty for most entities, whose saves then read no attribute to validate.
    nonisolated(unsafe) var attributeChecks:
        [(accessor: PropertyAccessor, checks: [AttributeCheck])] =
            []
    /// Accessor indices of each uniqueness constraint.
    nonisolated(unsafe) var uniquenessConstraints: [[Int]] = []
    /// For each of ``uniquenessConstraints``, the tag of the entity whose objects it spans: the
    /// highest superentity that declares it, so that a constraint holds across a hierarchy.
    nonisolated(unsafe) var uniquenessScopes: [EntityTag] = []
    /// Accessor indices of each declared index (``ManagedObject/indexes``, attributes declared
    /// ``AttributeOptions/indexed``), in sort order.
    nonisolated(unsafe) var indexes: [[Int]] = []
    /// The stored description of the entity.
    nonisolated(unsafe) public internal(set) var schema: ModelSchema.Entity
    /// Whether the entity has no objects of its own, only its subentities'
    /// (``ManagedObject/isAbstract``).
    public let isAbstract: Bool
    /// The entity this one inherits its properties from: the entity of its class's superclass.
    ///
    /// Weak: the model holds every entity, and a parent holds its ``subentities``.
    nonisolated(unsafe) public internal(set) weak var superentity: EntityDescription?
    /// The entities that inherit from this one directly, in tag order.
    nonisolated(unsafe) public internal(set) var subentities: [EntityDescription] = []

    init(
        name: String,
        tag: EntityTag,
        objectType: ManagedObject.Type,
        accessors: [PropertyAccessor],
        transientOffsets: [Int] = [],
        isAbstract: Bool = false
    ) {
        self.name = name
        self.tag = tag
        self.objectType = objectType
        self.accessors = accessors
        self.transientOffsets = transientOffsets
        self.observationKeyPaths = (0..<accessors.count + transientOffsets.count).map {
            \ManagedObject.[observedProperty: $0]
        }
        self.isAbstract = isAbstract
        for (index, accessor) in accessors.enumerated() { accessor.index = index }
        self.hasExternalData = accessors.contains {
            $0.attribute?.options.contains(.externalStorage) == true
        }
        self.relationshipAccessors = accessors.compactMap { $0 as? RelationshipAccessor }
        self.scalarLayout = ScalarLayout(accessors)
        self.schema = ModelSchema.Entity(
            name: name,
            tag: tag,
            properties: [],
            uniquenessConstraints: []
        )
    }

    /// Whether this entity is `other` or inherits from it, directly or not.
    public func isKind(of other: EntityDescription) -> Bool {
        var current: EntityDescription? = self
        while let entity = current {
            if entity === other { return true }
            current = entity.superentity
        }
        return false
    }

    /// The entities whose objects a fetch of this entity returns: this one unless it is
    /// abstract, then its subentities' in the same way, depth first in tag order.
    public var concreteEntities: [EntityDescription] {
        var found: [EntityDescription] = isAbstract ? [] : [self]
        for child in subentities { found += child.concreteEntities }
        return found
    }

    /// The names of the entity's persistent attributes, in payload order.
    public var attributeNames: [String] {
        accessors.filter { $0.attribute != nil }.map(\.name)
    }

    /// The names of the entity's relationships, in payload order.
    public var relationshipNames: [String] {
        relationshipAccessors.map(\.name)
    }

    /// The entity name.
    public var description: String { name }

    /// The attribute a key path on the entity's class is, or nil.
    ///
    /// The key path is read from a fresh prototype in probing mode, where an attribute's
    /// getter reports the field offset of the wrapper it reads: it must read exactly one
    /// attribute, and read and write it unchanged (``PropertyAccessor/forwards(_:on:)``). A
    /// wrapped property's key path cannot be compared with the attribute's directly: handing
    /// the key path to the wrapper's slow path would cost every property access in the
    /// program a key path object.
    func attributeAccessor<Root>(for keyPath: PartialKeyPath<Root>) -> PropertyAccessor? {
        let prototype = objectType.init()
        guard let typed = prototype as? Root else { return nil }
        let probe = Probe()
        prototype.probe = probe
        prototype.accessState = .probing
        _ = typed[keyPath: keyPath]
        prototype.accessState = []
        prototype.probe = nil
        guard probe.reads == 1, let offset = probe.attributeOffset,
            let accessor = accessor(atOffset: offset), accessor.attribute != nil,
            accessor.forwards(keyPath, on: prototype)
        else { return nil }
        return accessor
    }

    /// The accessor of the persistent property whose wrapper lies `offset` bytes into an
    /// object, or nil (a transient attribute has none).
    func accessor(atOffset offset: Int) -> PropertyAccessor? {
        accessors.first { $0.offset == offset }
    }

    /// The observation slot (see ``observationKeyPaths``) of the property whose wrapper lies
    /// `offset` bytes into an object, or nil.
    func observationSlot(atOffset offset: Int) -> Int? {
        if let accessor = accessor(atOffset: offset) { return accessor.index }
        return transientOffsets.firstIndex(of: offset).map { accessors.count + $0 }
    }

    /// The accessor of a property by name.
    func accessor(named name: String) -> PropertyAccessor? {
        accessors.first { $0.name == name }
    }

    /// The relationship whose wrapper lives at `storage`, or `nil` if it has no inverse.
    func relationship(storage: AnyKeyPath, declaredInverse: AnyKeyPath?) -> RelationshipAccessor? {
        if let known = relationshipsByStorage[storage] { return known }
        guard let declaredInverse else { return nil }
        for (index, candidate) in declaredInverses.enumerated() where candidate == declaredInverse {
            return relationshipAccessors[index]
        }
        return nil
    }

    /// The index of a relationship accessor in ``relationshipAccessors``.
    func ruleIndex(of accessor: RelationshipAccessor) -> Int {
        relationshipAccessors.firstIndex { $0 === accessor } ?? 0
    }
}
