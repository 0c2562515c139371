import ObjectLogStore

// The context's side of Swift's Observation framework: the switch, and the changes the engine
// makes to registered objects (merges, refreshes, rollback, undo, a child's save), which tell
// the observers of the properties whose values they change. The wrappers' side is in
// ManagedObject+Observation.swift.

extension ManagedObjectContext {
    /// Whether the objects registered in this context take part in Swift's Observation
    /// framework: `withObservationTracking` and `Observations` see their properties change.
    ///
    /// ```swift
    /// context.objectsAreObservable = true
    /// let recipe = try context.fetch(Recipe.self)[0]
    /// withObservationTracking {
    ///     _ = recipe.title
    /// } onChange: {
    ///     print("the title is about to change")
    /// }
    /// recipe.title = "Soup"  // prints
    /// ```
    ///
    /// `false` by default. SwiftData's models are always observable; here it is a switch
    /// because of what it costs each object: every read and write of an observed object's
    /// properties takes a slower path that reports it to the object's observation registrar,
    /// and an object gets its registrar, a heap allocation, on its first read. Fetches and bulk
    /// inserts of millions of objects, which nothing observes, would pay for it on every
    /// property. Turn it on for the contexts a user interface reads, such as
    /// ``PersistentContainer/mainContext``.
    ///
    /// It applies to the objects registered when it is set and to every object registered
    /// later: inserted, fetched, made as a fault or looked up by ID. A child context
    /// (``newChildContext()``) starts with its parent's setting. Turning it off stops
    /// reporting reads and writes through property wrappers.
    ///
    /// Observers hear of every change to a property's value in this context, on the context's
    /// isolation domain where the change happens: property setters (both sides of a
    /// relationship), changes merged from other contexts and processes
    /// (``mergeChanges(from:)``, the main context's automatic merges, batch requests),
    /// ``refresh(_:mergeChanges:)``, ``rollback()``, ``undo()`` and ``redo()``, a merge
    /// policy's resolution of a save, and a child context's save into this one. A deletion is
    /// not a change of the deleted object's values, and tells its observers nothing (the
    /// objects whose relationships its delete rules change are told); follow deletions with
    /// ``onObjectsDidChange(_:)`` or a live query. See <doc:TrackingChanges>.
    public var objectsAreObservable: Bool {
        get { observationBits.contains(.observed) }
        set {
            guard newValue != objectsAreObservable else { return }
            observationBits = newValue ? .observed : []
            for object in registry.allObjects {
                if newValue {
                    object.accessState.insert(.observed)
                } else {
                    object.accessState.remove(.observed)
                }
            }
        }
    }

    // MARK: - Changes the engine makes

    /// Copies the values of `accessors` from `source` into `object`, two objects of one entity,
    /// as a change of `object`: the observers of each property whose value differs are told.
    func assignValues(
        of accessors: [PropertyAccessor],
        from source: ManagedObject,
        to object: ManagedObject
    ) {
        let changed =
            object.observationRegistrar == nil
            ? [] : differingProperties(of: object, and: source, among: accessors)
        object.changingObservedProperties(changed) {
            for accessor in accessors { accessor.copy(from: source, to: object) }
        }
    }

    /// Turns `object` back into a fault, whose next read loads what the store holds; the
    /// observers of each property whose value that changes are told.
    func refault(_ object: ManagedObject) {
        replacingValuesWithStored(object) {
            object.accessState = observationBits.union([.fault, .tracksUpdates])
        }
    }

    /// Runs `change`, after which `object`'s values are the ones its record in the store holds
    /// (it makes the object a fault, or leaves it one), telling the observers of each property
    /// whose value differs from the record's.
    ///
    /// Only an object with a registrar pays for the comparison, which reads the record. A
    /// fault's values are those it had when it became one: the last its observers saw.
    func replacingValuesWithStored(_ object: ManagedObject, _ change: () -> Void) {
        guard object.observationRegistrar != nil, let entity = object.entity else {
            change()
            return
        }
        object.changingObservedProperties(propertiesDifferingFromStore(object, entity), change)
    }

    /// The indexes of `object`'s persistent properties whose values differ from those of its
    /// record in the store; all of them when the record cannot be read.
    private func propertiesDifferingFromStore(
        _ object: ManagedObject,
        _ entity: EntityDescription
    ) -> [Int] {
        let all = entity.accessors.map(\.index)
        guard let record = try? store.readObject(object.key) else { return all }
        let stored = entity.objectType.init()
        stored.key = object.key
        // Without a source: external data stays unread, and is not compared (see below).
        let decoded: Void? = record.payload.withUnsafeBytes { buffer in
            var reader = PayloadReader(buffer)
            return try? ObjectDecoder.decode(&reader, into: stored, entity: entity, source: nil)
        }
        guard decoded != nil else { return all }
        return differingProperties(of: object, and: stored, among: entity.accessors)
    }

    /// The indexes of the properties among `accessors` whose values differ between `object`
    /// and `other`, two objects of one entity, compared by their encoding.
    ///
    /// External data counts as different whatever its value: comparing it would read both
    /// values, large by definition, from their blobs. Its observers may hear of a change that
    /// left it as it was, never miss one.
    func differingProperties(
        of object: ManagedObject,
        and other: ManagedObject,
        among accessors: [PropertyAccessor]
    ) -> [Int] {
        var differing: [Int] = []
        for accessor in accessors
        where accessor.attribute?.options.contains(.externalStorage) == true
            || ObjectEncoder.encodedValue(of: object, accessor: accessor, context: nil)
                != ObjectEncoder.encodedValue(of: other, accessor: accessor, context: nil)
        {
            differing.append(accessor.index)
        }
        return differing
    }
}

extension RelationshipAccessor {
    /// Replaces the destination keys of `object` as a change its observers are told of (the
    /// engine's changes of relationships, where ``setKeys(_:of:)`` only stores keys, as a
    /// load does).
    func changeKeys(_ keys: [ObjectKey], of object: ManagedObject) {
        object.changingObservedProperties(CollectionOfOne(index)) { setKeys(keys, of: object) }
    }
}
