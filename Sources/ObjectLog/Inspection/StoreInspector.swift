import Foundation
import ObjectLogStore

/// Reads any ObjectLog store's objects by its stored schema, without the model's classes.
///
/// This is what the `objectlog` tool uses to dump stores:
///
/// ```swift
/// let inspector = try StoreInspector(path: "Lab.objectlog")
/// for entity in inspector.schema.entities {
///     try inspector.forEachObject(entity: entity.name) { object in
///         print(object.objectID, object.values.map { "\($0.name)=\($0.value)" })
///     }
/// }
/// ```
public final class StoreInspector: Sendable {
    /// The store being read.
    package let store: any PersistentStore
    /// The stored schema.
    public let schema: ModelSchema
    /// The stored model version hash.
    public let versionHash: String?

    /// Opens the store at `path` read-only and reads its schema.
    /// - Throws: ``ObjectLogError/Code/store`` if the store cannot be opened,
    ///   ``ObjectLogError/Code/corrupt`` if it has no readable schema.
    public convenience init(path: String) throws(ObjectLogError) {
        var options = StoreOptions()
        options.readOnly = true
        options.createIfMissing = false
        let store: LogStore
        do {
            store = try LogStore.open(path: path, options: options)
        } catch {
            throw ObjectLogError.store(error, "cannot open store '\(path)'")
        }
        try self.init(store: store)
    }

    /// The store's model versions, oldest first.
    public let history: ModelHistory

    /// Reads the schema of an open store, and has records that earlier model versions wrote
    /// read in the current version's layout (as the engine reads them).
    /// - Throws: ``ObjectLogError/Code/corrupt`` if the store has no readable schema.
    package init(store: any PersistentStore) throws(ObjectLogError) {
        self.store = store
        guard let history = try ModelHistory.read(from: store), let current = history.current
        else {
            throw ObjectLogError(
                .corrupt,
                "the store '\(store.displayName)' has no object model in its metadata "
                    + "(keys '\(ModelHistory.versionsKey)' and "
                    + "'\(PersistentStoreCoordinator.modelKey)' are missing)"
            )
        }
        self.history = history
        self.schema = current.schema
        self.versionHash = current.hash
        store.installReading(of: history, pendingBoundary: nil)
    }

    /// Decodes a payload of an entity into named values.
    /// - Throws: ``ObjectLogError/Code/corrupt`` naming the property and byte offset, with the
    ///   ``PayloadError`` as ``ObjectLogError/underlyingError``.
    public static func decode(
        payload: UnsafeRawBufferPointer,
        entity: ModelSchema.Entity
    ) throws(ObjectLogError) -> [(name: String, value: StoredValue)] {
        var reader = PayloadReader(payload)
        var values: [(name: String, value: StoredValue)] = []
        let count: UInt64
        do {
            count = try reader.readVarint()
        } catch {
            throw ObjectLogError(
                .corrupt,
                "\(entity.name) payload: \(error)",
                underlyingError: error
            )
        }
        guard count == UInt64(entity.properties.count) else {
            throw ObjectLogError(
                .corrupt,
                "\(entity.name) payload has \(count) properties, the schema has \(entity.properties.count)"
            )
        }
        for property in entity.properties {
            do {
                values.append((property.name, try StoredValue.decode(property, from: &reader)))
            } catch {
                throw ObjectLogError(
                    .corrupt,
                    "\(entity.name).\(property.name): \(error)",
                    property: property.name,
                    underlyingError: error
                )
            }
        }
        return values
    }

