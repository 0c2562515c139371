import Foundation
import ObjectLogStore

/// Deletes the saved objects of an entity that match a predicate, in the store, without loading
/// them into a context (Core Data's `NSBatchDeleteRequest`, SwiftData's `delete(model:where:)`).
///
/// Run it with ``ManagedObjectContext/execute(_:)-(BatchDeleteRequest<T>)``. Objects of an entity
/// with relationships are deleted through a context of their own instead, so that the delete
/// rules (nullify, cascade, deny) hold as for ``ManagedObjectContext/delete(_:)``; that path
/// loads them.
///
/// Objects of the entity's subentities are deleted too unless ``includesSubentities`` is
/// `false`, as for a fetch.
public struct BatchDeleteRequest<T: ManagedObject>: Sendable {
    /// The objects to delete; nil deletes every object of the entity.
    public var predicate: Predicate<T>?
    /// Whether objects of the entity's subentities are deleted too (the default).
    public var includesSubentities: Bool

    /// Creates a request.
    public init(predicate: Predicate<T>? = nil) {
        self.predicate = predicate
        self.includesSubentities = true
    }
}

/// Sets attributes of the saved objects of an entity that match a predicate, in the store,
/// without loading them into a context (Core Data's `NSBatchUpdateRequest`).
///
/// Run it with ``ManagedObjectContext/execute(_:)-(BatchUpdateRequest<T>)``. Each object's record
/// is written again with the new values in place of the old and every other value as it was.
/// Uniqueness constraints hold (a violation fails the request, which then writes nothing);
/// validation and lifecycle hooks do not run, as in Core Data. Relationships and external
/// storage attributes cannot be set this way. Objects of the entity's subentities are changed
/// too unless ``includesSubentities`` is `false`, all in one transaction.
public struct BatchUpdateRequest<T: ManagedObject>: Sendable {
    /// The objects to change; nil changes every object of the entity.
    public var predicate: Predicate<T>?
    /// The values to set.
    public var updates: [PropertyUpdate<T>]
    /// Whether objects of the entity's subentities are changed too (the default).
    public var includesSubentities: Bool

    /// Creates a request.
    public init(predicate: Predicate<T>? = nil, updates: [PropertyUpdate<T>]) {
        self.predicate = predicate
        self.updates = updates
        self.includesSubentities = true
    }
}

/// One attribute value a ``BatchUpdateRequest`` sets.
public struct PropertyUpdate<T: ManagedObject>: @unchecked Sendable {
    // `@unchecked`: the key path and the value are immutable; the closure only assigns the one
    // to the other on an object of the request's own.
    let keyPath: PartialKeyPath<T>
    let assign: (T) -> Void

    /// Sets the attribute at `keyPath` to `value`.
    public static func set<Value>(
        _ keyPath: ReferenceWritableKeyPath<T, Value>,
        to value: Value
    ) -> PropertyUpdate<T> {
        nonisolated(unsafe) let value = value
        return PropertyUpdate(keyPath: keyPath) { object in object[keyPath: keyPath] = value }
    }
}

/// Inserts objects built from plain values straight into the store, without a context
/// (Core Data's `NSBatchInsertRequest` with an object handler).
///
/// Run it with ``ManagedObjectContext/execute(_:)-(BatchInsertRequest<T>)``. `fill` sets the
/// values of object number `index` on one object that is reused for all of them; relationships
/// cannot be set. Uniqueness constraints hold; validation and lifecycle hooks do not run. `T`
/// must not be abstract.
public struct BatchInsertRequest<T: ManagedObject>: @unchecked Sendable {
    // `@unchecked`: the closure is called only by `execute`, on the caller's thread.
    /// The number of objects to insert.
    public var count: Int
    let fill: (Int, T) throws -> Void

    /// Creates a request for `count` objects whose values `fill` sets.
    public init(count: Int, fill: @escaping (_ index: Int, _ object: T) throws -> Void) {
        self.count = count
        self.fill = fill
    }
}
