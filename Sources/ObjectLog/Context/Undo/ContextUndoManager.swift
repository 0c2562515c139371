/// Undo and redo for one ``ManagedObjectContext``: Core Data's `undoManager`, without
/// Foundation's `UndoManager` (which has no working implementation on Linux).
///
/// A context has none until you give it one, as on iOS and in a SwiftData context made by
/// hand: recording what each change undoes costs memory and a little time per changed object,
/// which a context that imports or serves requests should not pay.
///
/// ```swift
/// context.undoManager = ContextUndoManager(levelsOfUndo: 20)
/// recipe.title = "Soup"
/// context.processPendingChanges()    // ends the implicit group: one level of undo
/// context.undo()                     // recipe.title is back to what it was
/// context.redo()                     // "Soup" again
/// ```
///
/// ## Groups
///
/// One call to ``undo()`` takes back one *group* of changes. Changes made outside an explicit
/// group fall into an implicit group, which stays open until one of these closes it:
/// ``ManagedObjectContext/processPendingChanges()``, a successful
/// ``ManagedObjectContext/save()``, ``beginUndoGrouping()``, ``undo()`` or ``redo()``.
/// Core Data closes its implicit group at the end of each run-loop turn; here there is no run
/// loop, so call ``ManagedObjectContext/processPendingChanges()`` where a user action ends
/// (after handling an event or a request).
///
/// ``beginUndoGrouping()`` and ``endUndoGrouping()`` make an explicit group of everything
/// between them, saves included; nested pairs belong to the outermost one.
///
/// ## What is undone
///
/// Undo puts every object the group touched back as it was before the group: attribute
/// values, relationships on both sides, inserted objects (they leave the context again),
/// deleted objects (they come back, with their relationships) and everything a delete rule
/// cascaded to or nullified. The objects are the same instances as before. A new change after
/// an undo clears the redo levels.
///
/// Undo does not touch the store. Undoing changes that were already saved makes new unsaved
/// changes, which the next save writes, as in Core Data: undoing a saved insert deletes the
/// object, undoing a saved delete inserts it again under its ``ObjectID``. Changes made in the
/// same save interval come back exactly, so undoing every change since the last save leaves
/// the context with ``ManagedObjectContext/hasChanges`` false.
///
/// Not recorded: batch requests (they change the store, not the context), changes merged from
/// other contexts, and ``ManagedObjectContext/refresh(_:mergeChanges:)``.
/// ``ManagedObjectContext/rollback()`` and ``ManagedObjectContext/reset()`` remove every level
/// (``removeAllActions()``).
///
/// A manager belongs to one context and its isolation domain, like the context's objects.
public final class ContextUndoManager {
    /// The most groups ``undo()`` can take back.
    ///
    /// The oldest are forgotten beyond it. 0, the default, keeps every group.
    public var levelsOfUndo: Int {
        didSet { trimUndoLevels() }
    }

    /// How many explicit groups are open: 0 outside ``beginUndoGrouping()`` and
    /// ``endUndoGrouping()``, 1 inside one pair, more inside nested pairs.
    public private(set) var groupingLevel = 0

    /// Whether ``undo()`` would take back a group: a closed one, or changes in the open one.
    public var canUndo: Bool { !undoLevels.isEmpty || openGroup?.isEmpty == false }

    /// Whether ``redo()`` would make a group again: something was undone, and no change made
    /// since.
    public var canRedo: Bool { !redoLevels.isEmpty && openGroup?.isEmpty != false }

    /// Whether an ``undo()`` is putting objects back (for code that observes the context).
    public private(set) var isUndoing = false

    /// Whether a ``redo()`` is putting objects back.
    public private(set) var isRedoing = false

    /// The link to the context the manager belongs to; nil until it is given to one.
    var link: ContextLink?
    /// The group changes are recorded into; nil until the first change after a group closed.
    var openGroup: UndoGroup?
    var undoLevels: [UndoGroup] = []
    var redoLevels: [UndoGroup] = []
    /// The context's successful saves since the manager was given to it (see
    /// ``UndoState/saves``).
    var saves: UInt64 = 0

