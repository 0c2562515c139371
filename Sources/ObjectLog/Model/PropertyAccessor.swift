import Foundation
import ObjectLogStore

/// Reads and writes one property of every object of an entity through its field offset.
///
/// Accessors are made once per entity when the model is built and are immutable afterwards.
// `@unchecked Sendable`: the few `var`s (index, attribute info, resolved inverse and
// destination) are set while `ManagedObjectModel.init` runs, before the model is shared.
class PropertyAccessor: @unchecked Sendable {
    /// The property name (the declared name, without the wrapper's underscore).
    let name: String
    /// The byte offset of the wrapper's storage in the object, reported by the Swift runtime.
    let offset: Int
    /// The property's position in the payload.
    var index = 0
    /// The schema type, optionality and options of an attribute; `nil` for relationships.
    var attribute: (type: AttributeType, isOptional: Bool, options: AttributeOptions)?
    /// The property's name in an earlier model version, if it was renamed.
    var originalName: String?

    init(name: String, offset: Int) {
        self.name = name
        self.offset = offset
    }

    /// The wrapper storage of this property in `object`.
    @inline(__always)
    final func storage<Wrapper>(
        _ object: ManagedObject,
        as: Wrapper.Type
    ) -> UnsafeMutablePointer<
        Wrapper
    > {
        // Safe: `offset` is the field offset the Swift runtime reported for this stored property
        // of the entity's class, `object` is an instance of exactly that class (the context
        // checks it on registration), and the object is alive for the duration of the call.
        UnsafeMutableRawPointer(Unmanaged.passUnretained(object).toOpaque())
            .advanced(by: offset)
            .assumingMemoryBound(to: Wrapper.self)
    }

    /// Whether `keyPath` reads and writes this attribute unchanged on `prototype`.
    ///
    /// True for the attribute's own key path, and for a computed property that forwards to
    /// the attribute; false for one that transforms the value (its results must not come
    /// from the stored value) or cannot be written.
    func forwards<Root>(_ keyPath: PartialKeyPath<Root>, on prototype: ManagedObject) -> Bool {
        false
    }

    /// The kind and value offset of a scalar attribute, for ``ScalarLayout``; nil otherwise.
    var scalarField: ScalarLayout.Field? { nil }

    /// Appends the property's payload encoding.
    func encode(
        _ object: ManagedObject,
        to writer: inout PayloadWriter,
        blobs: inout BlobSink
    )
        throws(ObjectLogError)
    {}

    /// Reads the property from a payload into `object`'s storage.
    func decode(
        from reader: inout PayloadReader,
        into object: ManagedObject,
        source: RecordSource?
    )
        throws(ObjectLogError)
    {}

    /// Moves past the property in a payload without storing it; false if this kind of
    /// property cannot be skipped (the caller decodes it instead).
    func skip(from reader: inout PayloadReader) throws(ObjectLogError) -> Bool { false }

    /// Reads the property from a payload as a type-erased value (for committed values).
    func decodeValue(
        from reader: inout PayloadReader,
        source: RecordSource?
    ) throws(ObjectLogError) -> Any {
        ()
    }

    /// The current value as a type-erased value.
    func value(of object: ManagedObject) -> Any { () }

    /// Copies the property's value from `source` to `target` (same class).
    func copy(from source: ManagedObject, to target: ManagedObject) {}

    /// A comparison of the property's values that reads storage directly, for `Comparable`
    /// value types other than strings; `nil` otherwise.
    func makeComparator(ascending: Bool) -> ((ManagedObject, ManagedObject) -> ComparisonResult)? {
        nil
    }
}

/// Accesses an attribute whose type conforms to ``AttributeValue``.
final class NativeAttributeAccessor<Value: AttributeValue>: PropertyAccessor, @unchecked Sendable {
    /// The offset of the value itself in the object.
    ///
    /// It is the wrapper's offset plus the value's offset in the wrapper. Addressing the value
    /// directly needs only `Value`'s metadata, which the class has at hand, instead of looking
    /// up `Attribute<Value>`'s on every access.
    private let valueOffset: Int
    /// Which common concrete type `Value` is, if any.
    let kind: ScalarKind?

    override init(name: String, offset: Int) {
        valueOffset = offset + (MemoryLayout<Attribute<Value>>.offset(of: \.value) ?? 0)
        kind = ScalarKind(Value.self)
        super.init(name: name, offset: offset)
    }

