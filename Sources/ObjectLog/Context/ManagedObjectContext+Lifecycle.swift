import Foundation

// When the engine calls the lifecycle hooks that `ManagedObject` declares (awake, will and did
// save), and the bookkeeping that keeps `willSave()` to once per object per save.

extension ManagedObject {
    /// Calls ``awakeFromFetch()`` with change tracking off, as Core Data does: what the hook
    /// sets up from the loaded values does not make the object updated.
    final func awakeAfterLoad() {
        let tracked = accessState.contains(.tracksUpdates)
        if tracked { accessState.remove(.tracksUpdates) }
        awakeFromFetch()
        if tracked { accessState.insert(.tracksUpdates) }
    }
}

extension ManagedObjectContext {
    /// The most rounds of ``ManagedObject/willSave()`` a save runs.
    ///
    /// Round one is for the changed objects, each later round for the objects that the
    /// previous round's hooks inserted, deleted or changed. A save that still finds new objects after this many rounds throws
    /// rather than run forever (a `willSave()` that inserts an object whose `willSave()`
    /// inserts another, and so on).
    static let maximumWillSaveRounds = 100

    /// What the first round of `willSave()` calls saw, so that later rounds find the objects it
    /// did not reach.
    struct WillSaveLedger {
        /// How many entries of ``ManagedObjectContext/insertedList`` have had `willSave()`.
        var insertedSeen: Int
        /// ``ObjectTable/mutations`` of the updated objects when their hooks last ran.
        var updateMutations: Int
        /// How many objects were deleted when their hooks last ran.
        var deletedSeen: Int
        /// The updated and deleted objects that have had `willSave()`, built only once some
        /// hook changed another saved object (a bulk save never pays for it).
        var called: Set<ObjectIdentifier>?
        /// The updated and deleted objects of the first round, to build ``called`` from.
        var firstRound: [ManagedObject]
    }

    /// Calls `willSave()` on the objects that the hooks run so far inserted, updated or deleted,
    /// round after round until a round changes no other object.
    ///
    /// - Returns: Whether any object was called, so the caller knows its lists are stale.
    /// - Throws: ``ObjectLogError/Code/willSaveLoop`` after ``maximumWillSaveRounds`` rounds.
    func runLaterWillSaveRounds(_ ledger: inout WillSaveLedger) throws(ObjectLogError) -> Bool {
        var calledAny = false
        // Round one ran before this call.
        for _ in 1..<Self.maximumWillSaveRounds {
            let round = nextWillSaveRound(&ledger)
            guard !round.isEmpty else { return calledAny }
            calledAny = true
            for object in round { object.willSave() }
        }
        guard !nextWillSaveRound(&ledger).isEmpty else { return calledAny }
        throw ObjectLogError(
            .willSaveLoop,
            "willSave() kept changing other objects for \(Self.maximumWillSaveRounds) rounds; "
                + "the save stopped. Check for equal values before setting them, and do not "
                + "insert objects from willSave() unconditionally"
        )
    }

    /// The changed objects that have not had `willSave()` yet, marked as having had it.
    private func nextWillSaveRound(_ ledger: inout WillSaveLedger) -> [ManagedObject] {
        var round: [ManagedObject] = []
        if insertedList.count > ledger.insertedSeen {
            for object in insertedList[ledger.insertedSeen...]
            where object.isInserted && object.contextLink === link {
                round.append(object)
            }
            ledger.insertedSeen = insertedList.count
        }
        if updatedMap.mutations != ledger.updateMutations || deletedMap.count != ledger.deletedSeen
        {
            var called = ledger.called ?? Set(ledger.firstRound.lazy.map { ObjectIdentifier($0) })
            for object in updatedMap.allObjects + Array(deletedMap.values)
            where called.insert(ObjectIdentifier(object)).inserted {
                round.append(object)
            }
            ledger.called = called
            ledger.updateMutations = updatedMap.mutations
            ledger.deletedSeen = deletedMap.count
        }
        return round
    }

    /// Calls ``ManagedObject/didSave()`` on the objects a save wrote, after its bookkeeping,
    /// so that changes the hooks make are unsaved changes for the next save.
    func callDidSave(
        inserted: [ManagedObject],
        updated: [ManagedObject],
        deleted: [ManagedObject],
        skipped: Set<ObjectKey>
    ) {
        if skipped.isEmpty {
            inserted.forEachUnretained { $0.didSave() }
            updated.forEachUnretained { $0.didSave() }
            for object in deleted { object.didSave() }
            return
        }
        for object in inserted + updated + deleted where !skipped.contains(object.key) {
            object.didSave()
        }
    }
}
