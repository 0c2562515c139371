import ObjectLogStore

/// What deleting an object does to the objects it is related to.
public enum DeleteRule: String, Sendable, Codable, Hashable {
    /// Remove the deleted object from the destinations' inverse relationship.
    case nullify
    /// Delete the destinations too.
    case cascade
    /// Refuse to save the deletion while the relationship has destinations.
    case deny
    /// Do nothing; the destinations keep a reference to a deleted object.
    case noAction
}

/// A type a ``Relationship`` can hold: `Destination?` (to-one), `Set<Destination>` (to-many)
/// or `[Destination]` (ordered to-many).
///
/// Not meant for conformance outside ObjectLog.
public protocol RelationshipValue {
    /// The entity class at the other end.
    associatedtype Destination: ManagedObject
    /// Whether the relationship holds many objects.
    static var isToMany: Bool { get }
    /// Whether a to-many relationship keeps its order.
    static var isOrdered: Bool { get }
    /// The destinations, in order for ordered relationships.
    var relatedObjects: [Destination] { get }
    /// Makes a value from destinations.
    init(relatedObjects: [Destination])
}

extension Optional: RelationshipValue where Wrapped: ManagedObject {
    /// The wrapped class.
    public typealias Destination = Wrapped
    /// To-one.
    public static var isToMany: Bool { false }
    /// To-one relationships have no order.
    public static var isOrdered: Bool { false }
    /// Zero or one destination.
    public var relatedObjects: [Wrapped] { self.map { [$0] } ?? [] }
    /// The first destination, if any.
    public init(relatedObjects: [Wrapped]) { self = relatedObjects.first }
}

extension Set: RelationshipValue where Element: ManagedObject {
    /// The element class.
    public typealias Destination = Element
    /// To-many.
    public static var isToMany: Bool { true }
    /// Unordered.
    public static var isOrdered: Bool { false }
    /// The destinations in no particular order.
    public var relatedObjects: [Element] { Array(self) }
    /// A set of the destinations.
    public init(relatedObjects: [Element]) { self.init(relatedObjects) }
}

extension Array: RelationshipValue where Element: ManagedObject {
    /// The element class.
    public typealias Destination = Element
    /// To-many.
    public static var isToMany: Bool { true }
    /// Ordered.
    public static var isOrdered: Bool { true }
    /// The destinations in order.
    public var relatedObjects: [Element] { self }
    /// The destinations in order.
    public init(relatedObjects: [Element]) { self = relatedObjects }
}

/// Declares a relationship of a ``ManagedObject`` subclass to another entity.
///
/// ```swift
/// final class Configuration: ManagedObject {
///     @Relationship(inverse: \Snapshot.configuration, deleteRule: .cascade)
///     var snapshots: Set<Snapshot>
/// }
/// final class Snapshot: ManagedObject {
///     @Relationship var configuration: Configuration?
/// }
/// ```
///
/// Setting one side updates the inverse side at once. Declare the inverse on one side only:
/// the model finds the other side from it, and declaring both makes a circular type reference
/// that the compiler rejects. An object that is not in a context is inserted into the context
/// of the object it is related to.
///
/// A setter cannot throw, so misuse is reported in two ways:
/// - Relating objects of two different contexts (or a destination whose class is not in the
///   model) leaves the relationship as it was, and the context's next
///   ``ManagedObjectContext/save()`` throws ``ObjectLogError/Code/contextMismatch`` (or
///   ``ObjectLogError/Code/entityNotInModel``) naming both objects, saving nothing; several
///   such misuses before a save are listed in one error's ``ObjectLogError/errors``.
/// - Relating two objects that are both outside any context, which leaves no context to
///   report to, stops the program with a message naming both objects (`fatalError`, so
///   release builds print it too). Insert one of them first.
@propertyWrapper
public struct Relationship<Value: RelationshipValue> {
    /// The destination key of a to-one relationship (0 for none).
    var key: ObjectKey = 0
    /// The destination keys of a to-many relationship.
    var keys: [ObjectKey] = []
    /// The declared inverse, a key path on the destination class.
    let inverse: AnyKeyPath?
    /// The declared delete rule.
    let deleteRule: DeleteRule
    /// The least number of destinations a save accepts.
    let minimumCount: Int
    /// The greatest number of destinations a save accepts.
    let maximumCount: Int

    /// Declares a to-one relationship.
    /// - Parameters:
    ///   - inverse: The relationship on the destination that points back, if any.
    ///   - deleteRule: What deleting this object does to the destination.
    ///   - isRequired: Whether a save requires a destination.
    public init<Destination: ManagedObject, Inverse>(
        inverse: ReferenceWritableKeyPath<Destination, Inverse>,
        deleteRule: DeleteRule = .nullify,
        isRequired: Bool = false
    ) where Value == Destination? {
        self.inverse = inverse
        self.deleteRule = deleteRule
        self.minimumCount = isRequired ? 1 : 0
        self.maximumCount = 1
    }

