import Foundation
import StoreTestSupport
import Synchronization
import Testing

@testable import ObjectLog

@Suite("Observers: tokens remove handlers")
struct ObserverTokenTests {
    @Test(
        "removing a did-save, objects-did-change or will-save handler stops its calls",
        arguments: TestStoreKind.available
    )
    func removeContextHandlers(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        var events: [String] = []
        let will = context.onWillSave { _ in events.append("will") }
        let did = context.onDidSave { _ in events.append("did") }
        let change = context.onObjectsDidChange { _ in events.append("change") }
        // A handler whose token is dropped stays registered.
        context.onDidSave { _ in events.append("kept") }
        #expect(Set([will, did, change]).count == 3)

        _ = Tag(context: context)
        try context.save()
        #expect(events == ["will", "change", "did", "kept"])

        events = []
        context.removeObserver(did)
        _ = Tag(context: context)
        try context.save()
        #expect(events == ["will", "change", "kept"])

        events = []
        context.removeObserver(will)
        context.removeObserver(change)
        // Removing twice changes nothing.
        context.removeObserver(change)
        _ = Tag(context: context)
        try context.save()
        #expect(events == ["kept"])
    }

    @Test("a token of another context or coordinator removes nothing there")
    func foreignTokensRemoveNothing() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let first = container.newContext()
        let second = container.newContext()
        var events: [String] = []
        // Each context's first handler: the tokens would be equal if each counted alone.
        let firstToken = first.onDidSave { _ in events.append("first") }
        let secondToken = second.onDidSave { _ in events.append("second") }
        #expect(firstToken != secondToken)
        second.removeObserver(firstToken)
        _ = Tag(context: second)
        try second.save()
        #expect(events == ["second"])

        // Between a context and the coordinator, both ways.
        let calls = CallCount()
        let observerToken = container.coordinator.addSaveObserver { _ in calls.add() }
        container.coordinator.removeObserver(firstToken)
        container.coordinator.removeObserver(secondToken)
        second.removeObserver(observerToken)
        _ = Tag(context: second)
        try second.save()
        #expect(calls.value == 1)
        #expect(events == ["second", "second"])

        // Between two coordinators.
        let other = try PersistentContainer.inMemory(for: testEntities)
        let otherCalls = CallCount()
        other.coordinator.addSaveObserver { _ in otherCalls.add() }
        other.coordinator.removeObserver(observerToken)
        let otherContext = other.newContext()
        _ = Tag(context: otherContext)
        try otherContext.save()
        #expect(otherCalls.value == 1)
    }

    @Test("a context's token leaves the main context's merge observer registered")
    @MainActor
    func contextTokenKeepsMergeObserver() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        // The merge observer is the coordinator's first.
        _ = container.mainContext
        #expect(container.coordinator.hasSaveObservers)
        let context = container.newContext()
        let token = context.onDidSave { _ in }
        container.coordinator.removeObserver(token)
        #expect(container.coordinator.hasSaveObservers)
    }

    @Test(
        "objects-did-change fires on save, merge and rollback, not on each change",
        arguments: TestStoreKind.available
    )
    func objectsDidChangeMoments(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        var changes: [ObjectChanges] = []
        context.onObjectsDidChange { changes.append($0) }
        let cell = Cell(context: context)
        cell.row = 1
        #expect(changes.isEmpty)
        try context.save()
        #expect(changes.count == 1 && changes[0].inserted == [cell.objectID])

        cell.row = 2
        context.delete(Cell(context: context))
        #expect(changes.count == 1)
        context.rollback()
        #expect(changes.count == 2 && changes[1].updated == [cell.objectID])

        let other = container.newContext()
        let theirs = try other.existingObject(with: cell.objectID, as: Cell.self)
        theirs.row = 3
        var saved = ObjectChanges()
        other.onDidSave { saved = $0 }
        try other.save()
        context.mergeChanges(from: saved)
        #expect(changes.count == 3 && changes[2].updated == [cell.objectID])
        #expect(cell.row == 3)
    }

    @Test("a removed coordinator save observer is not called", arguments: TestStoreKind.available)
    func removeSaveObserver(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let calls = CallCount()
        let token = container.coordinator.addSaveObserver { _ in calls.add() }
        let context = container.newContext()
        _ = Tag(context: context)
        try context.save()
        #expect(calls.value == 1)
        container.coordinator.removeObserver(token)
        _ = Tag(context: context)
        try context.save()
        #expect(calls.value == 1)
    }
}

/// A count that `Sendable` observers can raise.
final class CallCount: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func add() { count.withLock { $0 += 1 } }

    @Test(
        "a save calls the context's handlers, then the coordinator's observers in the order added",
        arguments: TestStoreKind.available
    )
    func order(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        let events = Mutex<[String]>([])
        for index in 0..<20 {
            container.coordinator.addSaveObserver { _ in events.withLock { $0.append("o\(index)") }
            }
        }
        context.onDidSave { _ in events.withLock { $0.append("did") } }
        context.onObjectsDidChange { _ in events.withLock { $0.append("change") } }
        context.onWillSave { _ in events.withLock { $0.append("will") } }
        _ = Tag(context: context)
        try context.save()
        let expected = ["will", "change", "did"] + (0..<20).map { "o\($0)" }
        #expect(events.withLock { $0 } == expected)
    }
}
