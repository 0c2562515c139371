import Foundation
import ObjectLog
// For did-set tracking (`withObservationTracking(_:didSet:)`), which is SPI: the only way to
// see that observers are told of a change after the value is stored.
@_spi(SwiftUI) import Observation
import Synchronization
import Testing

/// How many times the observation an ``observe(_:)`` started was told of a change (at most
/// once: `withObservationTracking` stops at its first change).
final class ObservedChanges: Sendable {
    private let count = Atomic<Int>(0)

    /// The changes so far.
    var value: Int { count.load(ordering: .sequentiallyConsistent) }

    /// Records a change.
    func record() { count.add(1, ordering: .sequentiallyConsistent) }
}

/// Tracks the properties `read` reads, as a user interface would: the result counts the
/// changes of any of them.
func observe(_ read: () -> Void) -> ObservedChanges {
    let changes = ObservedChanges()
    withObservationTracking(read, onChange: { changes.record() })
    return changes
}

/// Waits, letting other main-actor work run, until `condition` holds or 10 seconds have
/// passed (the caller's expectations then fail rather than hang).
@MainActor
func waitUntil(_ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(10)
    while !condition(), ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// The values an `Observations` sequence handed out.
@MainActor
final class ObservedValues<Value> {
    var values: [Value] = []
}

@Suite("Observation: managed objects in Swift's Observation framework")
struct ObservationTests {
    /// How an object comes to be registered in the observable context.
    enum Registration: String, CaseIterable, CustomStringConvertible {
        case inserted, saved, fault, fetchedByPredicate, lookedUp
        var description: String { rawValue }
    }

    /// A context whose objects are observable, on a store holding configurations "A" and "B".
    private func makeContext() throws -> (PersistentContainer, ManagedObjectContext) {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let setup = container.newContext()
        insertConfiguration("A", into: setup)
        insertConfiguration("B", into: setup)
        try setup.save()
        let context = container.newContext()
        context.objectsAreObservable = true
        return (container, context)
    }

    /// The configuration named `name` in `context`.
    private func configuration(
        _ name: String,
        in context: ManagedObjectContext
    ) throws -> Configuration {
        try #require(try context.fetch(Configuration.self).first { $0.name == name })
    }

    @Test(
        "setting an attribute tells the observers of that attribute, not of others or of other objects",
        arguments: Registration.allCases
    )
    func attributeSet(registration: Registration) throws {
        let (container, context) = try makeContext()
        let other = try configuration("B", in: context)
        let object: Configuration
        switch registration {
        case .inserted:
            object = insertConfiguration("C", into: context)
        case .saved:
            object = insertConfiguration("C", into: context)
            try context.save()
        case .fault:
            let id = try configuration("A", in: container.newContext()).objectID
            object = try #require(try context.fetch(Configuration.self).first { $0.objectID == id })
        case .fetchedByPredicate:
            let request = FetchRequest<Configuration>(predicate: #Predicate { $0.name == "A" })
            object = try #require(try context.fetch(request).first)
        case .lookedUp:
            let id = try configuration("A", in: container.newContext()).objectID
            object = try context.object(with: id, as: Configuration.self)
        }
        let name = observe { _ = object.name }
        let feed = observe { _ = object.feed }
        let otherName = observe { _ = other.name }
        object.name = "renamed"
        #expect(name.value == 1)
        #expect(feed.value == 0, "another attribute of the object")
        #expect(otherName.value == 0, "the same attribute of another object")
        object.feed = 0.01
        #expect(feed.value == 1)
        #expect(object.name == "renamed" && object.feed == 0.01)
    }

    @Test("a transient attribute is observed as a saved one is")
    func transientAttribute() throws {
        let (_, context) = try makeContext()
        let object = try configuration("A", in: context)
        let scratch = observe { _ = object.scratch }
        let name = observe { _ = object.name }
        object.scratch = 7
        #expect(scratch.value == 1)
        #expect(name.value == 0)
    }

    @Test("a context reports nothing until its objects are observable, then for those it has too")
    func switchedContext() throws {
        let (container, _) = try makeContext()
        let context = container.newContext()
        #expect(!context.objectsAreObservable)
        let object = try configuration("A", in: context)
        let unobserved = observe { _ = object.name }
        object.name = "one"
        #expect(unobserved.value == 0)

        context.objectsAreObservable = true
        let observed = observe { _ = object.name }
        object.name = "two"
        #expect(observed.value == 1)
        #expect(context.newChildContext().objectsAreObservable, "a child starts as its parent")

        context.objectsAreObservable = false
        let off = observe { _ = object.name }
        object.name = "three"
        #expect(off.value == 0)
    }

    @Test("relationship changes tell the observers of both sides, and of a previous owner")
    func relationships() throws {
        let (_, context) = try makeContext()
        let first = try configuration("A", in: context)
        let second = try configuration("B", in: context)
        let snapshot = Snapshot(context: context)
        try context.save()

        var firstSnapshots = observe { _ = first.snapshots }
        let firstName = observe { _ = first.name }
        var owner = observe { _ = snapshot.configuration }
        snapshot.configuration = first
        #expect(owner.value == 1)
        #expect(firstSnapshots.value == 1, "the inverse side")
        #expect(firstName.value == 0)

        // To-many side, as a mutation of the set: the destination's to-one changes.
        firstSnapshots = observe { _ = first.snapshots }
        let secondSnapshots = observe { _ = second.snapshots }
        owner = observe { _ = snapshot.configuration }
        second.snapshots.insert(snapshot)
        #expect(secondSnapshots.value == 1)
        #expect(owner.value == 1)
        #expect(firstSnapshots.value == 1, "the previous owner lost the snapshot")
        #expect(snapshot.configuration === second && first.snapshots.isEmpty)

        // A relationship without an inverse.
        let folder = Folder(context: context)
        let tags = observe { _ = folder.tags }
        folder.tags.insert(Tag(context: context))
        #expect(tags.value == 1)
    }

    @Test("a delete tells the objects its rules change, not the deleted object's observers")
    func delete() throws {
        let (_, context) = try makeContext()
        let object = try configuration("A", in: context)
        let snapshot = Snapshot(context: context)
        snapshot.configuration = object
        try context.save()
        let snapshots = observe { _ = object.snapshots }
        let step = observe { _ = snapshot.step }
        let owner = observe { _ = snapshot.configuration }
        context.delete(snapshot)
        #expect(snapshots.value == 1, "nullified")
        #expect(step.value == 0)
        #expect(owner.value == 0)
    }

    @Test("a change saved by a background context and merged into the main context is seen")
    @MainActor
    func mergeFromBackground() async throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let context = container.mainContext
        context.objectsAreObservable = true
        let object = insertConfiguration("A", into: context)
        try context.save()
        let id = object.objectID
        let name = observe { _ = object.name }
        let feed = observe { _ = object.feed }
        try await container.performBackgroundTask { background in
            let theirs = try background.object(with: id, as: Configuration.self)
            theirs.name = "renamed elsewhere"
            try background.save()
        }
        // The main context merges on the main actor, after this test yields it.
        try await waitUntil { name.value > 0 }
        #expect(name.value == 1)
        #expect(feed.value == 0, "the merge changed only the name")
        #expect(object.name == "renamed elsewhere")
    }

    @Test("merges, batch updates and refreshes tell the observers of what they change")
    func mergesAndRefreshes() throws {
        let (container, context) = try makeContext()
        let object = try configuration("A", in: context)
        let id = object.objectID

        // A save elsewhere, merged by hand, while this context has unsaved changes of its own.
        object.notes = "mine"
        var name = observe { _ = object.name }
        var feed = observe { _ = object.feed }
        let other = container.newContext()
        let theirs = try other.object(with: id, as: Configuration.self)
        theirs.feed = 0.04
        var saved = ObjectChanges()
        other.onDidSave { saved = $0 }
        try other.save()
        context.mergeChanges(from: saved)
        #expect(feed.value == 1)
        #expect(name.value == 0)
        #expect(object.feed == 0.04 && object.notes == "mine")
        try context.save()

        // A batch update merges into the context that runs it.
        feed = observe { _ = object.feed }
        name = observe { _ = object.name }
        let named = #Predicate<Configuration> { $0.name == "A" }
        try context.execute(BatchUpdateRequest(predicate: named, updates: [.set(\.feed, to: 0.03)]))
        #expect(feed.value == 1)
        #expect(name.value == 0)
        #expect(object.feed == 0.03)

        // A save elsewhere that is not merged: a refresh reads it.
        _ = object.feed
        feed = observe { _ = object.feed }
        name = observe { _ = object.name }
        let third = container.newContext()
        try third.object(with: id, as: Configuration.self).name = "renamed"
        try third.save()
        context.refresh(object, mergeChanges: false)
        #expect(name.value == 1)
        #expect(feed.value == 0)
        #expect(object.name == "renamed")
    }

    @Test("a save's merge policy tells the observers of the values it puts in")
    func mergePolicies() throws {
        let (container, context) = try makeContext()
        let stale = try configuration("A", in: context)
        stale.feed = 0.02
        let other = container.newContext()
        try other.object(with: stale.objectID, as: Configuration.self).kill = 0.07
        try other.save()
        // The store's version wins the conflict: the unsaved feed goes, the saved kill comes.
        context.mergePolicy = .rollback
        var feed = observe { _ = stale.feed }
        let kill = observe { _ = stale.kill }
        var name = observe { _ = stale.name }
        try context.save()
        #expect(feed.value == 1 && kill.value == 1)
        #expect(name.value == 0)
        #expect(stale.feed == 0.055 && stale.kill == 0.07)

        // An insert of an existing unique name becomes an update of that object.
        context.mergePolicy = .overwrite
        let survivor = try configuration("B", in: context)
        feed = observe { _ = survivor.feed }
        name = observe { _ = survivor.name }
        insertConfiguration("B", into: context).feed = 0.09
        try context.save()
        #expect(feed.value == 1)
        #expect(name.value == 0)
        #expect(survivor.feed == 0.09)
    }

    @Test("undo, redo and rollback tell the observers of the values they put back")
    func undoRedoRollback() throws {
        let (_, context) = try makeContext()
        context.undoManager = ContextUndoManager(levelsOfUndo: 10)
        let object = try configuration("A", in: context)
        object.name = "renamed"
        context.processPendingChanges()
        var name = observe { _ = object.name }
        let feed = observe { _ = object.feed }
        context.undo()
        #expect(name.value == 1)
        #expect(object.name == "A")
        name = observe { _ = object.name }
        context.redo()
        #expect(name.value == 1)
        #expect(object.name == "renamed")
        #expect(feed.value == 0)

        name = observe { _ = object.name }
        let rolledBackFeed = observe { _ = object.feed }
        context.rollback()
        #expect(name.value == 1)
        #expect(rolledBackFeed.value == 0)
        #expect(object.name == "A")
    }

    @Test("did-set observers see the new values, of setters and of the engine's changes")
    func didSetSeesNewValues() throws {
        let (container, context) = try makeContext()
        let object = try configuration("A", in: context)
        // Read from the did-set handler, on this thread, while the change runs.
        nonisolated(unsafe) let observed = object
        let seen = Mutex<[String]>([])
        withObservationTracking(
            { _ = object.name },
            didSet: { _ in
                seen.withLock { $0.append("\(observed.name) \(observed.snapshots.count)") }
            }
        )
        let snapshots = Mutex(0)
        withObservationTracking(
            { _ = object.snapshots },
            didSet: { _ in snapshots.withLock { $0 = observed.snapshots.count } }
        )
        object.name = "set"
        Snapshot(context: context).configuration = object
        try context.save()
        let other = container.newContext()
        try other.object(with: object.objectID, as: Configuration.self).name = "merged"
        var saved = ObjectChanges()
        other.onDidSave { saved = $0 }
        try other.save()
        context.mergeChanges(from: saved)
        #expect(seen.withLock { $0 }.first == "set 0")
        #expect(seen.withLock { $0 }.last == "merged 1")
        #expect(snapshots.withLock { $0 } == 1, "the inverse side, as the snapshot's owner was set")
    }

    @Test("a child context's save tells the parent's observers")
    func childSave() throws {
        let (_, context) = try makeContext()
        let object = try configuration("A", in: context)
        let name = observe { _ = object.name }
        let feed = observe { _ = object.feed }
        let child = context.newChildContext()
        try child.object(with: object.objectID, as: Configuration.self).name = "from the child"
        try child.save()
        #expect(name.value == 1)
        #expect(feed.value == 0)
        #expect(object.name == "from the child")
    }

    @Test("an Observations sequence yields an observed object's new values")
    @MainActor
    func observationsSequence() async throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let context = container.mainContext
        context.objectsAreObservable = true
        let object = insertConfiguration("A", into: context)
        let seen = ObservedValues<String>()
        let names = Observations { object.name }
        let consumer = Task { @MainActor in
            for await name in names { seen.values.append(name) }
        }
        defer { consumer.cancel() }
        try await waitUntil { !seen.values.isEmpty }
        object.name = "B"
        try await waitUntil { seen.values.count > 1 }
        #expect(seen.values == ["A", "B"])
    }
}