    override var scalarField: ScalarLayout.Field? {
        kind.map { ScalarLayout.Field(kind: $0, offset: valueOffset) }
    }

    override func forwards<Root>(
        _ keyPath: PartialKeyPath<Root>,
        on prototype: ManagedObject
    ) -> Bool {
        guard let writable = keyPath as? ReferenceWritableKeyPath<Root, Value>,
            let typed = prototype as? Root
        else { return false }
        let payloads = Value.probePayloads
        guard payloads.count >= 2 else { return false }
        let saved = prototype.accessState
        prototype.accessState = []
        defer { prototype.accessState = saved }
        for payload in payloads {
            guard let value = Value.probeValue(payload) else { return false }
            typed[keyPath: writable] = value
            guard storedValue(of: prototype).payloadBytes == payload,
                typed[keyPath: writable].payloadBytes == payload
            else { return false }
        }
        return true
    }

    /// The address of the value in `object`, untyped (for the concrete fast paths).
    @inline(__always)
    private func address(in object: ManagedObject) -> UnsafeMutableRawPointer {
        // Safe: as for `value(in:)`.
        UnsafeMutableRawPointer(Unmanaged.passUnretained(object).toOpaque())
            .advanced(by: valueOffset)
    }

    @inline(__always)
    private func value(in object: ManagedObject) -> UnsafeMutablePointer<Value> {
        // Safe: as for `storage(_:as:)`; `valueOffset` adds the stored `value` field's offset
        // within the wrapper struct, reported by `MemoryLayout.offset(of:)`.
        UnsafeMutableRawPointer(Unmanaged.passUnretained(object).toOpaque())
            .advanced(by: valueOffset)
            .assumingMemoryBound(to: Value.self)
    }

    override func encode(
        _ object: ManagedObject,
        to writer: inout PayloadWriter,
        blobs: inout BlobSink
    ) throws(ObjectLogError) {
        // `kind` names `Value` itself, so the address holds a value of that kind.
        if let kind {
            kind.encode(at: address(in: object), to: &writer)
        } else {
            value(in: object).pointee.encode(to: &writer)
        }
    }

    override func decode(
        from reader: inout PayloadReader,
        into object: ManagedObject,
        source: RecordSource?
    ) throws(ObjectLogError) {
        do throws(PayloadError) {
            // As in `encode`.
            if let kind {
                try kind.decode(into: address(in: object), from: &reader)
            } else {
                value(in: object).pointee = try Value.decode(from: &reader)
            }
        } catch {
            throw ObjectLogError.decoding(error)
        }
    }

    override func skip(from reader: inout PayloadReader) throws(ObjectLogError) -> Bool {
        try ObjectLogError.wrapping { () throws(PayloadError) in try Value.skip(from: &reader) }
        return true
    }

    override func decodeValue(
        from reader: inout PayloadReader,
        source: RecordSource?
    )
        throws(ObjectLogError) -> Any
    {
        try ObjectLogError.wrapping { () throws(PayloadError) in try Value.decode(from: &reader) }
    }

    override func value(of object: ManagedObject) -> Any {
        value(in: object).pointee
    }

    override func copy(from source: ManagedObject, to target: ManagedObject) {
        value(in: target).pointee = value(in: source).pointee
    }

    /// The stored value, read without loading a fault or recording anything.
    @inline(__always)
    func storedValue(of object: ManagedObject) -> Value {
        value(in: object).pointee
    }