    /// Creates an undo manager; give it to a context's
    /// ``ManagedObjectContext/undoManager``.
    /// - Parameter levelsOfUndo: The most groups to keep; 0 keeps every group.
    public init(levelsOfUndo: Int = 0) {
        self.levelsOfUndo = max(0, levelsOfUndo)
    }

    /// Opens an explicit group: every change until the matching ``endUndoGrouping()`` is
    /// undone by one ``undo()``.
    ///
    /// An implicit group that is open is closed first. Nested pairs belong to the outermost.
    public func beginUndoGrouping() {
        if groupingLevel == 0 { closeGroup() }
        groupingLevel += 1
    }

    /// Closes the explicit group ``beginUndoGrouping()`` opened; the outermost one becomes a
    /// level of undo if it changed anything.
    ///
    /// - Precondition: A group is open (``groupingLevel`` is above 0).
    public func endUndoGrouping() {
        precondition(groupingLevel > 0, "endUndoGrouping() without beginUndoGrouping()")
        groupingLevel -= 1
        if groupingLevel == 0 { closeGroup() }
    }

    /// Takes back the last group of changes: every object it touched is as it was before.
    ///
    /// Open groups, explicit ones included, are closed first. The group can then be made
    /// again with ``redo()``. Does nothing when there is nothing to undo.
    public func undo() {
        guard let context = link?.context else { return }
        closeAllGroups()
        guard let group = undoLevels.popLast() else { return }
        isUndoing = true
        context.restore(group, before: true)
        isUndoing = false
        redoLevels.append(group)
    }

    /// Makes the last undone group of changes again.
    ///
    /// Does nothing when nothing was undone, or a change was made since.
    public func redo() {
        guard let context = link?.context else { return }
        closeAllGroups()
        guard let group = redoLevels.popLast() else { return }
        isRedoing = true
        context.restore(group, before: false)
        isRedoing = false
        undoLevels.append(group)
        trimUndoLevels()
    }

    /// Forgets every level of undo and redo, and the changes of the open group.
    ///
    /// Open explicit groups stay open, empty.
    public func removeAllActions() {
        if let openGroup, let context = link?.context {
            context.armUndoRecording(of: openGroup)
        }
        openGroup = nil
        undoLevels = []
        redoLevels = []
    }

    // MARK: - Recording

    /// Whether changes are being recorded now (not while an undo or redo puts objects back).
    var isRecording: Bool { !isUndoing && !isRedoing }

    /// Adds `object` to the open group, with its state before the change about to be made.
    func record(_ object: ManagedObject, in context: ManagedObjectContext) {
        guard isRecording else { return }
        var group = openGroup ?? UndoGroup()
        openGroup = nil
        group.add(object, before: context.undoState(of: object))
        openGroup = group
    }

    /// Called by the context after each successful save.
    func contextDidSave() {
        saves += 1
        if groupingLevel == 0 { closeGroup() }
    }

    /// Closes the implicit group (``ManagedObjectContext/processPendingChanges()``).
    func processPendingChanges() {
        if groupingLevel == 0 { closeGroup() }
    }

    private func closeAllGroups() {
        groupingLevel = 0
        closeGroup()
    }

    /// Closes the open group: takes its objects' states after it and makes it a level of
    /// undo, which clears the levels of redo; a group without changes is dropped.
    private func closeGroup() {
        guard var group = openGroup else { return }
        openGroup = nil
        guard let context = link?.context else { return }
        group.close { context.undoState(of: $0) }
        context.armUndoRecording(of: group)
        guard !group.isEmpty else { return }
        undoLevels.append(group)
        redoLevels = []
        trimUndoLevels()
    }

    private func trimUndoLevels() {
        if levelsOfUndo > 0, undoLevels.count > levelsOfUndo {
            undoLevels.removeFirst(undoLevels.count - levelsOfUndo)
        }
    }
}