    /// Encodes named values of an entity as its payload: the inverse of
    /// ``decode(payload:entity:)``, for a store that keeps values in columns of its own.
    ///
    /// `values` holds one value per property of `entity`, in its order.
    /// - Throws: ``ObjectLogError/Code/invalidValue`` naming the property whose value is not
    ///   one it can hold.
    package static func encode(
        _ values: [StoredValue],
        entity: ModelSchema.Entity
    ) throws(ObjectLogError) -> [UInt8] {
        guard values.count == entity.properties.count else {
            throw ObjectLogError(
                .invalidValue,
                "\(values.count) values for the \(entity.properties.count) properties of "
                    + "\(entity.name)"
            )
        }
        var writer = PayloadWriter()
        writer.write(varint: UInt64(values.count))
        for (property, value) in zip(entity.properties, values) {
            if let reason = value.encode(as: ValueShape(property), into: &writer) {
                throw ObjectLogError(
                    .invalidValue,
                    "\(entity.name).\(property.name): \(reason)",
                    property: property.name
                )
            }
        }
        return writer.bytes
    }

    /// The value an attribute's objects written before it existed take: its default, decoded
    /// from ``ModelSchema/Property/defaultValue``; nil when it has none or it cannot be read.
    package static func defaultValue(of property: ModelSchema.Property) -> StoredValue? {
        guard let hex = property.defaultValue, hex.utf8.count.isMultiple(of: 2) else { return nil }
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return bytes.withUnsafeBytes { buffer in
            var reader = PayloadReader(buffer)
            return try? StoredValue.decode(property, from: &reader)
        }
    }

    /// The object with a key, or `nil` if no live object has it.
    public func object(key: ObjectKey) throws(ObjectLogError) -> GenericObject? {
        guard let location = try readingStore({ try store.location(of: key) }) else { return nil }
        guard let entity = schema.entity(tag: location.entity) else {
            throw ObjectLogError(
                .corrupt,
                "object #\(key) has unknown entity tag \(location.entity)"
            )
        }
        let record: (payload: [UInt8], blobs: [BlobID])?
        do {
            record = try store.readObject(key)
        } catch {
            throw ObjectLogError.store(error, "cannot read object #\(key)")
        }
        guard let record else { return nil }
        let decoded = record.payload.withUnsafeBytes { buffer in
            Result { () throws(ObjectLogError) in try Self.decode(payload: buffer, entity: entity) }
        }
        let values = try decoded.get()
        return GenericObject(key: key, entity: entity.name, values: values)
    }

    /// Calls `body` with every live object of an entity (all entities when `nil`), in the
    /// store's order: the log's for a log store, the keys' for a database.
    public func forEachObject(
        entity name: String? = nil,
        _ body: (GenericObject) throws -> Void
    ) throws {
        var tag: EntityTag?
        if let name {
            guard let entity = schema.entity(named: name) else {
                throw ObjectLogError(.invalidArgument, "the store has no entity '\(name)'")
            }
            tag = entity.tag
        }
        try store.forEachLiveObject(entity: tag) { key, entityTag, buffer in
            // The stored schemas are records too, but not objects.
            if entityTag == ModelHistory.schemaEntityTag { return }
            guard let entity = schema.entity(tag: entityTag) else {
                throw ObjectLogError(.corrupt, "object #\(key) has unknown entity tag \(entityTag)")
            }
            let values = try Self.decode(payload: buffer, entity: entity)
            try body(GenericObject(key: key, entity: entity.name, values: values))
        }
    }

    /// All live objects of an entity (all entities when `nil`).
    public func objects(entity name: String? = nil) throws -> [GenericObject] {
        var result: [GenericObject] = []
        try forEachObject(entity: name) { result.append($0) }
        return result
    }

    /// The number of live objects of an entity, without decoding.
    /// - Throws: ``ObjectLogError/Code/store`` if the store cannot count them.
    public func count(entity name: String) throws(ObjectLogError) -> Int {
        guard let entity = schema.entity(named: name) else { return 0 }
        return try readingStore { try store.liveCount(entity: entity.tag) }
    }

    /// Reads the bytes of external data.
    public func data(of blob: BlobID) throws(ObjectLogError) -> Data {
        do {
            return try store.readBlob(blob)
        } catch {
            throw ObjectLogError.store(error, "cannot read blob \(blob.hex)")
        }
    }

    /// Closes the store.
    public func close() throws(ObjectLogError) {
        do {
            try store.close()
        } catch {
            throw ObjectLogError.store(error, "cannot close the store")
        }
    }
}
