import ObjectLogStore

// MARK: - Resolving uniqueness conflicts of inserted objects (upserts)

extension ManagedObjectContext {
    /// Resolves inserted objects that collide on a uniqueness constraint with an existing
    /// object, as ``mergePolicy`` says.
    ///
    /// An inserted object collides when, on some uniqueness constraint, its values equal those
    /// of a saved object that this save neither deletes nor moves to other values, of an updated
    /// object's new values, or of an earlier insert of the same save. The object it collides with
    /// is the survivor: it keeps its ID. With `.overwrite` the survivor takes the inserted
    /// object's attribute values and relationships (see ``MergePolicy``); with `.rollback` it is
    /// unchanged and the inserted object's relationships are cleared. Either way the inserted
    /// instance leaves the context and takes the survivor's ID. An insert that collides with two
    /// different objects (on two constraints) is left alone for the save's uniqueness check to
    /// report.
    ///
    /// The store's side of the check reads the coordinator's uniqueness index; the commit checks
    /// again under its lock, so a save that another context commits in between cannot make this
    /// one write a duplicate: its commit fails, and ``save()`` resolves again and retries.
    /// - Parameter inserted: The save's inserted objects, in insertion order.
    /// - Returns: `nil` if nothing collided; otherwise the objects the resolution newly marked as
    ///   updated (they have not had ``ManagedObject/willSave()`` called yet).
    func resolveUniquenessConflicts(among inserted: [ManagedObject]) -> [ManagedObject]? {
        guard mergePolicy != .error else { return nil }
        var order: [EntityDescription] = []
        var insertsByEntity: [EntityTag: [ManagedObject]] = [:]
        for object in inserted {
            guard let entity = object.entity, !entity.uniquenessConstraints.isEmpty else {
                continue
            }
            if insertsByEntity[entity.tag] == nil { order.append(entity) }
            insertsByEntity[entity.tag, default: []].append(object)
        }
        guard !order.isEmpty else { return nil }
        let updatedBefore = Set(updatedMap.allObjects.map(\.key))
        var redirects: [ObjectKey: ObjectKey] = [:]
        for entity in order {
            resolveConflicts(
                of: entity,
                inserts: insertsByEntity[entity.tag] ?? [],
                redirects: &redirects
            )
        }
        guard !redirects.isEmpty else { return nil }
        redirectReferences(redirects)
        return updatedMap.allObjects.filter { !updatedBefore.contains($0.key) }
    }

    /// Resolves the colliding inserts of one entity; records each duplicate's key and what
    /// references to it become (the survivor's key, or 0 for none).
    private func resolveConflicts(
        of entity: EntityDescription,
        inserts: [ManagedObject],
        redirects: inout [ObjectKey: ObjectKey]
    ) {
        let constraints = entity.uniquenessConstraints
        func values(of object: ManagedObject) -> [[UInt8]] {
            constraints.map { ObjectEncoder.uniqueValue(of: object, group: $0, entity: entity) }
        }
        // Values held in this save (updated objects' new values, inserts kept so far), which
        // take precedence over the store's index for the objects that hold them.
        var claims = UniqueClaims(constraintCount: constraints.count)
        var leaving: Set<ObjectKey> = []
        for object in updatedMap.allObjects where object.hasEntity(entity) {
            leaving.insert(object.key)
            claims.claim(values(of: object), for: object.key)
        }
        for object in deletedMap.values where object.hasEntity(entity) {
            leaving.insert(object.key)
        }
        let insertValues = inserts.map(values(of:))
        var resolutions: [(duplicate: ManagedObject, survivor: ManagedObject)] = []
        let saved = coordinator.savedUniqueHolders(
            entity: entity,
            values: insertValues,
            excluding: leaving
        )
        for (index, duplicate) in inserts.enumerated() {
            let values = insertValues[index]
            var holders: Set<ObjectKey> = []
            for constraint in constraints.indices {
                if let key = claims.holder(of: values[constraint], constraint: constraint) {
                    holders.insert(key)
                } else if let key = saved[index][constraint], !claims.holdsValues(key) {
                    holders.insert(key)
                }
            }
            holders.remove(duplicate.key)
            guard let survivorKey = holders.first else {
                claims.claim(values, for: duplicate.key)
                continue
            }
            // Two different objects hold the values: no single object to merge into.
            guard holders.count == 1, let survivor = registeredObject(forKey: survivorKey),
                survivor.hasEntity(entity)
            else { continue }
            // The survivor ends with the duplicate's values, so later inserts see them.
            if mergePolicy == .overwrite { claims.claim(values, for: survivorKey) }
            resolutions.append((duplicate, survivor))
        }
        if mergePolicy == .overwrite,
            resolutions.lazy.filter({ $0.survivor.isFault }).count >= Self.faultsBeforeBulkLoad
        {
            // One pass over the store instead of one read per survivor.
            loadAllFaults(of: entity)
        }
        for (duplicate, survivor) in resolutions {
            let duplicateKey = duplicate.key
            if mergePolicy == .overwrite {
                merge(duplicate, into: survivor, entity: entity)
                redirects[duplicateKey] = survivor.key
            } else {
                clearRelationships(of: duplicate, entity: entity)
                redirects[duplicateKey] = 0
            }
            registry[duplicateKey] = nil
            insertedCount -= 1
            duplicate.lifecycle = []
            duplicate.managedObjectContext = nil
            duplicate.key = survivor.key
        }
    }

