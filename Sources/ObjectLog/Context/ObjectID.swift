import ObjectLogStore

/// The identity of a managed object: its entity and its store-wide unique key.
///
/// Object IDs are `Sendable`: pass them between contexts and tasks, and turn them back into
/// objects with ``ManagedObjectContext/object(with:)`` or
/// ``ManagedObjectContext/existingObject(with:)``. An object that was never inserted has the key 0.
public struct ObjectID: Hashable, Sendable, Codable, CustomStringConvertible, Comparable {
    /// The name of the object's entity.
    public let entityName: String
    /// The object's key in the store (never reused).
    public let key: ObjectKey

    /// Creates an ID from an entity name and a key, as printed by the `objectlog` tool.
    public init(entityName: String, key: ObjectKey) {
        self.entityName = entityName
        self.key = key
    }

    /// Whether the ID belongs to an object that was never inserted.
    public var isTemporary: Bool { key == 0 }

    /// `Entity#key`.
    public var description: String { "\(entityName)#\(key)" }

    /// Compares keys and entity names.
    public static func == (lhs: ObjectID, rhs: ObjectID) -> Bool {
        lhs.key == rhs.key && lhs.entityName == rhs.entityName
    }

    /// Hashes the key only: keys are unique in a store, and hashing them is cheap.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(key)
    }

    /// Orders by key (keys are unique store-wide).
    public static func < (lhs: ObjectID, rhs: ObjectID) -> Bool { lhs.key < rhs.key }
}