    /// Declares a to-one relationship without an inverse.
    /// - Parameters:
    ///   - deleteRule: What deleting this object does to the destination.
    ///   - isRequired: Whether a save requires a destination.
    public init<Destination: ManagedObject>(
        deleteRule: DeleteRule = .nullify,
        isRequired: Bool = false
    )
    where Value == Destination? {
        self.inverse = nil
        self.deleteRule = deleteRule
        self.minimumCount = isRequired ? 1 : 0
        self.maximumCount = 1
    }

    /// Declares a to-many relationship (`Set` or ordered `Array`).
    /// - Parameters:
    ///   - inverse: The relationship on the destination that points back, if any.
    ///   - deleteRule: What deleting this object does to the destinations.
    ///   - minimumCount: The least number of destinations a save accepts.
    ///   - maximumCount: The greatest number of destinations a save accepts.
    public init<Inverse>(
        inverse: ReferenceWritableKeyPath<Value.Destination, Inverse>,
        deleteRule: DeleteRule = .nullify,
        minimumCount: Int = 0,
        maximumCount: Int = .max
    ) where Value: Collection {
        self.inverse = inverse
        self.deleteRule = deleteRule
        self.minimumCount = minimumCount
        self.maximumCount = maximumCount
    }

    /// Declares a to-many relationship without an inverse.
    /// - Parameters:
    ///   - deleteRule: What deleting this object does to the destinations.
    ///   - minimumCount: The least number of destinations a save accepts.
    ///   - maximumCount: The greatest number of destinations a save accepts.
    public init(deleteRule: DeleteRule = .nullify, minimumCount: Int = 0, maximumCount: Int = .max)
    where Value: Collection {
        self.inverse = nil
        self.deleteRule = deleteRule
        self.minimumCount = minimumCount
        self.maximumCount = maximumCount
    }

    /// Unavailable: relationships are only for properties of ``ManagedObject`` subclasses.
    @available(
        *,
        unavailable,
        message: "@Relationship is only for properties of ManagedObject subclasses"
    )
    public var wrappedValue: Value {
        get { fatalError("unavailable") }
        set { fatalError("unavailable") }
    }

    /// Reads and writes the destinations through the object's context, keeping inverses in sync.
    public static subscript<Object: ManagedObject>(
        _enclosingInstance object: Object,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Object, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<Object, Relationship<Value>>
    ) -> Value {
        get {
            if object.accessState.rawValue & AccessState.readBits != 0 {
                object.willReadRelationship(
                    storageKeyPath,
                    atOffset: fieldOffset(of: storageKeyPath, in: object)
                )
            }
            let storage = object[keyPath: storageKeyPath]
            guard let context = object.managedObjectContext else {
                return Value(relatedObjects: [])
            }
            if Value.isToMany {
                let objects = storage.keys.compactMap {
                    context.registeredObject(forKey: $0, as: Value.Destination.self)
                }
                return Value(relatedObjects: objects)
            }
            guard storage.key != 0,
                let destination = context.registeredObject(
                    forKey: storage.key,
                    as: Value.Destination.self
                )
            else { return Value(relatedObjects: []) }
            return Value(relatedObjects: [destination])
        }
        set {
            // The offset of the relationship whose observers were told it is about to change.
            var observedOffset: Int?
            if object.accessState.rawValue != 0 {
                object.willWrite(attributeOffset: nil, relationship: storageKeyPath)
                if object.accessState.contains(.observed) {
                    let offset = fieldOffset(of: storageKeyPath, in: object)
                    if object.willChangeObserved(atOffset: offset) { observedOffset = offset }
                }
            }
            // Also when the assignment is refused below: the observers were told it would come.
            defer { if let observedOffset { object.didChangeObserved(atOffset: observedOffset) } }
            let related = newValue.relatedObjects
            guard object.adoptContext(for: related, property: storageKeyPath) else { return }
            var newKeys: [ObjectKey] = []
            newKeys.reserveCapacity(related.count)
            for destination in related where !newKeys.contains(destination.key) {
                newKeys.append(destination.key)
            }
            let oldKeys: [ObjectKey]
            if Value.isToMany {
                oldKeys = object[keyPath: storageKeyPath].keys
                object[keyPath: storageKeyPath].keys = newKeys
            } else {
                let old = object[keyPath: storageKeyPath].key
                oldKeys = old == 0 ? [] : [old]
                object[keyPath: storageKeyPath].key = newKeys.first ?? 0
            }
            object.updateInverses(
                storage: storageKeyPath,
                declaredInverse: object[keyPath: storageKeyPath].inverse,
                removing: oldKeys.filter { !newKeys.contains($0) },
                adding: newKeys.filter { !oldKeys.contains($0) }
            )
        }
    }

    /// The byte offset of the wrapper's storage in `object`, for the access slow paths (the
    /// observers find the relationship by it, as an attribute's find theirs).
    static func fieldOffset<Object: ManagedObject>(
        of storageKeyPath: ReferenceWritableKeyPath<Object, Relationship<Value>>,
        in object: Object
    ) -> Int {
        let base = UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque())
        return withUnsafeMutablePointer(to: &object[keyPath: storageKeyPath]) {
            UnsafeRawPointer($0) - base
        }
    }
}
