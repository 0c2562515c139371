// Handlers a context calls around saves and changes: registration, removal and delivery.

extension ManagedObjectContext {
    /// Calls `handler` at the start of every ``save()``, before validation.
    ///
    /// The handler may change objects and metadata; its changes are part of the save. This is
    /// the place to copy per-document settings into the store metadata. Throwing cancels the
    /// save, which then throws ``ObjectLogError/Code/callbackFailed`` with the handler's error
    /// as its ``ObjectLogError/underlyingError`` (an ``ObjectLogError`` the handler throws
    /// passes through as it is).
    /// - Returns: A token for ``removeObserver(_:)``; the handler stays registered if you drop
    ///   it.
    @discardableResult
    public func onWillSave(
        _ handler: @escaping (ManagedObjectContext) throws -> Void
    ) -> ObserverToken {
        let token = ObserverToken.make()
        willSaveHandlers.append((token.number, handler))
        return token
    }

    /// Calls `handler` after every successful ``save()`` with the saved objects' IDs.
    ///
    /// A save that writes nothing (no changes) calls no handler.
    /// - Returns: A token for ``removeObserver(_:)``; the handler stays registered if you drop
    ///   it.
    @discardableResult
    public func onDidSave(_ handler: @escaping (ObjectChanges) -> Void) -> ObserverToken {
        let token = ObserverToken.make()
        didSaveHandlers.append((token.number, handler))
        return token
    }

    /// Calls `handler` when the context's objects change through a save, a merge, a
    /// rollback or an undo, with the IDs of the objects concerned.
    ///
    /// It fires at exactly these moments:
    /// - after a successful ``save()`` (before the did-save handlers), with what it saved;
    /// - after ``mergeChanges(from:)`` (the main context's automatic merges included), with
    ///   the merged objects this context has registered and the inserted ones;
    /// - after ``rollback()`` that discarded changes, with the objects it reverted;
    /// - after ``undo()`` and ``redo()``, with the objects they put back: those that came
    ///   back as inserted, those changed, and those that left the context or were deleted.
    ///
    /// It does *not* fire as properties are set, inserts are made or objects deleted, as Core
    /// Data's `NSManagedObjectContextObjectsDidChange` does at the end of each run-loop turn:
    /// there is no run loop to coalesce changes on, and a notice per write would put a
    /// closure call on every property setter, the hot path of bulk imports and updates. Read
    /// ``hasChanges``, ``insertedObjects``, ``updatedObjects`` and ``deletedObjects`` for the
    /// unsaved state at any moment.
    /// - Returns: A token for ``removeObserver(_:)``; the handler stays registered if you drop
    ///   it.
    @discardableResult
    public func onObjectsDidChange(_ handler: @escaping (ObjectChanges) -> Void) -> ObserverToken {
        let token = ObserverToken.make()
        changeHandlers.append((token.number, handler))
        return token
    }

    /// Removes a handler registered with ``onWillSave(_:)``, ``onDidSave(_:)`` or
    /// ``onObjectsDidChange(_:)``; it is not called again.
    ///
    /// Removing a handler while the handlers of one event run takes effect from the next
    /// event. A token of another context, or one already removed, changes nothing.
    public func removeObserver(_ token: ObserverToken) {
        willSaveHandlers.removeAll { $0.token == token.number }
        didSaveHandlers.removeAll { $0.token == token.number }
        changeHandlers.removeAll { $0.token == token.number }
        liveQueryHandlers.removeAll { $0.token == token.number }
    }

    /// Whether anything listens for this context's saves: its own handlers or the
    /// coordinator's observers (automatic merging, `saves()` streams).
    var hasSaveListeners: Bool {
        !changeHandlers.isEmpty || !didSaveHandlers.isEmpty || !liveQueryHandlers.isEmpty
            || coordinator.hasSaveObservers
    }

    /// Tells the objects-did-change handlers of `changes` (when there are any) and the live
    /// queries of `all` (of `changes` when nil).
    func post(objectsDidChange changes: ObjectChanges, all: ObjectChanges? = nil) {
        // A copy of the list: a handler that removes one changes the next event's list.
        for entry in liveQueryHandlers { entry.handler(all ?? changes) }
        guard !changes.isEmpty else { return }
        for entry in changeHandlers { entry.handler(changes) }
    }

    func post(didSave changes: ObjectChanges) {
        for entry in didSaveHandlers { entry.handler(changes) }
    }

    func runWillSaveHandlers() throws(ObjectLogError) {
        for entry in willSaveHandlers {
            do {
                try entry.handler(self)
            } catch {
                // The handler's own error stays reachable (and catchable by its type) as the
                // cause; an ObjectLogError (a failed fetch in the handler) passes unchanged.
                throw ObjectLogError.callback(error, "a will-save handler failed")
            }
        }
    }
}
