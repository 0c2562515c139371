import Foundation
import ObjectLogStore

/// One property value decoded from a payload by the stored schema alone.
public enum StoredValue: Sendable, Hashable, CustomStringConvertible {
    /// `nil` of an optional attribute.
    case null
    /// A `bool` attribute.
    case bool(Bool)
    /// A signed integer attribute of any width.
    case int(Int64)
    /// An unsigned integer attribute of any width.
    case uint(UInt64)
    /// A `float` attribute.
    case float(Float)
    /// A `double` attribute.
    case double(Double)
    /// A `string` attribute.
    case string(String)
    /// A `date` attribute.
    case date(Date)
    /// A `data` attribute stored inline.
    case data(Data)
    /// A `data` attribute stored in a blob file beside the store.
    case externalData(BlobID, byteCount: Int)
    /// A `uuid` attribute.
    case uuid(UUID)
    /// A `url` attribute (its string).
    case url(String)
    /// A `codable` attribute (its JSON text).
    case json(String)
    /// A to-one relationship: the destination key, or `nil`.
    case toOne(ObjectKey?)
    /// A to-many relationship: the destination keys (in order for ordered relationships).
    case toMany([ObjectKey])

    /// A short, single-line rendering for tools.
    public var description: String {
        switch self {
        case .null: "nil"
        case .bool(let value): "\(value)"
        case .int(let value): "\(value)"
        case .uint(let value): "\(value)"
        case .float(let value): "\(value)"
        case .double(let value): "\(value)"
        case .string(let value): "\"\(value)\""
        case .date(let value): value.formatted(.iso8601)
        case .data(let value): "<\(value.count) bytes>"
        case .externalData(let id, let count): "<\(count) bytes in blob \(id.hex)>"
        case .uuid(let value): value.uuidString
        case .url(let value): value
        case .json(let value): value
        case .toOne(let key): key.map { "#\($0)" } ?? "nil"
        case .toMany(let keys): "[" + keys.map { "#\($0)" }.joined(separator: ", ") + "]"
        }
    }

    /// Decodes one property of a payload.
    static func decode(
        _ property: ModelSchema.Property,
        from reader: inout PayloadReader
    ) throws(PayloadError) -> StoredValue {
        try decode(ValueShape(property), from: &reader)
    }

    /// Decodes one value of `shape` (which holds all that decoding needs, without the
    /// property's names to copy).
    static func decode(
        _ property: ValueShape,
        from reader: inout PayloadReader
    ) throws(PayloadError) -> StoredValue {
        if property.isRelationship {
            if !property.isToMany {
                let key = try reader.readVarint()
                return .toOne(key == 0 ? nil : key)
            }
            let count = try reader.readVarint()
            var keys: [ObjectKey] = []
            for _ in 0..<count { keys.append(try reader.readVarint()) }
            return .toMany(keys)
        }
        guard let type = property.type else {
            throw .malformed(offset: reader.offset, "an attribute has no type")
        }
        if type == .codable {
            let json = String(decoding: try reader.readLengthPrefixed(), as: UTF8.self)
            return json == "null" && property.isOptional ? .null : .json(json)
        }
        if property.isOptional {
            switch try reader.readByte() {
            case 0: return .null
            case 1: break
            case let byte: throw .malformed(offset: reader.offset - 1, "presence byte \(byte)")
            }
        }
        switch type {
        case .bool: return .bool(try Bool.decode(from: &reader))
        case .int8: return .int(Int64(try Int8.decode(from: &reader)))
        case .int16, .int32, .int64: return .int(try reader.readZigzag())
        case .uint8: return .uint(UInt64(try reader.readByte()))
        case .uint16, .uint32, .uint64: return .uint(try reader.readVarint())
        case .float: return .float(try Float.decode(from: &reader))
        case .double: return .double(try Double.decode(from: &reader))
        case .string: return .string(try reader.readString())
        case .date: return .date(try Date.decode(from: &reader))
        case .uuid: return .uuid(try UUID.decode(from: &reader))
        case .url: return .url(try reader.readString())
        case .codable: return .json(try reader.readString())
        case .data:
            guard property.isExternal else { return .data(try reader.readData()) }
            switch try reader.readByte() {
            case 0: return .data(try reader.readData())
            case 1:
                let start = reader.offset
                guard let id = BlobID(bytes: Array(try reader.readRaw(count: 32))) else {
                    throw .malformed(offset: start, "blob ID")
                }
                let count = try reader.readVarint()
                guard count <= UInt64(Int.max) else {
                    throw .malformed(offset: start, "blob length")
                }
                return .externalData(id, byteCount: Int(count))
            case let mode: throw .malformed(offset: reader.offset - 1, "storage mode \(mode)")
            }
        }
    }
}