    override func makeComparator(
        ascending: Bool
    ) -> ((ManagedObject, ManagedObject) -> ComparisonResult)? {
        guard let comparable = Value.self as? any Comparable.Type, Value.self != String.self,
            Value.self != String?.self
        else { return nil }
        let offset = valueOffset
        func make<C: Comparable>(
            _: C.Type,
            isNaN: @escaping (C) -> Bool
        ) -> (ManagedObject, ManagedObject) -> ComparisonResult {
            { lhs, rhs in
                if lhs.isFault { lhs.fireFault() }
                if rhs.isFault { rhs.fireFault() }
                // Safe: as for `value(in:)`; `C` is `Value`, opened as `Comparable`.
                let left = UnsafeRawPointer(Unmanaged.passUnretained(lhs).toOpaque())
                    .advanced(by: offset).assumingMemoryBound(to: C.self).pointee
                let right = UnsafeRawPointer(Unmanaged.passUnretained(rhs).toOpaque())
                    .advanced(by: offset).assumingMemoryBound(to: C.self).pointee
                if left < right { return ascending ? .orderedAscending : .orderedDescending }
                if right < left { return ascending ? .orderedDescending : .orderedAscending }
                // NaN is unordered under `<`, which would make the order depend on the sort
                // algorithm (a limited fetch and a full one could disagree): it sorts after
                // every number.
                let leftIsNaN = isNaN(left)
                if leftIsNaN == isNaN(right) { return .orderedSame }
                return leftIsNaN == ascending ? .orderedDescending : .orderedAscending
            }
        }
        if let floating = Value.self as? any BinaryFloatingPoint.Type {
            func floatingPoint<F: BinaryFloatingPoint>(
                _ type: F.Type
            ) -> (ManagedObject, ManagedObject) -> ComparisonResult {
                make(type, isNaN: { $0.isNaN })
            }
            return floatingPoint(floating)
        }
        return make(comparable, isNaN: { _ in false })
    }
}

/// Accesses a `Data` or `Data?` attribute with external storage.
///
/// Encoding: for `Data?` a presence byte first; then a mode byte, 0 for inline (varint length
/// and bytes) or 1 for a blob (32-byte blob ID and varint length).
final class ExternalDataAccessor<Value: AttributeValue>: PropertyAccessor, @unchecked Sendable {
    override func encode(
        _ object: ManagedObject,
        to writer: inout PayloadWriter,
        blobs: inout BlobSink
    ) throws(ObjectLogError) {
        let wrapper = storage(object, as: Attribute<Value>.self)
        if object.accessState.contains(.pendingExternal), object.pendingExternal.contains(index),
            let reference = blobs.context?.externalReference(of: object, propertyIndex: index)
        {
            // Unloaded external data is written back as the same blob reference.
            if Value.isOptionalType { writer.write(byte: 1) }
            writer.write(byte: 1)
            writer.write(raw: reference.blob.bytes)
            writer.write(varint: UInt64(reference.byteCount))
            blobs.blobs.append(reference.blob)
            return
        }
        let value = wrapper.pointee.value
        let data: Data
        if Value.isOptionalType {
            guard let present = value as? Data else {
                writer.write(byte: 0)
                return
            }
            writer.write(byte: 1)
            data = present
        } else {
            data = value as? Data ?? Data()
        }
        guard let store = blobs.store, data.count >= store.externalStorageMinimumByteCount
        else {
            writer.write(byte: 0)
            writer.write(data: data)
            return
        }
        let id: BlobID
        if let reference = blobs.context?.externalReference(of: object, propertyIndex: index),
            let stored = reference.data, stored == data
        {
            // Unchanged since it was read or saved: the same blob, neither hashed nor written
            // again (a save writes only what changed, not every large value of the object).
            id = reference.blob
        } else {
            do {
                id = try store.writeBlob(data)
            } catch {
                throw ObjectLogError.store(error, "cannot write external data of '\(name)'")
            }
            blobs.context?.recordExternalData(data, in: id, of: object, propertyIndex: index)
        }
        blobs.blobs.append(id)
        writer.write(byte: 1)
        writer.write(raw: id.bytes)
        writer.write(varint: UInt64(data.count))
    }

    override func decode(
        from reader: inout PayloadReader,
        into object: ManagedObject,
        source: RecordSource?
    ) throws(ObjectLogError) {
        let wrapper = storage(object, as: Attribute<Value>.self)
        if let context = source?.context {
            // Leave blob data unread until the property is read.
            let reference = try ObjectLogError.wrapping {
                () throws(PayloadError) -> (BlobID, Int)? in
                var peek = reader
                if Value.isOptionalType, try peek.readByte() == 0 { return nil }
                guard try peek.readByte() == 1 else { return nil }
                let start = peek.offset
                guard let id = BlobID(bytes: Array(try peek.readRaw(count: 32))) else {
                    throw .malformed(offset: start, "blob ID")
                }
                let count = try peek.readVarint()
                guard count <= UInt64(Int.max) else { throw .malformed(offset: start, "length") }
                reader = peek
                return (id, Int(count))
            }
            if let (blob, count) = reference {
                context.recordExternalReference(
                    blob,
                    byteCount: count,
                    of: object,
                    propertyIndex: index
                )
                if let placeholder = Data() as? Value { wrapper.pointee.value = placeholder }
                object.pendingExternal.insert(index)
                object.accessState.insert(.pendingExternal)
                return
            }
        }
        let value = try decodeValue(from: &reader, source: source)
        if let typed = value as? Value { wrapper.pointee.value = typed }
        // Also when the access bit was dropped (a refresh): the set must not keep a stale index.
        object.pendingExternal.remove(index)
    }

