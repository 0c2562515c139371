import Foundation
import ObjectLogStore
import StoreTestSupport
import TestSupport
import Testing

@testable import ObjectLog

/// What the hooks of ``Hooked`` objects report, in the order they ran.
///
/// Reached through a task-local value, so that tests running side by side keep their own; the
/// engine calls every hook on the calling thread, where the value is visible.
final class HookLog: @unchecked Sendable {
    @TaskLocal static var current: HookLog?
    private(set) var events: [String] = []

    func record(_ event: String) { events.append(event) }

    /// How many events are `event`.
    func count(_ event: String) -> Int { events.filter { $0 == event }.count }

    func removeAll() { events = [] }
}

/// An entity whose every hook reports itself as "hook name", and can be told to act.
final class Hooked: ManagedObject {
    @Attribute var name = ""
    @Attribute var value = 0
    @Relationship(inverse: \HookedChild.parent, deleteRule: .cascade) var children: Set<HookedChild>
    /// Not saved: set by `awakeFromFetch()` from the saved value.
    var doubled = 0
    /// Not saved: what `prepareForDeletion()` saw of the relationship.
    var childrenWhenDeleted: Int?
    /// Not saved: what `willSave()` does besides reporting.
    var onWillSave: ((Hooked) -> Void)?
    /// Not saved: what `didSave()` does besides reporting.
    var onDidSave: ((Hooked) -> Void)?

    override func awakeFromInsert() {
        HookLog.current?.record("awakeFromInsert \(name)")
        name = "new"
    }
    override func awakeFromFetch() {
        HookLog.current?.record("awakeFromFetch \(name)")
        doubled = value * 2
        // Not recorded as a change, as in Core Data.
        value += 0
    }
    override func willSave() {
        HookLog.current?.record(
            "willSave \(name) \(isInserted ? "inserted" : isDeleted ? "deleted" : "updated")"
        )
        onWillSave?(self)
    }
    override func didSave() {
        HookLog.current?.record("didSave \(name)")
        onDidSave?(self)
    }
    override func prepareForDeletion() {
        HookLog.current?.record("prepareForDeletion \(name)")
        childrenWhenDeleted = children.count
    }
}

/// An entity of scalar attributes only, which bulk loads may decode on two threads.
final class Awakened: ManagedObject {
    @Attribute var value = 0
    /// Not saved: set by `awakeFromFetch()`.
    var doubled = 0

    override func awakeFromFetch() {
        HookLog.current?.record("awakeFromFetch")
        doubled = value * 2
    }
}

/// The destination of ``Hooked/children``.
final class HookedChild: ManagedObject {
    @Attribute var label = ""
    @Relationship var parent: Hooked?

    override func prepareForDeletion() {
        HookLog.current?.record("prepareForDeletion child \(label) of \(parent?.name ?? "none")")
    }
}

@Suite("Lifecycle hooks: when each runs, and how often")
struct LifecycleHookTests {
    /// Runs `body` with a fresh log as the current one.
    func withLog<T>(_ body: (HookLog) throws -> T) rethrows -> T {
        let log = HookLog()
        return try HookLog.$current.withValue(log) { try body(log) }
    }

    @Test(
        "awakeFromInsert runs once per new object, before the caller sets values; not on fetch",
        arguments: TestStoreKind.available
    )
    func awakeFromInsertOnce(kind: TestStoreKind) throws {
        try withLog { log in
            let store = try TestStore(kind)
            let container = try store.open(for: [Hooked.self, HookedChild.self])
            let context = container.newContext()
            let first = Hooked(context: context)
            let second = Hooked()
            try context.insert(second)
            try context.insert(second)
            #expect(log.events == ["awakeFromInsert ", "awakeFromInsert "])
            #expect(first.name == "new" && second.name == "new")
            first.name = "first"
            try context.save()
            log.removeAll()
            _ = try container.newContext().fetch(Hooked.self).map(\.name)
            #expect(log.count("awakeFromInsert first") == 0)
            #expect(log.events.filter { $0.hasPrefix("awakeFromInsert") }.isEmpty)
        }
    }

