import Foundation
import ObjectLogStore

extension StoredValue {
    /// Appends this value as a payload encodes a property of shape `property`: the inverse of
    /// ``decode(_:from:)``, for values a rewriting migration stage sets.
    ///
    /// Integers of either sign are accepted for any integer type they fit, and a float for a
    /// double; anything else must be of the property's kind and type.
    /// - Returns: Why the value cannot be stored as `property`, as a phrase, or nil once it has
    ///   been written.
    func encode(as property: ValueShape, into writer: inout PayloadWriter) -> String? {
        if property.isRelationship {
            switch self {
            case .toOne(let key) where !property.isToMany:
                writer.write(varint: key ?? 0)
            case .null where !property.isToMany:
                writer.write(varint: 0)
            case .toMany(let keys) where property.isToMany:
                writer.write(varint: UInt64(keys.count))
                for key in keys { writer.write(varint: key) }
            default:
                return "\(self) is not a \(property.isToMany ? "to-many" : "to-one") relationship"
            }
            return nil
        }
        guard let type = property.type else { return "the attribute has no type" }
        if type == .codable {
            switch self {
            case .json(let text): writer.write(string: text)
            case .null where property.isOptional: writer.write(string: "null")
            default: return "\(self) is not JSON text for a codable attribute"
            }
            return nil
        }
        if case .null = self {
            guard property.isOptional else { return "nil for a required attribute" }
            writer.write(byte: 0)
            return nil
        }
        let mark = writer.count
        if property.isOptional { writer.write(byte: 1) }
        guard encodeBare(type, external: property.isExternal, into: &writer) else {
            writer.truncate(to: mark)
            return "\(self) is not a value of type \(type.rawValue)"
        }
        return nil
    }

    /// Appends the value without presence byte; false if it is not one of `type`.
    private func encodeBare(
        _ type: AttributeType,
        external: Bool,
        into writer: inout PayloadWriter
    ) -> Bool {
        switch (type, self) {
        case (.bool, .bool(let value)): value.encode(to: &writer)
        case (.int8, _), (.int16, _), (.int32, _), (.int64, _):
            guard let integer = signed else { return false }
            let fits: Bool
            switch type {
            case .int8: fits = Int8(exactly: integer) != nil
            case .int16: fits = Int16(exactly: integer) != nil
            case .int32: fits = Int32(exactly: integer) != nil
            default: fits = true
            }
            guard fits else { return false }
            if type == .int8 {
                Int8(integer).encode(to: &writer)
            } else {
                writer.write(zigzag: integer)
            }
        case (.uint8, _), (.uint16, _), (.uint32, _), (.uint64, _):
            guard let integer = unsigned else { return false }
            let fits: Bool
            switch type {
            case .uint8: fits = UInt8(exactly: integer) != nil
            case .uint16: fits = UInt16(exactly: integer) != nil
            case .uint32: fits = UInt32(exactly: integer) != nil
            default: fits = true
            }
            guard fits else { return false }
            if type == .uint8 {
                UInt8(integer).encode(to: &writer)
            } else {
                writer.write(varint: integer)
            }
        case (.float, .float(let value)): value.encode(to: &writer)
        case (.double, .double(let value)): value.encode(to: &writer)
        case (.double, .float(let value)): Double(value).encode(to: &writer)
        case (.string, .string(let value)): value.encode(to: &writer)
        case (.date, .date(let value)): value.encode(to: &writer)
        case (.uuid, .uuid(let value)): value.encode(to: &writer)
        case (.url, .url(let value)): writer.write(string: value)
        case (.data, .data(let value)):
            if external { writer.write(byte: 0) }
            writer.write(data: value)
        case (.data, .externalData(let id, let count)) where external:
            writer.write(byte: 1)
            writer.write(raw: id.bytes)
            writer.write(varint: UInt64(count))
        default: return false
        }
        return true
    }

    /// The value as a signed integer, if it is an integer that fits one.
    private var signed: Int64? {
        switch self {
        case .int(let value): value
        case .uint(let value): Int64(exactly: value)
        default: nil
        }
    }

    /// The value as an unsigned integer, if it is an integer that fits one.
    private var unsigned: UInt64? {
        switch self {
        case .uint(let value): value
        case .int(let value): UInt64(exactly: value)
        default: nil
        }
    }
}
