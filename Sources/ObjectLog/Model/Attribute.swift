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
    /// `StoreOptions.externalStorageMinimumByteCount` bytes (16 KiB unless the store's
    /// options say otherwise) go to a blob; smaller ones stay inline. A save writes a blob
    /// that has not changed since it was read or saved as the same reference, so changing an
    /// object's other values never writes its large data again.
    public static let externalStorage = AttributeOptions(rawValue: 2)
    /// The value lives only in memory: it is neither saved nor part of the schema.
    public static let transient = AttributeOptions(rawValue: 4)
    /// Fetches that compare the attribute with a constant find their candidates through an
    /// index kept in the store, from the first fetch after an open.
    ///
    /// The same as listing the attribute alone in ``ManagedObject/indexes``, as Core Data's
    /// fetch indexes and SwiftData's `#Index` do. The index is part of the model's schema:
    /// adding or dropping it is a lightweight migration that rewrites no object. See
    /// <doc:FetchingAndIndexes>.
    public static let indexed = AttributeOptions(rawValue: 8)
}

/// Where `.externalStorage` data goes.
public enum ExternalStorage {
    /// The default of `StoreOptions.externalStorageMinimumByteCount`: data of at least this
    /// many bytes is written to a blob file; smaller data stays inline.
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
///
/// The wrapper stores the value only, so an attribute takes no more room in an object than
/// its value. The options are read once, when a ``ManagedObjectModel`` is built (see
/// `AttributeDiscovery`); the engine's per-object state (faults, external data not loaded
/// yet) lives in the object, and the accessors find an attribute by its field offset.
@propertyWrapper
public struct Attribute<Value> {
    /// The current value (loaded and possibly changed).
    @usableFromInline
    var value: Value

    /// Declares an attribute stored natively.
    /// - Parameters:
    ///   - wrappedValue: The default value.
    ///   - options: Uniqueness, external storage or transience.
    @inlinable
    public init(wrappedValue: Value, _ options: AttributeOptions = []) where Value: AttributeValue {
        self.value = wrappedValue
        // Only while a model is being built: the options are recorded for its discovery.
        if _slowPath(AttributeDiscovery.isActive) {
            AttributeDiscovery.record(options)
        }
    }

    /// Declares an attribute of any `Codable` type, stored as JSON.
    /// - Parameters:
    ///   - wrappedValue: The default value.
    ///   - options: Uniqueness or transience.
    @inlinable
    public init(wrappedValue: Value, _ options: AttributeOptions = []) where Value: Codable {
        self.value = wrappedValue
        // As in the native initializer.
        if _slowPath(AttributeDiscovery.isActive) {
            AttributeDiscovery.record(options)
        }
    }

    /// Declares an attribute stored natively that an earlier model version called
    /// `originalName`: stores written by that version are migrated on open, keeping its values.
    ///
    /// ```swift
    /// @Attribute(originalName: "title") var name = ""
    /// ```
    /// - Parameters:
    ///   - wrappedValue: The default value.
    ///   - options: Uniqueness, external storage or transience.
    ///   - originalName: The attribute's name in the earlier version.
    @inlinable
    public init(wrappedValue: Value, _ options: AttributeOptions = [], originalName: String)
    where Value: AttributeValue {
        self.value = wrappedValue
        if _slowPath(AttributeDiscovery.isActive) {
            AttributeDiscovery.record(options, originalName: originalName)
        }
    }

    /// Declares an attribute of any `Codable` type, stored as JSON, that an earlier model
    /// version called `originalName`.
    /// - Parameters:
    ///   - wrappedValue: The default value.
    ///   - options: Uniqueness or transience.
    ///   - originalName: The attribute's name in the earlier version.
    @inlinable
    public init(wrappedValue: Value, _ options: AttributeOptions = [], originalName: String)
    where Value: Codable {
        self.value = wrappedValue
        if _slowPath(AttributeDiscovery.isActive) {
            AttributeDiscovery.record(options, originalName: originalName)
        }
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
        // Both accessors are always inlined: a copy left out of line would take the key path
        // objects as arguments, made (and released) by the caller on every access.
        @inline(__always)
        get {
            // As in the setter, no key path reaches the slow path: the object learns which
            // attribute is read from the wrapper's field offset.
            if object.accessState.rawValue & AccessState.readBits != 0 {
                let offset = fieldOffset(of: storageKeyPath, in: object)
                if let loaded = object.willReadAttribute(atOffset: offset),
                    let data = loaded as? Value
                {
                    object[keyPath: storageKeyPath].value = data
                }
            }
            return object[keyPath: storageKeyPath].value
        }
        @inline(__always)
        set {
            // The slow path takes no key path: passing one, even on a branch never taken,
            // makes the caller materialise (and release) the key path object on every write,
            // and a second projection through the key path defeats the optimiser's direct
            // field access (it calls `_projectMutableAddress` on every write). It gets the
            // wrapper's field offset instead (a write cancels external data not loaded yet).
            //
            // The object's lifetime is extended over the whole write: without it the
            // optimiser, unable to see that the caller's reference outlives a slow path that
            // may release objects, retains and releases the object around every write (an
            // atomic pair per attribute write, for every attribute a bulk insert sets).
            // `extendLifetime` rather than a `withExtendedLifetime` closure: in large callers
            // the optimiser left such a closure out of line, taking a key path object on
            // every write and keeping the client's dynamic exclusivity checks of every
            // attribute.
            //
            // The slow path has a store of its own, between the call that tells observers a
            // change is coming and the one that tells them it happened; the plain path stays one
            // check and one store. One store for both paths, with the second call behind a flag
            // or a second check, hides from the optimiser that the access bits are still clear
            // on the plain path: it then checks them again for each attribute that a caller
            // sets one after another, where it otherwise checks once.
            defer { extendLifetime(object) }
            if object.accessState.rawValue != 0 {
                let offset = fieldOffset(of: storageKeyPath, in: object)
                object.willWriteAttribute(atOffset: offset)
                object[keyPath: storageKeyPath].value = newValue
                object.didWriteAttribute(atOffset: offset)
            } else {
                object[keyPath: storageKeyPath].value = newValue
            }
        }
    }

    /// The byte offset of the wrapper's storage in `object`, for the access slow paths.
    ///
    /// The key path is only projected here, always inline: the optimiser turns the projection
    /// of a stored property into the field's address, and no key path object is made.
    @inlinable
    @inline(__always)
    static func fieldOffset<Object: ManagedObject>(
        of storageKeyPath: ReferenceWritableKeyPath<Object, Attribute<Value>>,
        in object: Object
    ) -> Int {
        let base = UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque())
        return withUnsafeMutablePointer(to: &object[keyPath: storageKeyPath]) {
            UnsafeRawPointer($0) - base
        }
    }
}
