import Foundation
import ObjectLogStore

/// One object decoded without its class: property names to ``StoredValue``s, in schema order.
public struct GenericObject: Sendable, Hashable {
    /// The object's key.
    public var key: ObjectKey
    /// The entity name.
    public var entity: String
    /// The persistent properties in payload order.
    public var values: [(name: String, value: StoredValue)]

    /// The value of a property by name.
    public subscript(name: String) -> StoredValue? {
        values.first { $0.name == name }?.value
    }

    /// The object's ID.
    public var objectID: ObjectID { ObjectID(entityName: entity, key: key) }

    /// Compares key, entity and every value.
    public static func == (lhs: GenericObject, rhs: GenericObject) -> Bool {
        lhs.key == rhs.key && lhs.entity == rhs.entity
            && lhs.values.map(\.name) == rhs.values.map(\.name)
            && lhs.values.map(\.value) == rhs.values.map(\.value)
    }

    /// Hashes key and entity.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(key)
        hasher.combine(entity)
    }
}
