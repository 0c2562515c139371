// The context's side of undo: the manager it holds, what it records as objects change, and
// how it puts a group's objects back (ContextUndoManager.swift has the levels and groups).

extension ManagedObjectContext {
    /// The context's undo manager; nil, the default, records nothing (see
    /// ``ContextUndoManager``).
    ///
    /// ```swift
    /// context.undoManager = ContextUndoManager(levelsOfUndo: 50)
    /// ```
    ///
    /// Setting a manager starts recording with the next change; changes made before cannot be
    /// undone.
    /// - Precondition: The manager belongs to no other context.
    public var undoManager: ContextUndoManager? {
        get { undoManagerStorage }
        set {
            if let newValue {
                precondition(
                    newValue.link == nil || newValue.link === link,
                    "this ContextUndoManager already belongs to another context"
                )
                newValue.link = link
            }
            if undoManagerStorage !== newValue { undoManagerStorage?.link = nil }
            undoManagerStorage = newValue
            guard newValue != nil else { return }
            // Inserted and changed objects write without a check: make their next write
            // record their state first.
            for object in registry.allObjects { object.accessState.insert(.recordsUndo) }
        }
    }

    /// Takes back the last group of changes (``ContextUndoManager/undo()``); does nothing
    /// without an ``undoManager``.
    public func undo() { undoManagerStorage?.undo() }

    /// Makes the last undone group of changes again (``ContextUndoManager/redo()``); does
    /// nothing without an ``undoManager``.
    public func redo() { undoManagerStorage?.redo() }

    /// Ends the current implicit undo group: the changes made since the last group closed
    /// become one level of undo.
    ///
    /// Call it where a user action ends. Core Data runs it at the end of every run-loop turn;
    /// here nothing does, and ``save()`` runs it after writing. Without an ``undoManager``, or
    /// inside an explicit group (``ContextUndoManager/beginUndoGrouping()``), it does nothing.
    public func processPendingChanges() { undoManagerStorage?.processPendingChanges() }

    // MARK: - Recording

    /// Records `object`'s state before a change, when the context has an undo manager and
    /// the open group does not hold the object yet.
    @inline(__always)
    func recordUndoState(of object: ManagedObject) {
        guard let manager = undoManagerStorage else { return }
        manager.record(object, in: self)
    }

    /// The state of `object` now, for an undo group.
    func undoState(of object: ManagedObject) -> UndoState {
        let saves = undoManagerStorage?.saves ?? 0
        guard object.managedObjectContext === self, !object.isDeleted, let entity = object.entity
        else { return UndoState(presence: .absent, saves: saves) }
        if object.isFault { object.fireFault() }
        let values = entity.objectType.init()
        for accessor in entity.accessors { accessor.copy(from: object, to: values) }
        return UndoState(
            presence: .present(
                values: values,
                lifecycle: object.lifecycle.intersection([.inserted, .updated])
            ),
            saves: saves
        )
    }

    /// Makes the next write of each of the group's objects that are in the context record
    /// its state again, in the group opened next.
    func armUndoRecording(of group: UndoGroup) {
        for entry in group.entries where entry.object.managedObjectContext === self {
            entry.object.accessState.insert(.recordsUndo)
        }
    }

    // MARK: - Putting objects back

    /// Puts every object of `group` back in its state before the group (`before`) or after it,
    /// and tells the objects-did-change handlers.
    func restore(_ group: UndoGroup, before: Bool) {
        // Only pending inserts stay listed, before and after, so that an object inserted
        // again (here, or later by `insert(_:)`) is listed once.
        insertedList.removeAll { !($0.isInserted && $0.contextLink === link) }
        var changes = ObjectChanges()
        let saves = undoManagerStorage?.saves ?? 0
        for entry in group.entries {
            guard let state = before ? entry.before : entry.after else { continue }
            restore(entry.object, to: state, sameSaveInterval: state.saves == saves, &changes)
        }
        if !changes.deleted.isEmpty {
            insertedList.removeAll { !($0.isInserted && $0.contextLink === link) }
        }
        armUndoRecording(of: group)
        releaseSnapshotsIfUnused()
        if !changes.isEmpty { post(objectsDidChange: changes) }
    }

    /// Puts one object in `state`.
    ///
    /// A state of the current save interval comes back exactly: a clean object is clean again.
    /// An older one is put back against what is saved now: an object the store has is updated
    /// or deleted, one it has not is inserted (under its key, so its ``ObjectID`` stays).
    private func restore(
        _ object: ManagedObject,
        to state: UndoState,
        sameSaveInterval: Bool,
        _ changes: inout ObjectChanges
    ) {
        let isRegistered = object.managedObjectContext === self
        switch state.presence {
        case .absent:
            guard isRegistered, !object.isDeleted else { return }
            changes.deleted.append(object.objectID)
            if object.isInserted {
                // Out of the context, keeping its key and entity for a redo.
                registry[object.key] = nil
                object.lifecycle = []
                object.managedObjectContext = nil
                insertedCount -= 1
            } else {
                // Deleted without its delete rules: the group puts back the related objects.
                if object.isFault { object.fireFault() }
                updatedMap[object.key] = nil
                deletedMap[object.key] = object
                object.lifecycle.insert(.deleted)
            }
        case .present(let values, let lifecycle):
            guard let entity = object.entity else { return }
            if !isRegistered {
                changes.inserted.append(object.objectID)
                object.contextLink = link
                object.lifecycle = .inserted
                object.accessState = observationBits
                object.snapshotSpan = 0
                registry.insert(object, for: object.key)
                insertedList.append(object)
                insertedCount += 1
            } else {
                if object.isFault { object.fireFault() }
                if object.isDeleted {
                    changes.inserted.append(object.objectID)
                    deletedMap[object.key] = nil
                    object.lifecycle.remove(.deleted)
                } else {
                    changes.updated.append(object.objectID)
                }
                if !object.isInserted {
                    if sameSaveInterval && lifecycle.isEmpty {
                        // Unchanged since the last save, as it was then.
                        updatedMap[object.key] = nil
                        object.lifecycle.remove(.updated)
                        object.snapshotSpan = 0
                        object.accessState.insert(.tracksUpdates)
                    } else {
                        // Keeps the saved values as the snapshot before they are replaced.
                        object.accessState.remove(.tracksUpdates)
                        markUpdated(object)
                    }
                }
            }
            assignValues(of: entity.accessors, from: values, to: object)
        }
    }
}
