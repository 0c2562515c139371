extension EntityDescription {
    /// The relationship a key path on the entity's class is, or nil.
    ///
    /// As ``attributeAccessor(for:)`` does for attributes, the key path is read from a fresh
    /// prototype in probing mode, with each relationship's storage marked: it must read
    /// exactly one relationship and no attribute, be writable, and have the relationship's own
    /// value type (`Owner?`, `Set<Item>` or `[Item]`), so that a computed property that reads
    /// a relationship and returns something else is not taken for it.
    func relationshipAccessor<Root, Value>(
        for keyPath: KeyPath<Root, Value>
    ) -> RelationshipAccessor? {
        guard keyPath is ReferenceWritableKeyPath<Root, Value>,
            let valueType = Value.self as? any RelationshipValue.Type
        else { return nil }
        let prototype = objectType.init()
        guard let typed = prototype as? Root else { return nil }
        for (index, accessor) in relationshipAccessors.enumerated() {
            accessor.mark(prototype, with: ObjectKey(index + 1))
        }
        let probe = Probe()
        prototype.probe = probe
        prototype.accessState = .probing
        _ = typed[keyPath: keyPath]
        prototype.accessState = []
        prototype.probe = nil
        guard probe.reads == 1, probe.attributeOffset == nil, let storage = probe.storage,
            let wrapper = prototype[keyPath: storage] as? any RelationshipStorage,
            wrapper.probeMarker >= 1, wrapper.probeMarker <= UInt64(relationshipAccessors.count)
        else { return nil }
        let accessor = relationshipAccessors[Int(wrapper.probeMarker) - 1]
        func holds<V: RelationshipValue>(_: V.Type) -> Bool {
            accessor is TypedRelationshipAccessor<V>
        }
        return holds(valueType) ? accessor : nil
    }

    /// Whether a key path on the entity's class reads an object's ``ManagedObject/objectID``:
    /// read from a prototype under two keys, it gives the ID of each.
    func isObjectIDKeyPath<Root, Value>(_ keyPath: KeyPath<Root, Value>) -> Bool {
        guard Value.self == ObjectID.self else { return false }
        let prototype = objectType.init()
        guard let typed = prototype as? Root else { return false }
        for key: ObjectKey in [1, 2] {
            prototype.key = key
            guard typed[keyPath: keyPath] as? ObjectID == prototype.objectID else { return false }
        }
        return true
    }

    /// The attribute of a key path as a ``StoreCondition`` names it: one stored in the payload
    /// (not external data, not a Codable value), or nil.
    func storeAttribute<Root, Value>(for keyPath: KeyPath<Root, Value>) -> StoreAttribute? {
        guard let valueType = Value.self as? any AttributeValue.Type,
            let accessor = attributeAccessor(for: keyPath),
            let attribute = accessor.attribute, attribute.type != .codable
        else { return nil }
        func isNative<V: AttributeValue>(_: V.Type) -> Bool {
            accessor is NativeAttributeAccessor<V>
        }
        guard isNative(valueType) else { return nil }
        return StoreAttribute(
            entity: name,
            name: accessor.name,
            index: accessor.index,
            type: attribute.type,
            isOptional: attribute.isOptional
        )
    }

    /// The relationship of a key path as a ``StoreCondition`` names it, with its destination
    /// entity, or nil.
    func storeRelationship<Root, Value>(
        for keyPath: KeyPath<Root, Value>
    ) -> (relationship: StoreRelationship, destination: EntityDescription)? {
        guard let accessor = relationshipAccessor(for: keyPath),
            let destination = accessor.destination
        else { return nil }
        let relationship = StoreRelationship(
            entity: name,
            name: accessor.name,
            index: accessor.index,
            destination: destination.name,
            isToMany: accessor.isToMany
        )
        return (relationship, destination)
    }
}
