import Synchronization

/// Identifies a registered handler, to remove it.
///
/// ``ManagedObjectContext/onWillSave(_:)``, ``ManagedObjectContext/onDidSave(_:)``,
/// ``ManagedObjectContext/onObjectsDidChange(_:)`` and
/// ``PersistentStoreCoordinator/addSaveObserver(_:)`` return one. The handler stays registered
/// until you pass its token to the `removeObserver(_:)` of what registered it (or until that
/// context or coordinator goes away): dropping the token does *not* remove the handler, so a
/// handler registered for the life of its context needs no token kept. Each token is unique in
/// the process, so passing one to another context or coordinator removes nothing there.
///
/// ```swift
/// let token = context.onDidSave { changes in print(changes.inserted.count, "inserted") }
/// try context.save()             // prints
/// context.removeObserver(token)
/// try context.save()             // does not
/// ```
///
/// (A token that removed its handler when released, like Combine's `AnyCancellable`, would
/// make `context.onWillSave { … }` without a kept result register nothing, a silent change for
/// code written before tokens existed.)
public struct ObserverToken: Hashable, Sendable {
    /// The handler's number, unique in the process.
    let number: UInt64

    /// Numbers for every context and coordinator: were each to count on its own, a token of
    /// one would name another's handler of the same number.
    private static let lastNumber = Atomic<UInt64>(0)

    /// A token for a newly registered handler, unlike any other of the process.
    static func make() -> ObserverToken {
        ObserverToken(number: lastNumber.add(1, ordering: .relaxed).newValue)
    }
}