    override func skip(from reader: inout PayloadReader) throws(ObjectLogError) -> Bool {
        try ObjectLogError.wrapping { () throws(PayloadError) in
            if Value.isOptionalType, try reader.readByte() == 0 { return }
            let start = reader.offset
            switch try reader.readByte() {
            case 0: _ = try reader.readLengthPrefixed()
            case 1:
                _ = try reader.readRaw(count: LogFormat.blobIDLength)
                _ = try reader.readVarint()
            case let mode: throw .malformed(offset: start, "storage mode \(mode)")
            }
        }
        return true
    }

    override func decodeValue(
        from reader: inout PayloadReader,
        source: RecordSource?
    )
        throws(ObjectLogError) -> Any
    {
        let data: Data? = try ObjectLogError.wrapping { () throws(PayloadError) -> Data? in
            if Value.isOptionalType, try reader.readByte() == 0 { return nil }
            switch try reader.readByte() {
            case 0: return try reader.readData()
            case 1:
                let hash = Array(try reader.readRaw(count: 32))
                _ = try reader.readVarint()
                guard let source else { return Data() }
                guard let data = source.readBlob(hash) else {
                    throw .malformed(offset: reader.offset, "external data blob is missing")
                }
                return data
            case let mode: throw .malformed(offset: reader.offset - 1, "storage mode \(mode)")
            }
        }
        if Value.isOptionalType { return data as Any }
        return data ?? Data()
    }

    override func value(of object: ManagedObject) -> Any {
        storage(object, as: Attribute<Value>.self).pointee.value
    }

    override func copy(from source: ManagedObject, to target: ManagedObject) {
        storage(target, as: Attribute<Value>.self).pointee.value =
            storage(source, as: Attribute<Value>.self).pointee.value
        if source.accessState.contains(.pendingExternal), source.pendingExternal.contains(index) {
            target.pendingExternal.insert(index)
            target.accessState.insert(.pendingExternal)
        } else {
            target.pendingExternal.remove(index)
        }
    }
}

/// Accesses an attribute of any other `Codable` type, stored as length-prefixed JSON.
final class CodableAttributeAccessor<Value: Codable>: PropertyAccessor, @unchecked Sendable {
    override func encode(
        _ object: ManagedObject,
        to writer: inout PayloadWriter,
        blobs: inout BlobSink
    ) throws(ObjectLogError) {
        let value = storage(object, as: Attribute<Value>.self).pointee.value
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            writer.write(data: try encoder.encode(value))
        } catch {
            throw ObjectLogError(
                .invalidValue,
                "cannot encode '\(name)' as JSON: \(error)",
                underlyingError: error
            )
        }
    }

    override func decode(
        from reader: inout PayloadReader,
        into object: ManagedObject,
        source: RecordSource?
    ) throws(ObjectLogError) {
        let value = try decodeTyped(from: &reader)
        storage(object, as: Attribute<Value>.self).pointee.value = value
    }

    override func skip(from reader: inout PayloadReader) throws(ObjectLogError) -> Bool {
        _ = try ObjectLogError.wrapping { () throws(PayloadError) in
            try reader.readLengthPrefixed()
        }
        return true
    }

    private func decodeTyped(from reader: inout PayloadReader) throws(ObjectLogError) -> Value {
        let data = try ObjectLogError.wrapping { () throws(PayloadError) in try reader.readData() }
        do {
            return try JSONDecoder().decode(Value.self, from: data)
        } catch {
            throw ObjectLogError(
                .corrupt,
                "cannot decode '\(name)' from JSON: \(error)",
                underlyingError: error
            )
        }
    }

    override func decodeValue(
        from reader: inout PayloadReader,
        source: RecordSource?
    )
        throws(ObjectLogError) -> Any
    {
        try decodeTyped(from: &reader)
    }

    override func value(of object: ManagedObject) -> Any {
        storage(object, as: Attribute<Value>.self).pointee.value
    }

    override func copy(from source: ManagedObject, to target: ManagedObject) {
        storage(target, as: Attribute<Value>.self).pointee.value =
            storage(source, as: Attribute<Value>.self).pointee.value
    }
}

