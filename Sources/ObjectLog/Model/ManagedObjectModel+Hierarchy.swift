// Entity hierarchies: a subclass of an entity class is a subentity (see the DocC article
// "Entity inheritance"). The model's initializer finds the superclasses with these helpers and
// links the entities once they exist.

extension ManagedObjectModel {
    /// The entity class a class inherits from, or nil when it derives from ``ManagedObject``
    /// directly.
    static func superentityType(of type: ManagedObject.Type) -> ManagedObject.Type? {
        guard let superclass = _getSuperclass(type), superclass != ManagedObject.self else {
            return nil
        }
        return superclass as? ManagedObject.Type
    }

    /// Whether `type` is a subclass of `ancestor`.
    static func inherits(_ type: AnyClass, from ancestor: AnyClass) -> Bool {
        var current: AnyClass? = _getSuperclass(type)
        while let superclass = current {
            if superclass == ancestor { return true }
            current = _getSuperclass(superclass)
        }
        return false
    }

    /// How many entity classes lie above a class.
    static func depth(of type: ManagedObject.Type) -> Int {
        var depth = 0
        var current = type
        while let parent = superentityType(of: current) {
            depth += 1
            current = parent
        }
        return depth
    }

    /// Sets every entity's superentity and subentities, and refuses an abstract entity that
    /// could never hold an object.
    static func linkHierarchy(
        _ entities: [EntityDescription],
        byType: [ObjectIdentifier: EntityDescription]
    ) throws(ObjectLogError) {
        for entity in entities {
            guard let parentType = superentityType(of: entity.objectType),
                let parent = byType[ObjectIdentifier(parentType)]
            else { continue }
            entity.superentity = parent
            parent.subentities.append(entity)
        }
        for entity in entities where entity.isAbstract && entity.subentities.isEmpty {
            var message =
                "entity '\(entity.name)' is abstract but has no subentities in the model, so it "
                + "could never hold an object"
            if let parent = entity.superentity, parent.isAbstract {
                message +=
                    "; it inherits isAbstract from '\(parent.name)': override it, for example "
                    + "`self == \(parent.objectType).self`"
            } else {
                message += "; list its subclasses in the model"
            }
            throw ObjectLogError(.invalidModel, message)
        }
    }
}
