import ObjectLogStore

extension ManagedObjectContext {
    /// Makes a context whose saves go into this one instead of the store: a scratch pad for
    /// an editor, to keep or throw away as a whole.
    ///
    /// ```swift
    /// let editor = context.newChildContext()
    /// let draft = try #require(try editor.existingObject(with: recipe.objectID) as? Recipe)
    /// draft.title = "Soup"
    /// try editor.save()       // `recipe.title` is "Soup" in `context`, unsaved
    /// try context.save()      // now in the store
    /// ```
    ///
    /// The child sees this context as it is whenever it reads: its fetches, counts and faults
    /// include this context's unsaved inserts, updates and deletes. The child's ``save()``
    /// validates its changes and applies them to this context, where they are unsaved changes
    /// (this context's ``hasChanges`` is then true, and its ``undoManager``, if any, records
    /// them); nothing reaches the store until this context saves. Dropping the child, or its
    /// ``rollback()``, discards what it did not save. A child can have children of its own.
    ///
    /// When both changed the same object, the child's save wins: the object takes the child's
    /// values, all of them, and the objects on the other side of its relationships are kept
    /// in step. Saving a change to an object this context has deleted since the child read it
    /// is a conflict, which the child's ``mergePolicy`` resolves (by default the save throws
    /// ``ObjectLogError/Code/conflict``).
    ///
    /// The child belongs to this context's isolation domain, as this context's objects do
    /// (made inside ``BackgroundContext/perform(_:)``, it lives in that call); use both from
    /// there only. Objects keep their ``ObjectID`` from one to the other: look an object up
    /// by its ID to edit it in the child, and the child's inserted objects have their final
    /// IDs at once. A child cannot save metadata (set it on the coordinator of the context
    /// that saves to the store).
    ///
    /// - Complexity: Each fetch and fault of the child reads this context's changed objects
    ///   anew, encoding those it needs; a fetch of an entity whose objects the child has not
    ///   registered copies their records. Children suit edits, not bulk work.
    public func newChildContext() -> ManagedObjectContext {
        let store = ParentContextStore(parent: self)
        let child = ManagedObjectContext(
            coordinator: PersistentStoreCoordinator(model: model, parentStore: store)
        )
        child.name = name.map { "\($0) (child)" }
        child.objectsAreObservable = objectsAreObservable
        return child
    }

    /// The context this one saves into; nil for a context that saves to the store (see
    /// ``newChildContext()``).
    public var parent: ManagedObjectContext? {
        (store as? ParentContextStore)?.parent
    }

    /// Applies a child's save: its inserted and updated objects take the child's values (new
    /// ones are inserted under their keys), its deleted ones are deleted with their delete
    /// rules; then tells the objects-did-change handlers.
    ///
    /// The child kept both sides of its relationships in step; this context may have changed
    /// them since the child read them, so each changed relationship's inverses are set again
    /// here, against what this context holds.
    func applyChildSave(_ changes: [Transaction.Change]) throws(ObjectLogError) {
        var applied = ObjectChanges()
        for change in changes where !change.isDelete {
            guard let entity = model.entity(tag: change.entity) else {
                throw ObjectLogError(
                    .corrupt,
                    "a child context saved an object of entity tag \(change.entity), which the "
                        + "model does not have"
                )
            }
            let object: ManagedObject
            if let existing = registeredObject(forKey: change.key) {
                object = existing
                if object.isDeleted { try insert(object) }
                prepareModification(of: object)
                applied.updated.append(object.objectID)
            } else {
                object = entity.objectType.init()
                insert(object, key: change.key, entity: entity)
                applied.inserted.append(object.objectID)
            }
            let before = entity.relationshipAccessors.map { $0.keys(of: object) }
            // An observed object's values are decoded beside it, and then copied in, so that
            // its observers hear of the properties whose values change before they do.
            let target: ManagedObject
            if object.observationRegistrar != nil {
                target = entity.objectType.init()
                target.key = change.key
                target.entity = entity
            } else {
                target = object
            }
            let failure = change.payload.withUnsafeBytes { buffer -> ObjectLogError? in
                var reader = PayloadReader(buffer)
                do throws(ObjectLogError) {
                    try ObjectDecoder.decode(
                        &reader,
                        into: target,
                        entity: entity,
                        source: RecordSource(store: store, key: change.key, context: self)
                    )
                } catch {
                    return error
                }
                return nil
            }
            if let failure { throw failure }
            if target !== object { assignValues(of: entity.accessors, from: target, to: object) }
            for (index, accessor) in entity.relationshipAccessors.enumerated() {
                let after = accessor.keys(of: object)
                let removed = before[index].filter { !after.contains($0) }
                let added = after.filter { !before[index].contains($0) }
                if !removed.isEmpty || !added.isEmpty {
                    object.updateInverses(of: accessor, removing: removed, adding: added)
                }
            }
        }
        for change in changes where change.isDelete {
            guard let object = registeredObject(forKey: change.key), !object.isDeleted else {
                continue
            }
            applied.deleted.append(object.objectID)
            delete(object)
        }
        if !applied.isEmpty { post(objectsDidChange: applied) }
    }

    /// Inserts an object a child context inserted, under the key it has there.
    private func insert(_ object: ManagedObject, key: ObjectKey, entity: EntityDescription) {
        recordUndoState(of: object)
        object.key = key
        object.entity = entity
        object.contextLink = link
        object.lifecycle = .inserted
        object.accessState = observationBits
        registry.insert(object, for: key)
        insertedList.append(object)
        insertedCount += 1
    }
}