/// The type-independent part of a relationship accessor.
class RelationshipAccessor: PropertyAccessor, @unchecked Sendable {
    /// The destination class.
    let destinationType: ManagedObject.Type
    /// Whether the relationship holds many objects.
    let isToMany: Bool
    /// Whether a to-many relationship keeps its order.
    let isOrdered: Bool
    /// The inverse relationship on the destination entity, resolved when the model is built.
    var inverse: RelationshipAccessor?
    /// The destination entity, resolved when the model is built.
    var destination: EntityDescription?

    init(
        name: String,
        offset: Int,
        destinationType: ManagedObject.Type,
        isToMany: Bool,
        isOrdered: Bool
    ) {
        self.destinationType = destinationType
        self.isToMany = isToMany
        self.isOrdered = isOrdered
        super.init(name: name, offset: offset)
    }

    /// The destination keys.
    func keys(of object: ManagedObject) -> [ObjectKey] { [] }
    /// Replaces the destination keys.
    func setKeys(_ keys: [ObjectKey], of object: ManagedObject) {}
    /// The declared inverse key path, delete rule and counts.
    func declaration(of object: ManagedObject) -> (AnyKeyPath?, DeleteRule, Int, Int) {
        (nil, .nullify, 0, .max)
    }
    /// Stores a probe marker so a probing read reveals which accessor a key path reaches.
    func mark(_ object: ManagedObject, with marker: ObjectKey) {}
    /// Reads the probe marker back from a probing read.
    func marker(in object: ManagedObject) -> ObjectKey { 0 }
}

/// Accesses a relationship of a given value type.
final class TypedRelationshipAccessor<Value: RelationshipValue>: RelationshipAccessor,
    @unchecked Sendable
{
    init(name: String, offset: Int) {
        super.init(
            name: name,
            offset: offset,
            destinationType: Value.Destination.self,
            isToMany: Value.isToMany,
            isOrdered: Value.isOrdered
        )
    }

    override func keys(of object: ManagedObject) -> [ObjectKey] {
        let wrapper = storage(object, as: Relationship<Value>.self)
        if isToMany { return wrapper.pointee.keys }
        return wrapper.pointee.key == 0 ? [] : [wrapper.pointee.key]
    }

    override func setKeys(_ keys: [ObjectKey], of object: ManagedObject) {
        let wrapper = storage(object, as: Relationship<Value>.self)
        if isToMany {
            wrapper.pointee.keys = keys
        } else {
            wrapper.pointee.key = keys.first ?? 0
        }
    }

    override func declaration(of object: ManagedObject) -> (AnyKeyPath?, DeleteRule, Int, Int) {
        let wrapper = storage(object, as: Relationship<Value>.self).pointee
        return (wrapper.inverse, wrapper.deleteRule, wrapper.minimumCount, wrapper.maximumCount)
    }

    override func mark(_ object: ManagedObject, with marker: ObjectKey) {
        storage(object, as: Relationship<Value>.self).pointee.key = marker
    }

    override func marker(in object: ManagedObject) -> ObjectKey {
        storage(object, as: Relationship<Value>.self).pointee.key
    }

    override func encode(
        _ object: ManagedObject,
        to writer: inout PayloadWriter,
        blobs: inout BlobSink
    ) throws(ObjectLogError) {
        let wrapper = storage(object, as: Relationship<Value>.self)
        if isToMany {
            writer.write(varint: UInt64(wrapper.pointee.keys.count))
            for key in wrapper.pointee.keys { writer.write(varint: key) }
        } else {
            writer.write(varint: wrapper.pointee.key)
        }
    }

    override func decode(
        from reader: inout PayloadReader,
        into object: ManagedObject,
        source: RecordSource?
    ) throws(ObjectLogError) {
        let keys = try decodeKeys(from: &reader)
        setKeys(keys, of: object)
    }

    override func skip(from reader: inout PayloadReader) throws(ObjectLogError) -> Bool {
        try ObjectLogError.wrapping { () throws(PayloadError) in
            let count = isToMany ? try reader.readVarint() : 1
            for _ in 0..<count { _ = try reader.readVarint() }
        }
        return true
    }

    private func decodeKeys(from reader: inout PayloadReader) throws(ObjectLogError) -> [ObjectKey]
    {
        try ObjectLogError.wrapping { () throws(PayloadError) -> [ObjectKey] in
            guard isToMany else {
                let key = try reader.readVarint()
                return key == 0 ? [] : [key]
            }
            let count = try reader.readVarint()
            // Each key takes at least one byte, so a larger count is damage, not a huge array.
            guard count <= UInt64(Int.max), Int(count) <= 1 << 32 else {
                throw .malformed(offset: reader.offset, "relationship count \(count)")
            }
            var keys: [ObjectKey] = []
            keys.reserveCapacity(min(Int(count), 1024))
            for _ in 0..<count { keys.append(try reader.readVarint()) }
            return keys
        }
    }

    override func decodeValue(
        from reader: inout PayloadReader,
        source: RecordSource?
    )
        throws(ObjectLogError) -> Any
    {
        try decodeKeys(from: &reader)
    }

    override func value(of object: ManagedObject) -> Any { keys(of: object) }

    override func copy(from source: ManagedObject, to target: ManagedObject) {
        setKeys(keys(of: source), of: target)
    }
}

