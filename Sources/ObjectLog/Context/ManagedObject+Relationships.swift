import ObjectLogStore

extension ManagedObject {
    /// Makes sure the object and the destinations it is being related to share a context,
    /// inserting whichever side is not in one yet.
    final func adoptContext(for destinations: [ManagedObject]) {
        let context =
            managedObjectContext ?? destinations.lazy.compactMap(\.managedObjectContext).first
        guard let context else {
            precondition(
                destinations.isEmpty,
                "relate objects only when at least one of them is inserted in a context"
            )
            return
        }
        if managedObjectContext == nil { context.insert(self) }
        for destination in destinations {
            if destination.managedObjectContext == nil {
                context.insert(destination)
            } else {
                precondition(
                    destination.managedObjectContext === context,
                    "cannot relate objects of different contexts"
                )
            }
        }
    }

    /// Keeps the inverse side in step after this object's relationship at `storage` lost
    /// `removing` and gained `adding`.
    final func updateInverses(
        storage: AnyKeyPath,
        declaredInverse: AnyKeyPath?,
        removing: [ObjectKey],
        adding: [ObjectKey]
    ) {
        guard let entity,
            let accessor = entity.relationship(storage: storage, declaredInverse: declaredInverse)
        else { return }
        updateInverses(of: accessor, removing: removing, adding: adding)
    }

    /// Keeps the inverse side in step after this object's relationship `accessor` lost
    /// `removing` and gained `adding`.
    final func updateInverses(
        of accessor: RelationshipAccessor,
        removing: [ObjectKey],
        adding: [ObjectKey]
    ) {
        guard let context = managedObjectContext, let inverse = accessor.inverse else { return }
        for key in removing {
            guard let destination = context.registeredObject(forKey: key) else { continue }
            context.prepareModification(of: destination)
            inverse.removeKey(self.key, from: destination)
        }
        for key in adding {
            guard let destination = context.registeredObject(forKey: key) else { continue }
            context.prepareModification(of: destination)
            if inverse.isToMany {
                var keys = inverse.keys(of: destination)
                if !keys.contains(self.key) {
                    keys.append(self.key)
                    inverse.setKeys(keys, of: destination)
                }
            } else {
                if let previous = inverse.keys(of: destination).first, previous != self.key,
                    let previousOwner = context.registeredObject(forKey: previous)
                {
                    context.prepareModification(of: previousOwner)
                    accessor.removeKey(destination.key, from: previousOwner)
                }
                inverse.setKeys([self.key], of: destination)
            }
        }
    }
}

extension RelationshipAccessor {
    /// Removes one destination key.
    func removeKey(_ key: ObjectKey, from object: ManagedObject) {
        let keys = keys(of: object)
        guard keys.contains(key) else { return }
        setKeys(keys.filter { $0 != key }, of: object)
    }
}
