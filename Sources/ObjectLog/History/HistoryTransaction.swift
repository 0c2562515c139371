import Foundation

/// A committed transaction as the store's history records it: when, and each object it
/// inserted, updated or deleted with its values before and after.
///
/// Compare Core Data's `NSPersistentHistoryTransaction`, which records which objects changed
/// but not their values; here an update carries the values it replaced, and a delete the
/// object's last values, so a reader can show or undo what happened.
public struct HistoryTransaction: Sendable, Identifiable {
    /// The transaction's token: where a later read goes on from.
    public var token: HistoryToken
    /// When it was committed.
    public var date: Date
    /// Who saved it: the saving context's ``ManagedObjectContext/author``, if it had one.
    public var author: String?
    /// The saving context's ``ManagedObjectContext/name``, if it had one.
    public var contextName: String?
    /// Its changes, one per object, in the order the save wrote them.
    public var changes: [HistoryChange]
    /// Whether it recorded a new model version: a migration's transaction.
    ///
    /// Its changes are the objects the migration rewrote, if any (a lightweight migration
    /// rewrites none).
    public var changesModel: Bool

    /// The transaction's identity: its token.
    public var id: HistoryToken { token }
}

/// One object's change in a ``HistoryTransaction``.
///
/// Values are the stored values (``StoredValue``) of the model version the store has now, by
/// property name; a relationship's value is its destinations' keys.
public struct HistoryChange: Sendable {
    /// What the transaction did to the object.
    public enum Kind: String, Sendable, Codable {
        /// The transaction inserted the object.
        case insert
        /// It changed some of the object's properties.
        case update
        /// It deleted the object.
        case delete
    }

    /// The object.
    public var objectID: ObjectID
    /// Insert, update or delete.
    public var kind: Kind
    /// The names of the properties whose values changed, in the entity's order: every
    /// property of an insert, none of a delete.
    public var changedProperties: [String]
    /// The values the transaction replaced: the changed properties' of an update, every
    /// property's of a delete; empty for an insert.
    public var oldValues: [String: StoredValue]
    /// The values it wrote: the changed properties' of an update, every property's of an
    /// insert; empty for a delete.
    public var newValues: [String: StoredValue]
}
