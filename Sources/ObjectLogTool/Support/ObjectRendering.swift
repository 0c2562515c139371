import CommandLineKit
import Foundation
import ObjectLog
import ObjectLogStore

/// Turns a live object into the JSON `dump` prints:
/// `{"id":…, "entity":…, "attributes":{…}, "relationships":{…}}`, with
/// `"superentities":[…]` (nearest first) after the entity for an entity that inherits.
///
/// Attributes are decoded by the schema stored in the store's metadata: numbers, strings and
/// Booleans as JSON values, dates as ISO 8601 strings, UUIDs and URLs as strings, `Codable`
/// values as their stored JSON, small binary values as base64. Binary values over
/// ``inlineDataLimit`` bytes show as `{"length":…, "sha256":…}` (base64 instead with
/// `--full-blobs`), and every value of an external-storage attribute does so, whether the store
/// keeps it in a blob or inline (plus `"base64"` with `--full-blobs`): the same data prints the
/// same in a store file and in a database. Relationships hold the target objects' ids: a number
/// or `null` for to-one, an array for to-many, in key order unless the relationship is ordered.
///
/// An object whose entity the schema does not describe (or a store without a schema) shows its
/// raw payload under `attributes.payload` in base64, and its blobs under `blobs`.
struct ObjectRendering {
    /// Binary values larger than this show by length and SHA-256 unless `--full-blobs`.
    static let inlineDataLimit = 1024

    let store: any PersistentStore
    let names: EntityNames
    let fullBlobs: Bool
    let blobSizes: [BlobID: UInt64]

    /// The object's JSON, or nil if it is no longer live.
    ///
    /// - Throws: ``CommandError`` (exit 65) naming the object and record offset when its payload
    ///   does not decode; `StoreError` when it cannot be read.
    func json(key: ObjectKey) throws -> JSONValue? {
        guard let location = try store.location(of: key),
            let (payload, blobs) = try store.readObject(key)
        else { return nil }
        return try payload.withUnsafeBytes { payload in
            try json(
                key: key,
                entity: location.entity,
                payload: payload,
                blobs: blobs,
                offset: location.offset
            )
        }
    }

    /// The JSON of the object `key` of entity tag `tag`, whose record is `payload` (naming
    /// `blobs`) at `offset` of a store file (nil for a database).
    func json(
        key: ObjectKey,
        entity tag: EntityTag,
        payload: UnsafeRawBufferPointer,
        blobs: [BlobID],
        offset: UInt64?
    ) throws -> JSONValue {
        let entityName = names.name(of: tag)
        var members: [(String, JSONValue)] = [
            ("id", .unsigned(key)),
            ("entity", .string(entityName)),
        ]
        if let schema = names.schema {
            let chain = schema.superentities(of: entityName)
            if !chain.isEmpty {
                members.append(("superentities", .array(chain.map { .string($0) })))
            }
        }
        guard let entity = names.entity(tag: tag) else {
            members.append(
                ("attributes", .object([("payload", .string(Data(payload).base64EncodedString()))]))
            )
            members.append(("relationships", .object([])))
            if !blobs.isEmpty {
                members.append(("blobs", .array(try blobs.map { try blobJSON($0, length: nil) })))
            }
            return .object(members)
        }
        let values: [(name: String, value: StoredValue)]
        do {
            values = try StoreInspector.decode(payload: payload, entity: entity)
        } catch {
            throw CommandError(
                "\(store.displayName): " + (offset.map { "offset \($0): " } ?? "")
                    + "object #\(key) (\(entityName)): " + error.message,
                exitCode: .dataError
            )
        }
        var attributes: [(String, JSONValue)] = []
        var relationships: [(String, JSONValue)] = []
        for (property, (name, value)) in zip(entity.properties, values) {
            switch value {
            case .toOne(let target):
                relationships.append((name, target.map { .unsigned($0) } ?? .null))
            case .toMany(let targets):
                // A set has no order of its own: key order, whatever order the store kept.
                let ordered = property.isOrdered ? targets : targets.sorted()
                relationships.append((name, .array(ordered.map { .unsigned($0) })))
            default:
                attributes.append((name, try attributeJSON(value, isExternal: property.isExternal)))
            }
        }
        members.append(("attributes", .object(attributes)))
        members.append(("relationships", .object(relationships)))
        return .object(members)
    }

    private func attributeJSON(_ value: StoredValue, isExternal: Bool) throws -> JSONValue {
        switch value {
        case .null: return .null
        case .bool(let value): return .bool(value)
        case .int(let value): return .integer(value)
        case .uint(let value): return .unsigned(value)
        // Through its shortest text, so 0.1 as a Float prints as 0.1, not 0.100000001490116.
        case .float(let value): return .double(Double(String(value)) ?? Double(value))
        case .double(let value): return .double(value)
        case .string(let value): return .string(value)
        case .date(let value): return .string(Formatting.date(value))
        case .uuid(let value): return .string(value.uuidString)
        case .url(let value): return .string(value)
        case .json(let text):
            let isValid =
                (try? JSONSerialization.jsonObject(
                    with: Data(text.utf8),
                    options: [.fragmentsAllowed]
                )) != nil
            return isValid ? .raw(text) : .string(text)
        case .data(let data) where isExternal:
            var members: [(String, JSONValue)] = [
                ("length", .number(data.count)),
                ("sha256", .string(BlobID(contentsOf: data).hex)),
            ]
            if fullBlobs { members.append(("base64", .string(data.base64EncodedString()))) }
            return .object(members)
        case .data(let data):
            guard data.count > Self.inlineDataLimit, !fullBlobs else {
                return .string(data.base64EncodedString())
            }
            return .object([
                ("length", .number(data.count)),
                ("sha256", .string(BlobID(contentsOf: data).hex)),
            ])
        case .externalData(let id, let byteCount):
            return try blobJSON(id, length: byteCount)
        case .toOne, .toMany:
            return .null
        }
    }

    /// An external blob as its length and SHA-256, with its content for `--full-blobs`.
    private func blobJSON(_ id: BlobID, length: Int?) throws -> JSONValue {
        let size = length.map { UInt64($0) } ?? blobSizes[id]
        var members: [(String, JSONValue)] = [
            ("length", size.map { .unsigned($0) } ?? .null),
            ("sha256", .string(id.hex)),
        ]
        if fullBlobs {
            members.append(("base64", .string(try store.readBlob(id).base64EncodedString())))
        }
        return .object(members)
    }
}
