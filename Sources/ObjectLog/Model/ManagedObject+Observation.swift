import Observation

// How managed objects take part in Swift's Observation framework: the objects of a context
// whose `objectsAreObservable` is true carry `AccessState.observed`, so that their wrapped
// properties' reads and writes take the slow path, which reports them to the object's
// `ObservationRegistrar` (made on its first read); the engine's own changes (merges, refreshes,
// undo, rollback, inverse relationships) tell the registrar too. Every toolchain this package
// builds with (swift-tools-version 6.0) ships the Observation module on Linux.

// The conformance has no requirements; what it promises is ManagedObjectContext's
// `objectsAreObservable` to keep.
extension ManagedObject: Observable {}

extension ManagedObject {
    /// What observers of the property in observation slot `slot` track: one key path per
    /// property of the entity, the same whether a wrapper's accessor or the engine reports it
    /// (see ``EntityDescription/observationKeyPaths``).
    ///
    /// The key path names no typed property (`\Recipe.title`): the engine changes properties
    /// by index, through accessors that know no key paths, and the wrappers' accessors know
    /// an attribute only by its field offset (making a key path object on every access is
    /// what they are built to avoid).
    subscript(observedProperty slot: Int) -> Int { slot }

    /// Reports a read of the property whose wrapper lies `offset` bytes into the object to the
    /// object's registrar, made now if it has none yet.
    final func reportRead(atOffset offset: Int) {
        guard let entity, let slot = entity.observationSlot(atOffset: offset) else { return }
        makeObservationRegistrar().access(self, keyPath: entity.observationKeyPaths[slot])
    }

    /// Tells the observers of the property whose wrapper lies `offset` bytes into the object
    /// that it is about to change; false when the object has no registrar, and no one was
    /// told.
    final func willChangeObserved(atOffset offset: Int) -> Bool {
        guard let registrar = observationRegistrar, let entity,
            let slot = entity.observationSlot(atOffset: offset)
        else { return false }
        registrar.willSet(self, keyPath: entity.observationKeyPaths[slot])
        return true
    }

    /// Tells the observers of the property whose wrapper lies `offset` bytes into the object
    /// that it has changed, after ``willChangeObserved(atOffset:)`` told them it would.
    final func didChangeObserved(atOffset offset: Int) {
        guard let registrar = observationRegistrar, let entity,
            let slot = entity.observationSlot(atOffset: offset)
        else { return }
        registrar.didSet(self, keyPath: entity.observationKeyPaths[slot])
    }

    /// Runs `change`, which changes the persistent properties whose indexes (their
    /// ``PropertyAccessor/index``) are `indexes`, and tells their observers before and after.
    ///
    /// For an object without a registrar, the case of nearly every object the engine changes,
    /// it only runs `change`.
    final func changingObservedProperties<Indexes: Collection<Int>, Result>(
        _ indexes: Indexes,
        _ change: () -> Result
    ) -> Result {
        guard let registrar = observationRegistrar, !indexes.isEmpty, let entity else {
            return change()
        }
        let keyPaths = entity.observationKeyPaths
        for index in indexes { registrar.willSet(self, keyPath: keyPaths[index]) }
        let result = change()
        for index in indexes { registrar.didSet(self, keyPath: keyPaths[index]) }
        return result
    }
}
