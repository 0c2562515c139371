import ObjectLogStore

// Looking objects up by ID, untyped (as Core Data's `object(with:)` and `existingObject(with:)`)
// and typed, so that callers need no `as!`.

extension ManagedObjectContext {
    /// The object with an ID: the registered instance, or a fault that loads on first access.
    ///
    /// Use ``existingObject(with:)`` to find out at once whether the object exists, and
    /// ``object(with:as:)`` to get it as its class.
    /// - Throws: ``ObjectLogError/Code/entityNotInModel`` if the ID's entity is not in the
    ///   context's model (an ID from another store, say).
    public func object(with id: ObjectID) throws(ObjectLogError) -> ManagedObject {
        if let registered = registry[id.key] { return registered }
        return makeFault(key: id.key, entity: try entity(named: id))
    }

    /// The object with an ID as its class: the registered instance, or a fault that loads on
    /// first access.
    ///
    /// ```swift
    /// let recipe = try context.object(with: id, as: Recipe.self)
    /// recipe.title = "Soup"
    /// ```
    ///
    /// Nothing is read from the store: whether the object exists shows when its values are
    /// first needed (see ``ManagedObject/fulfillFault()``); ``existingObject(with:as:)``
    /// checks at once.
    /// - Parameters:
    ///   - id: The object's ID.
    ///   - type: The object's class.
    /// - Returns: The registered instance, or a new fault.
    /// - Throws: ``ObjectLogError/Code/typeMismatch`` if the ID is of an object of another
    ///   class; ``ObjectLogError/Code/entityNotInModel`` if its entity is not in the model.
    public func object<T: ManagedObject>(
        with id: ObjectID,
        as type: T.Type
    ) throws(ObjectLogError) -> T {
        if let registered = registry[id.key] { return try cast(registered, id, to: T.self) }
        let entity = try entity(named: id)
        // Checked before a fault is registered, so that a wrong guess leaves nothing behind.
        guard entity.objectType is T.Type else { throw mismatch(id, entity.name, T.self) }
        return try cast(makeFault(key: id.key, entity: entity), id, to: T.self)
    }

    /// The object with an ID, loaded, or an error if it does not exist.
    /// - Throws: ``ObjectLogError/Code/notFound`` if no such object is saved or inserted;
    ///   ``ObjectLogError/Code/entityNotInModel`` if the ID's entity is not in the model.
    public func existingObject(with id: ObjectID) throws(ObjectLogError) -> ManagedObject {
        if let registered = registry[id.key], !registered.isDeleted {
            if registered.isFault { registered.fireFault() }
            return registered
        }
        let entity = try entity(named: id)
        guard let location = try readingStore({ try store.location(of: id.key) }),
            location.entity == entity.tag,
            deletedMap[id.key] == nil
        else { throw ObjectLogError(.notFound, "no object \(id)", objectID: id) }
        let object = makeFault(key: id.key, entity: entity)
        object.fireFault()
        return object
    }

    /// The object with an ID as its class, loaded, or an error if it does not exist or is of
    /// another class.
    ///
    /// ```swift
    /// let recipe = try context.existingObject(with: id, as: Recipe.self)
    /// ```
    /// - Parameters:
    ///   - id: The object's ID.
    ///   - type: The object's class.
    /// - Returns: The object, its values loaded.
    /// - Throws: ``ObjectLogError/Code/notFound`` if no such object is saved or inserted;
    ///   ``ObjectLogError/Code/typeMismatch`` if it is of another class;
    ///   ``ObjectLogError/Code/entityNotInModel`` if its entity is not in the model.
    public func existingObject<T: ManagedObject>(
        with id: ObjectID,
        as type: T.Type
    ) throws(ObjectLogError) -> T {
        if registry[id.key] == nil {
            let entity = try entity(named: id)
            guard entity.objectType is T.Type else { throw mismatch(id, entity.name, T.self) }
        }
        return try cast(existingObject(with: id), id, to: T.self)
    }

    /// The objects with IDs as their class, loaded in one read of the store, in the order of
    /// `ids`.
    ///
    /// ``existingObject(with:as:)`` reads the store once for each object; this reads every
    /// object that is not loaded yet at once. On a store on a database server that is one
    /// round trip in place of one per ID, as a Core Data fetch of `SELF IN` a list of IDs
    /// would be:
    ///
    /// ```swift
    /// let recipes = try context.existingObjects(with: ids, as: Recipe.self)
    /// for recipe in recipes { recipe.rating += 1 }
    /// ```
    /// - Parameters:
    ///   - ids: The objects' IDs.
    ///   - type: The objects' class.
    /// - Returns: The objects, their values loaded.
    /// - Throws: ``ObjectLogError/Code/notFound`` for the first ID whose object is not saved
    ///   or inserted (nothing is left registered for it); ``ObjectLogError/Code/typeMismatch``
    ///   if one is of another class; ``ObjectLogError/Code/entityNotInModel`` if an ID's entity
    ///   is not in the model.
    public func existingObjects<T: ManagedObject>(
        with ids: [ObjectID],
        as type: T.Type
    ) throws(ObjectLogError) -> [T] {
        var objects: [T] = []
        objects.reserveCapacity(ids.count)
        var faults: [ObjectKey] = []
        var made: Set<ObjectKey> = []
        for id in ids {
            let isNew = registry[id.key] == nil
            let object = try object(with: id, as: T.self)
            if isNew { made.insert(id.key) }
            if object.isFault { faults.append(id.key) }
            objects.append(object)
        }
        loadFaults(keys: faults)
        do {
            try throwFaultError()
        } catch {
            forget(made)
            throw error
        }
        for (id, object) in zip(ids, objects)
        where object.isFault || object.isDeleted || deletedMap[id.key] != nil {
            forget(made)
            throw ObjectLogError(.notFound, "no object \(id)", objectID: id)
        }
        return objects
    }

    /// Unregisters the faults among `keys` that are still faults: made for objects that turned
    /// out not to exist.
    private func forget(_ keys: Set<ObjectKey>) {
        for key in keys where registry[key]?.isFault == true {
            _ = registry.take(key)
            registeredFaults = max(0, registeredFaults - 1)
        }
    }

    /// The entity an ID names, or an error when the model has none of that name.
    func entity(named id: ObjectID) throws(ObjectLogError) -> EntityDescription {
        guard let entity = model.entity(named: id.entityName) else {
            throw ObjectLogError(
                .entityNotInModel,
                "entity \(id.entityName) of \(id) is not in the model (its entities: "
                    + model.entities.map(\.name).joined(separator: ", ") + ")",
                objectID: id
            )
        }
        return entity
    }

    private func cast<T: ManagedObject>(
        _ object: ManagedObject,
        _ id: ObjectID,
        to: T.Type
    ) throws(ObjectLogError) -> T {
        guard let typed = object as? T else {
            throw mismatch(id, object.entity?.name ?? "\(type(of: object))", T.self)
        }
        return typed
    }

    private func mismatch(
        _ id: ObjectID,
        _ entityName: String,
        _ type: ManagedObject.Type
    )
        -> ObjectLogError
    {
        ObjectLogError(
            .typeMismatch,
            "\(id) is a \(entityName), not a \(type)",
            objectID: id
        )
    }
}