    /// Gives `survivor` the attribute values of `duplicate`, its to-one relationships that are
    /// set, and the destinations of its to-many relationships (added to the survivor's own).
    private func merge(
        _ duplicate: ManagedObject,
        into survivor: ManagedObject,
        entity: EntityDescription
    ) {
        // Loads a fault and records the saved values, as a property write would.
        prepareModification(of: survivor)
        forgetExternalReferences(ofKey: survivor.key, entity: entity)
        assignValues(
            of: entity.accessors.filter { $0.attribute != nil },
            from: duplicate,
            to: survivor
        )
        for accessor in entity.relationshipAccessors {
            let taken = accessor.keys(of: duplicate)
            guard !taken.isEmpty else { continue }
            detach(duplicate, from: taken, through: accessor)
            let old = accessor.keys(of: survivor)
            let mapped = taken.map { $0 == duplicate.key ? survivor.key : $0 }
            var new = mapped
            if accessor.isToMany {
                let oldSet = Set(old)
                new = old + mapped.filter { !oldSet.contains($0) }
            }
            accessor.changeKeys(new, of: survivor)
            let newSet = Set(new)
            let oldSet = Set(old)
            survivor.updateInverses(
                of: accessor,
                removing: old.filter { !newSet.contains($0) },
                adding: new.filter { !oldSet.contains($0) }
            )
        }
    }

    /// Removes a dropped duplicate from the inverse relationships of its destinations.
    private func clearRelationships(of duplicate: ManagedObject, entity: EntityDescription) {
        for accessor in entity.relationshipAccessors {
            let keys = accessor.keys(of: duplicate)
            guard !keys.isEmpty else { continue }
            detach(duplicate, from: keys, through: accessor)
        }
    }

    /// Empties one relationship of `object` and takes it out of its destinations' inverse.
    private func detach(
        _ object: ManagedObject,
        from keys: [ObjectKey],
        through accessor: RelationshipAccessor
    ) {
        if let inverse = accessor.inverse {
            for key in keys {
                guard let destination = registeredObject(forKey: key) else { continue }
                prepareModification(of: destination)
                inverse.removeKey(object.key, from: destination)
            }
        }
        accessor.setKeys([], of: object)
    }

    /// Points relationships without an inverse that name a resolved duplicate at its survivor
    /// (or clears them when the survivor is 0).
    ///
    /// Only pending objects can name a duplicate: relating an object to it changed the object.
    private func redirectReferences(_ redirects: [ObjectKey: ObjectKey]) {
        let pending =
            insertedList.filter { $0.isInserted && $0.managedObjectContext === self }
            + updatedMap.allObjects
        for object in pending {
            guard let entity = object.entity else { continue }
            for accessor in entity.relationshipAccessors where accessor.inverse == nil {
                let keys = accessor.keys(of: object)
                guard keys.contains(where: { redirects[$0] != nil }) else { continue }
                var replaced: [ObjectKey] = []
                for key in keys {
                    let target = redirects[key] ?? key
                    if target != 0, !replaced.contains(target) { replaced.append(target) }
                }
                accessor.changeKeys(replaced, of: object)
            }
        }
    }
}

/// The values of uniqueness constraints held by objects of one save, per constraint.
private struct UniqueClaims {
    private var keysByValue: [[[UInt8]: ObjectKey]]
    private var valuesByKey: [ObjectKey: [[UInt8]]] = [:]

    init(constraintCount: Int) {
        keysByValue = Array(repeating: [:], count: constraintCount)
    }

    /// The object of this save that holds `value` on a constraint.
    func holder(of value: [UInt8], constraint: Int) -> ObjectKey? {
        keysByValue[constraint][value]
    }

    /// Whether the save has given the object values (so the store's index is stale for it).
    func holdsValues(_ key: ObjectKey) -> Bool { valuesByKey[key] != nil }

    /// Records the values an object holds in this save, releasing the ones it held before.
    mutating func claim(_ values: [[UInt8]], for key: ObjectKey) {
        if let old = valuesByKey[key] {
            for (constraint, value) in old.enumerated() where keysByValue[constraint][value] == key
            {
                keysByValue[constraint][value] = nil
            }
        }
        for (constraint, value) in values.enumerated() {
            keysByValue[constraint][value] = key
        }
        valuesByKey[key] = values
    }
}