/// Implemented by the property wrappers so the model can build accessors from field types.
protocol PropertyWrapperDescribing {
    /// Whether the wrapper is an ``Attribute``, whose initializer records its options while a
    /// model is being built (see ``AttributeDiscovery``).
    static var isAttribute: Bool { get }

    /// Makes the accessor of a property stored at `offset`; `options` are the attribute's
    /// declared options (empty for relationships).
    static func makeAccessor(
        name: String,
        offset: Int,
        options: AttributeOptions
    ) -> PropertyAccessor
}

extension Attribute: PropertyWrapperDescribing {
    static var isAttribute: Bool { true }

    static func makeAccessor(
        name: String,
        offset: Int,
        options: AttributeOptions
    ) -> PropertyAccessor {
        if let native = Value.self as? any AttributeValue.Type {
            func make<T: AttributeValue>(_: T.Type) -> PropertyAccessor {
                let accessor: PropertyAccessor
                if options.contains(.externalStorage), T.attributeType == .data {
                    accessor = ExternalDataAccessor<T>(name: name, offset: offset)
                } else {
                    accessor = NativeAttributeAccessor<T>(name: name, offset: offset)
                }
                accessor.attribute = (T.attributeType, T.isOptionalType, options)
                return accessor
            }
            return make(native)
        }
        if let codable = Value.self as? any Codable.Type {
            func make<T: Codable>(_: T.Type) -> PropertyAccessor {
                let accessor = CodableAttributeAccessor<T>(name: name, offset: offset)
                accessor.attribute = (.codable, T.self is any OptionalMarker.Type, options)
                return accessor
            }
            return make(codable)
        }
        // The initializers require `Codable`, so this cannot happen.
        return NativeAttributeAccessor<Bool>(name: name, offset: offset)
    }
}

extension Relationship: PropertyWrapperDescribing {
    static var isAttribute: Bool { false }

    static func makeAccessor(
        name: String,
        offset: Int,
        options: AttributeOptions
    ) -> PropertyAccessor {
        TypedRelationshipAccessor<Value>(name: name, offset: offset)
    }
}

/// The record being decoded: where external data is found.
struct RecordSource {
    /// The store holding the record and its blobs.
    let store: any PersistentStore
    /// The record's key.
    let key: ObjectKey
    /// The context that loads external data lazily; `nil` reads it at once.
    var context: ManagedObjectContext?

    init(store: any PersistentStore, key: ObjectKey, context: ManagedObjectContext? = nil) {
        self.store = store
        self.key = key
        self.context = context
    }

    /// Reads external data by the blob hash stored in the payload.
    ///
    func readBlob(_ hash: [UInt8]) -> Data? {
        guard let id = BlobID(bytes: hash) else { return nil }
        return try? store.readBlob(id)
    }
}
