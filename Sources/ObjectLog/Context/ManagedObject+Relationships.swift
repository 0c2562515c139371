import ObjectLogStore

extension ManagedObject {
    /// Makes sure the object and the destinations it is being related to share a context,
    /// inserting whichever side is not in one yet; false when they cannot, and the assignment
    /// must not be made.
    ///
    /// A relationship setter cannot throw, so a destination of another context (or a class
    /// outside the model) is recorded on the context, whose next save throws it (see
    /// ``ManagedObjectContext/misuseErrors``). Two objects outside any context have no context
    /// to record it on: that stays a trap, with a message that release builds keep too.
    final func adoptContext(for destinations: [ManagedObject], property: AnyKeyPath) -> Bool {
        let context =
            managedObjectContext ?? destinations.lazy.compactMap(\.managedObjectContext).first
        guard let context else {
            if destinations.isEmpty { return true }
            fatalError(
                "cannot relate \(self) to \(destinations[0]): neither is in a context; insert one "
                    + "of them first"
            )
        }
        do throws(ObjectLogError) {
            if managedObjectContext == nil { try context.insert(self) }
            for destination in destinations where destination.managedObjectContext !== context {
                if destination.managedObjectContext == nil {
                    try context.insert(destination)
                    continue
                }
                throw ObjectLogError(
                    .contextMismatch,
                    "cannot relate \(self) to \(destination) (\(relationshipName(property))): they "
                        + "belong to different contexts; the relationship was not set",
                    objectID: objectID,
                    property: relationshipName(property)
                )
            }
        } catch {
            context.recordMisuse(error)
            return false
        }
        return true
    }

    /// The name of the relationship whose storage is at `storage`, for messages.
    final func relationshipName(_ storage: AnyKeyPath) -> String {
        entity?.relationship(storage: storage, declaredInverse: nil)?.name ?? "a relationship"
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
                    inverse.changeKeys(keys, of: destination)
                }
            } else {
                if let previous = inverse.keys(of: destination).first, previous != self.key,
                    let previousOwner = context.registeredObject(forKey: previous)
                {
                    context.prepareModification(of: previousOwner)
                    accessor.removeKey(destination.key, from: previousOwner)
                }
                if inverse.keys(of: destination) != [self.key] {
                    inverse.changeKeys([self.key], of: destination)
                }
            }
        }
    }
}

extension RelationshipAccessor {
    /// Removes one destination key, as a change the object's observers are told of.
    func removeKey(_ key: ObjectKey, from object: ManagedObject) {
        let keys = keys(of: object)
        guard keys.contains(key) else { return }
        changeKeys(keys.filter { $0 != key }, of: object)
    }
}
