import Foundation

/// Options of an ``Attribute``.
public struct AttributeOptions: OptionSet, Sendable, Hashable {
    /// The raw bits.
    public var rawValue: UInt8

    /// Creates options from raw bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// No two objects of the entity may have equal values; a violating save fails.
    public static let unique = AttributeOptions(rawValue: 1)
    /// Large `Data` values are written to a blob file beside the store instead of the log.
    ///
    /// Only `Data` and `Data?` attributes accept this option. Values of at least
    /// ``ExternalStorage/minimumByteCount`` bytes go to a blob; smaller ones stay inline.
    public static let externalStorage = AttributeOptions(rawValue: 2)
    /// The value lives only in memory: it is neither saved nor part of the schema.
    public static let transient = AttributeOptions(rawValue: 4)
}

/// Where `.externalStorage` data goes.
public enum ExternalStorage {
    /// Data of at least this many bytes is written to a blob file; smaller data stays inline.
    public static let minimumByteCount = 16 * 1024
}

/// Declares a stored attribute of a ``ManagedObject`` subclass.
///
/// ```swift
/// final class Configuration: ManagedObject {
///     @Attribute(.unique) var name = ""
///     @Attribute var timestep: Float = 0.02
///     @Attribute(.externalStorage) var thumbnail: Data? = nil
/// }
/// ```
///
/// The value types stored natively are those conforming to ``AttributeValue``; any other
/// `Codable` type is stored as JSON. Every attribute needs a default value (`= nil` for
/// optionals), which is also the value of a newly created object.
@propertyWrapper
public struct Attribute<Value> {
    /// The current value (loaded and possibly changed).
    @usableFromInline
    var value: Value
    /// The declared options.
    let options: AttributeOptions
    /// Whether `Value` conforms to ``AttributeValue`` (otherwise it is `Codable` only).
    let isNative: Bool
    /// For external data not loaded yet: the property's payload index plus one, else 0.
    @usableFromInline
    var pendingExternal: UInt16 = 0

    /// Declares an attribute stored natively.
    /// - Parameters:
    ///   - wrappedValue: The default value.
    ///   - options: Uniqueness, external storage or transience.
    public init(wrappedValue: Value, _ options: AttributeOptions = []) where Value: AttributeValue {
        self.value = wrappedValue
        self.options = options
        self.isNative = true
    }

    /// Declares an attribute of any `Codable` type, stored as JSON.
    /// - Parameters:
    ///   - wrappedValue: The default value.
    ///   - options: Uniqueness or transience.
    public init(wrappedValue: Value, _ options: AttributeOptions = []) where Value: Codable {
        self.value = wrappedValue
        self.options = options
        self.isNative = false
    }

    /// Unavailable: attributes are only for properties of ``ManagedObject`` subclasses.
    @available(
        *,
        unavailable,
        message: "@Attribute is only for properties of ManagedObject subclasses"
    )
    public var wrappedValue: Value {
        get { fatalError("unavailable") }
        set { fatalError("unavailable") }
    }

    /// Reads and writes the value through the object, which loads faults and records changes.
    @inlinable
    public static subscript<Object: ManagedObject>(
        _enclosingInstance object: Object,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Object, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<Object, Attribute<Value>>
    ) -> Value {
        get {
            // As in the setter, no key path reaches the slow path: a probing read is recognised
            // by a marker the prober stores in the wrapper, not by its key path.
            if object.accessState.rawValue & AccessState.readBits != 0 {
                object.willReadAttribute()
                let marker = object[keyPath: storageKeyPath].pendingExternal
                if marker != 0, let loaded = object.readMarkedAttribute(marker) {
                    object[keyPath: storageKeyPath].assignLoaded(loaded)
                }
            }
            return object[keyPath: storageKeyPath].value
        }
        set {
            // The slow path takes no key path: passing one, even on a branch never taken,
            // makes the caller materialise (and release) the key path object on every write,
            // and a second projection through the key path defeated the optimiser's direct
            // field access (profiles showed `_projectMutableAddress` per write).
            //
            // The body runs inside `withExtendedLifetime`: without it the optimiser, unable to
            // see that the caller's reference outlives a slow path that may release objects,
            // retained and released the object around every write (an atomic pair per
            // attribute write in profiles of bulk inserts).
            withExtendedLifetime(object) {
                if object.accessState.rawValue != 0 { object.willWrite() }
                object[keyPath: storageKeyPath].assign(newValue)
            }
        }
    }

    /// Sets a new value, which replaces any external data not loaded yet.
    @inlinable
    mutating func assign(_ newValue: Value) {
        value = newValue
        pendingExternal = 0
    }

    /// Stores external data loaded on first read; a marker of unloaded data is cleared even
    /// when the data could not be read.
    @inlinable
    mutating func assignLoaded(_ data: Data?) {
        pendingExternal = 0
        if let loaded = data as? Value { value = loaded }
    }
}
