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
            if object.accessState.rawValue & AccessState.readBits != 0 {
                readSlowly(object, wrappedKeyPath, storageKeyPath)
            }
            return object[keyPath: storageKeyPath].value
        }
        set {
            // The slow path takes no key path: passing one, even on a branch never taken,
            // makes the caller materialise (and release) the key path object on every write,
            // and a second projection through the key path defeated the optimiser's direct
            // field access (profiles showed `_projectMutableAddress` per write).
            if object.accessState.rawValue != 0 { object.willWrite() }
            object[keyPath: storageKeyPath].assign(newValue)
        }
    }

    /// Sets a new value, which replaces any external data not loaded yet.
    @inlinable
    mutating func assign(_ newValue: Value) {
        value = newValue
        pendingExternal = 0
    }

    /// Loads a fault, and external data that is read for the first time.
    @usableFromInline
    static func readSlowly<Object: ManagedObject>(
        _ object: Object,
        _ wrappedKeyPath: ReferenceWritableKeyPath<Object, Value>,
        _ storageKeyPath: ReferenceWritableKeyPath<Object, Attribute<Value>>
    ) {
        object.willRead(storageKeyPath)
        if let probe = object.probe {
            probe.wrapped = wrappedKeyPath
            let base = UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque())
            // A key path to a stored class property projects the property in place, so this
            // is the wrapper's address; if it ever were a temporary, no accessor would have
            // the offset and the caller would not use it.
            probe.offset = withUnsafeMutablePointer(to: &object[keyPath: storageKeyPath]) {
                UnsafeRawPointer($0) - base
            }
            return
        }
        guard object.accessState.contains(.pendingExternal) else { return }
        let pending = object[keyPath: storageKeyPath].pendingExternal
        guard pending != 0 else { return }
        object[keyPath: storageKeyPath].pendingExternal = 0
        let index = Int(pending) - 1
        let data =
            object.managedObjectContext.map {
                $0.loadExternalData(of: object, propertyIndex: index)
            }
            ?? object.loadDetachedExternalData(propertyIndex: index)
        if let value = data as? Value { object[keyPath: storageKeyPath].value = value }
    }
}