    @Test(
        "awakeFromFetch runs once per load: on a fault's first read and on a fetch that loads",
        arguments: TestStoreKind.available
    )
    func awakeFromFetchOnLoad(kind: TestStoreKind) throws {
        try withLog { log in
            let store = try TestStore(kind)
            let container = try store.open(for: [Hooked.self, HookedChild.self])
            let writer = container.newContext()
            for index in 1...3 {
                let object = Hooked(context: writer)
                object.name = "n\(index)"
                object.value = index
            }
            try writer.save()
            #expect(log.events.filter { $0.hasPrefix("awakeFromFetch") }.isEmpty)

            // Faults: nothing is loaded until a read, then each loads once. (A database's fetch
            // loads its objects, their rows coming with the query: each wakes once, then.)
            let loadedByFetch = kind == .postgreSQL ? 3 : 0
            let context = container.newContext()
            let faults = try context.fetch(Hooked.self)
            #expect(log.events.filter { $0.hasPrefix("awakeFromFetch") }.count == loadedByFetch)
            let first = try #require(faults.first { $0.key == faults.map(\.key).min() })
            _ = first.name
            #expect(first.doubled == 2, "set up by awakeFromFetch from the loaded value")
            #expect(
                log.events.filter { $0.hasPrefix("awakeFromFetch") }.count
                    == max(1, loadedByFetch)
            )
            #expect(!context.hasChanges, "writes in awakeFromFetch are not changes")

            // A fetch with a predicate registers loaded objects: one awake each, none again.
            log.removeAll()
            let other = container.newContext()
            let matched = try other.fetch(
                FetchRequest<Hooked>(predicate: #Predicate { $0.value >= 2 })
            )
            #expect(matched.count == 2)
            #expect(log.events.sorted() == ["awakeFromFetch n2", "awakeFromFetch n3"])
            #expect(matched.allSatisfy { $0.doubled == $0.value * 2 })
            _ = try other.fetch(FetchRequest<Hooked>(predicate: #Predicate { $0.value >= 2 }))
            #expect(log.events.count == 2)
            #expect(!other.hasChanges)

            // After a refresh the object is a fault again: the next load awakes it again.
            other.refresh(matched[0], mergeChanges: false)
            _ = matched[0].name
            #expect(log.events.count == 3)
        }
    }

    @Test(
        "a bulk load of faults awakes every object once, on the calling thread, on one thread or two",
        arguments: [Int.max, 2]
    )
    func awakeFromFetchInBulk(parallelThreshold: Int) throws {
        try withLog { log in
            let container = try PersistentContainer.inMemory(for: [Awakened.self])
            let writer = container.newContext()
            for index in 0..<5_000 {
                Awakened(context: writer).value = index
            }
            try writer.save()
            log.removeAll()
            let context = container.newContext()
            context.tracer = ContextTracer()
            context.tuning.parallelDecodingThreshold = parallelThreshold
            var request = FetchRequest<Awakened>()
            request.returnsObjectsAsFaults = false
            let objects = try context.fetch(request)
            #expect(context.statistics.bulkFaultLoads == 1)
            let parallel = parallelThreshold == 2 && ParallelSaveTests.hasTwoProcessors
            #expect(context.statistics.parallelDecodings == (parallel ? 1 : 0))
            #expect(log.events.count == 5_000)
            #expect(log.events.allSatisfy { $0.hasPrefix("awakeFromFetch") })
            #expect(objects.allSatisfy { !$0.isFault && $0.doubled == $0.value * 2 })
            #expect(!context.hasChanges)
        }
    }

    @Test(
        "willSave runs once per inserted, updated and deleted object; didSave after the write",
        arguments: TestStoreKind.available
    )
    func willAndDidSave(kind: TestStoreKind) throws {
        try withLog { log in
            let store = try TestStore(kind)
            let container = try store.open(for: [Hooked.self, HookedChild.self])
            let context = container.newContext()
            let kept = Hooked(context: context)
            kept.name = "kept"
            let doomed = Hooked(context: context)
            doomed.name = "doomed"
            try context.save()
            #expect(log.count("willSave kept inserted") == 1)
            #expect(log.count("willSave doomed inserted") == 1)
            #expect(log.count("didSave kept") == 1 && log.count("didSave doomed") == 1)
            // Every willSave comes before every didSave.
            let lastWill = try #require(log.events.lastIndex { $0.hasPrefix("willSave") })
            let firstDid = try #require(log.events.firstIndex { $0.hasPrefix("didSave") })
            #expect(lastWill < firstDid)

            log.removeAll()
            try context.save()
            #expect(log.events.isEmpty, "a save without changes calls no hook")

            kept.value = 5
            context.delete(doomed)
            var storedInDidSave: [Int] = []
            kept.onDidSave = { _ in
                storedInDidSave =
                    (try? container.newContext().fetch(Hooked.self).map(\.value)) ?? []
            }
            try context.save()
            // The did-save check's fetch awakes that other context's objects: not counted.
            #expect(
                log.events.filter { !$0.hasPrefix("awakeFromFetch") } == [
                    "prepareForDeletion doomed", "willSave kept updated", "willSave doomed deleted",
                    "didSave kept", "didSave doomed",
                ]
            )
            #expect(storedInDidSave == [5], "didSave runs once the store has the save")
        }
    }

    @Test(
        "changes made in willSave are saved; objects they touch get willSave in the same save",
        arguments: TestStoreKind.available
    )
    func willSaveChangesAreSaved(kind: TestStoreKind) throws {
        try withLog { log in
            let store = try TestStore(kind)
            let container = try store.open(for: [Hooked.self, HookedChild.self])
            let context = container.newContext()
            let saved = Hooked(context: context)
            saved.name = "saved"
            try context.save()
            log.removeAll()

            let parent = Hooked(context: context)
            parent.name = "parent"
            parent.onWillSave = { object in
                // Inserts an object and changes a saved one that no one changed yet.
                guard object.children.isEmpty else { return }
                let child = HookedChild(context: context)
                child.label = "made in willSave"
                child.parent = object
                saved.value = 42
            }
            try context.save()
            #expect(log.count("willSave parent inserted") == 1)
            #expect(log.count("willSave saved updated") == 1, "changed by a hook: its own hook")
            #expect(!context.hasChanges)
            let reader = container.newContext()
            let children = try reader.fetch(HookedChild.self)
            #expect(children.map(\.label) == ["made in willSave"])
            #expect(children.first?.parent?.name == "parent")
            let values = try reader.fetch(Hooked.self).map(\.value).sorted()
            #expect(values == [0, 42])
        }
    }

    @Test(
        "a willSave that changes another object on every call stops the save, saving nothing",
        arguments: TestStoreKind.available
    )
    func willSaveLoopStops(kind: TestStoreKind) throws {
        try withLog { log in
            let store = try TestStore(kind)
            let container = try store.open(for: [Hooked.self, HookedChild.self])
            let context = container.newContext()
            let seed = Hooked(context: context)
            seed.name = "seed"
            // Each hook inserts another object with the same hook: it never ends by itself.
            func spread(_ object: Hooked) {
                let next = Hooked(context: context)
                next.onWillSave = spread
            }
            seed.onWillSave = spread
            let error = #expect(throws: ObjectLogError.self) { try context.save() }
            #expect(error?.code == .willSaveLoop)
            #expect(log.events.filter { $0.hasPrefix("willSave") }.count == 100)
            #expect(try container.newContext().count(FetchRequest<Hooked>()) == 0)
            #expect(context.hasChanges, "the changes stay in the context")
        }
    }

    @Test(
        "prepareForDeletion runs before the delete rules, once per deleted object",
        arguments: TestStoreKind.available
    )
    func prepareForDeletionBeforeRules(kind: TestStoreKind) throws {
        try withLog { log in
            let store = try TestStore(kind)
            let container = try store.open(for: [Hooked.self, HookedChild.self])
            let context = container.newContext()
            let parent = Hooked(context: context)
            parent.name = "parent"
            for label in ["a", "b"] {
                let child = HookedChild(context: context)
                child.label = label
                child.parent = parent
            }
            try context.save()
            log.removeAll()
            context.delete(parent)
            context.delete(parent)
            #expect(parent.childrenWhenDeleted == 2, "the relationship still held its objects")
            #expect(log.events.first == "prepareForDeletion parent")
            #expect(
                log.events.dropFirst().sorted() == [
                    "prepareForDeletion child a of none", "prepareForDeletion child b of none",
                ]
            )
        }
    }

    @Test(
        "changes made in didSave are unsaved changes for the next save",
        arguments: TestStoreKind.available
    )
    func didSaveChangesArePending(kind: TestStoreKind) throws {
        try withLog { _ in
            let store = try TestStore(kind)
            let container = try store.open(for: [Hooked.self, HookedChild.self])
            let context = container.newContext()
            let object = Hooked(context: context)
            object.onDidSave = { saved in
                saved.onDidSave = nil
                saved.value = 7
            }
            try context.save()
            #expect(context.hasChanges && object.isUpdated)
            #expect(try container.newContext().fetch(Hooked.self).map(\.value) == [0])
            try context.save()
            #expect(try container.newContext().fetch(Hooked.self).map(\.value) == [7])
        }
    }
}
