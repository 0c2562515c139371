/// What one object was at a moment an undo group looked at it.
struct UndoState {
    /// Whether the object was in the context, and if so its values.
    enum Presence {
        /// Not in the context, or deleted in it.
        case absent
        /// In the context with these values (a scratch object of its class holds them, which
        /// no context knows) and this lifecycle: inserted, updated or neither.
        case present(values: ManagedObject, lifecycle: Lifecycle)
    }

    var presence: Presence
    /// The number of saves the context had made when the state was taken: a state of the
    /// same save interval restores the object's lifecycle exactly, an older one is put back
    /// as new unsaved changes against what is saved now.
    var saves: UInt64

    var isAbsent: Bool {
        if case .absent = presence { return true }
        return false
    }
}

/// One level of undo: every object a group of changes touched, with its state before the
/// first change and after the last.
///
/// A whole state per object rather than a list of inverse operations: an undo puts each object
/// back as it was, so inverses, cascades and the order the changes were made in need no
/// bookkeeping of their own (an object a cascade deleted is one more object of the group).
struct UndoGroup {
    struct Entry {
        /// The object, kept alive by the group so that an undo or redo brings back the same
        /// instance.
        let object: ManagedObject
        var before: UndoState
        /// Set when the group closes.
        var after: UndoState?
    }

    var entries: [Entry] = []
    /// Where each object's entry is, by object identity.
    private var positions: [ObjectIdentifier: Int] = [:]

    var isEmpty: Bool { entries.isEmpty }

    func contains(_ object: ManagedObject) -> Bool {
        positions[ObjectIdentifier(object)] != nil
    }

    /// Adds an object with its state before the group changes it; an object already in the
    /// group keeps its first state.
    mutating func add(_ object: ManagedObject, before: @autoclosure () -> UndoState) {
        let identifier = ObjectIdentifier(object)
        guard positions[identifier] == nil else { return }
        positions[identifier] = entries.count
        entries.append(Entry(object: object, before: before()))
    }

    /// Takes every object's state after the group, dropping objects that were neither in the
    /// context before nor after it (inserted and deleted again).
    mutating func close(_ state: (ManagedObject) -> UndoState) {
        for index in entries.indices { entries[index].after = state(entries[index].object) }
        entries.removeAll { $0.before.isAbsent && $0.after?.isAbsent == true }
        positions = [:]
    }
}
