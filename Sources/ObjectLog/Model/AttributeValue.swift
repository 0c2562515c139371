import Foundation

/// The storage type of an attribute, as recorded in the stored schema.
///
/// The raw values are the names written to the store's schema metadata; FORMAT.md (section 10)
/// gives the byte encoding of each.
public enum AttributeType: String, Sendable, Codable, Hashable, CaseIterable {
    /// `Bool`: one byte, 0 or 1.
    case bool
    /// `Int8`: one byte, two's complement.
    case int8
    /// `Int16`: zigzag varint.
    case int16
    /// `Int32`: zigzag varint.
    case int32
    /// `Int64` and `Int`: zigzag varint.
    case int64
    /// `UInt8`: one byte.
    case uint8
    /// `UInt16`: varint.
    case uint16
    /// `UInt32`: varint.
    case uint32
    /// `UInt64` and `UInt`: varint.
    case uint64
    /// `Float`: 4 bytes, IEEE 754 little-endian.
    case float
    /// `Double`: 8 bytes, IEEE 754 little-endian.
    case double
    /// `String`: varint length and UTF-8 bytes.
    case string
    /// `Date`: 8-byte double, seconds since 2001-01-01 00:00:00 UTC.
    case date
    /// `Data`: varint length and bytes, or a blob reference when stored externally.
    case data
    /// `UUID`: 16 bytes.
    case uuid
    /// `URL`: its absolute string, as a string.
    case url
    /// Any other `Codable` value: varint length and its JSON encoding.
    case codable
}

/// A type the engine stores natively in an object payload.
///
/// The built-in conformances cover `Bool`, the integer widths, `Float`, `Double`, `String`,
/// `Date`, `Data`, `UUID`, `URL` and optionals of them. Any other `Codable` type can be used as
/// an attribute without conforming; it is stored as JSON. The protocol is public so payload
/// decoding is documented in one place, but it is not meant for conformance outside
/// ObjectLog: the stored schema only knows the ``AttributeType`` cases.
public protocol AttributeValue: Codable {
    /// The schema type of the value.
    static var attributeType: AttributeType { get }
    /// Whether `nil` is a value of this type.
    static var isOptionalType: Bool { get }
    /// Appends the payload encoding of the value.
    func encode(to writer: inout PayloadWriter)
    /// Reads a value written by ``encode(to:)``.
    static func decode(from reader: inout PayloadReader) throws(PayloadError) -> Self
    /// Moves past a value written by ``encode(to:)`` without making it.
    ///
    /// Fetches use it to read only the attributes a predicate tests. The default decodes the
    /// value and drops it.
    static func skip(from reader: inout PayloadReader) throws(PayloadError)
}

extension AttributeValue {
    /// Non-optional types do not admit `nil`.
    public static var isOptionalType: Bool { false }

    /// Decodes the value and drops it.
    public static func skip(from reader: inout PayloadReader) throws(PayloadError) {
        _ = try decode(from: &reader)
    }
}

extension Bool: AttributeValue {
    /// ``AttributeType/bool``.
    public static var attributeType: AttributeType { .bool }
    /// Writes one byte, 0 or 1.
    public func encode(to writer: inout PayloadWriter) { writer.write(byte: self ? 1 : 0) }
    /// Reads one byte; any value other than 0 or 1 is malformed.
    public static func decode(from reader: inout PayloadReader) throws(PayloadError) -> Bool {
        let byte = try reader.readByte()
        guard byte <= 1 else { throw .malformed(offset: reader.offset - 1, "bool byte \(byte)") }
        return byte == 1
    }
}

extension Int8: AttributeValue {
    /// ``AttributeType/int8``.
    public static var attributeType: AttributeType { .int8 }
    /// Writes one byte.
    public func encode(to writer: inout PayloadWriter) {
        writer.write(byte: UInt8(bitPattern: self))
    }
    /// Reads one byte.
    public static func decode(from reader: inout PayloadReader) throws(PayloadError) -> Int8 {
        Int8(bitPattern: try reader.readByte())
    }
}

extension UInt8: AttributeValue {
    /// ``AttributeType/uint8``.
    public static var attributeType: AttributeType { .uint8 }
    /// Writes one byte.
    public func encode(to writer: inout PayloadWriter) { writer.write(byte: self) }
    /// Reads one byte.
    public static func decode(from reader: inout PayloadReader) throws(PayloadError) -> UInt8 {
        try reader.readByte()
    }
}

/// Reads a zigzag varint and checks that it fits `T`.
private func decodeSigned<T: FixedWidthInteger & SignedInteger>(
    _ reader: inout PayloadReader
) throws(PayloadError) -> T {
    let start = reader.offset
    let wide = try reader.readZigzag()
    guard let value = T(exactly: wide) else {
        throw .malformed(offset: start, "\(wide) does not fit \(T.self)")
    }
    return value
}

/// Reads a varint and checks that it fits `T`.
private func decodeUnsigned<T: FixedWidthInteger & UnsignedInteger>(
    _ reader: inout PayloadReader
) throws(PayloadError) -> T {
    let start = reader.offset
    let wide = try reader.readVarint()
    guard let value = T(exactly: wide) else {
        throw .malformed(offset: start, "\(wide) does not fit \(T.self)")
    }
    return value
}

// The integers wider than a byte share two encodings: a zigzag varint for the signed ones and a
// varint for the unsigned ones, each decoded with a check that the value fits the type.

extension AttributeValue where Self: FixedWidthInteger & SignedInteger {
    /// Writes a zigzag varint.
    public func encode(to writer: inout PayloadWriter) { writer.write(zigzag: Int64(self)) }
    /// Reads a zigzag varint, refusing one that does not fit the type.
    public static func decode(from reader: inout PayloadReader) throws(PayloadError) -> Self {
        try decodeSigned(&reader)
    }
}

extension AttributeValue where Self: FixedWidthInteger & UnsignedInteger {
    /// Writes a varint.
    public func encode(to writer: inout PayloadWriter) { writer.write(varint: UInt64(self)) }
    /// Reads a varint, refusing one that does not fit the type.
    public static func decode(from reader: inout PayloadReader) throws(PayloadError) -> Self {
        try decodeUnsigned(&reader)
    }
}

extension Int16: AttributeValue {
    /// ``AttributeType/int16``.
    public static var attributeType: AttributeType { .int16 }
}

extension Int32: AttributeValue {
    /// ``AttributeType/int32``.
    public static var attributeType: AttributeType { .int32 }
}

extension Int64: AttributeValue {
    /// ``AttributeType/int64``.
    public static var attributeType: AttributeType { .int64 }
}

extension Int: AttributeValue {
    /// ``AttributeType/int64``.
    public static var attributeType: AttributeType { .int64 }
}

extension UInt16: AttributeValue {
    /// ``AttributeType/uint16``.
    public static var attributeType: AttributeType { .uint16 }
}

extension UInt32: AttributeValue {
    /// ``AttributeType/uint32``.
    public static var attributeType: AttributeType { .uint32 }
}

extension UInt64: AttributeValue {
    /// ``AttributeType/uint64``.
    public static var attributeType: AttributeType { .uint64 }
}

extension UInt: AttributeValue {
    /// ``AttributeType/uint64``.
    public static var attributeType: AttributeType { .uint64 }
}

extension Float: AttributeValue {
    /// ``AttributeType/float``.
    public static var attributeType: AttributeType { .float }
    /// Writes the 4 little-endian bytes of the bit pattern.
    public func encode(to writer: inout PayloadWriter) { writer.write(fixed32: bitPattern) }
    /// Reads 4 little-endian bytes.
    public static func decode(from reader: inout PayloadReader) throws(PayloadError) -> Float {
        Float(bitPattern: try reader.readFixed32())
    }
}

extension Double: AttributeValue {
    /// ``AttributeType/double``.
    public static var attributeType: AttributeType { .double }
    /// Writes the 8 little-endian bytes of the bit pattern.
    public func encode(to writer: inout PayloadWriter) { writer.write(fixed64: bitPattern) }
    /// Reads 8 little-endian bytes.
    public static func decode(from reader: inout PayloadReader) throws(PayloadError) -> Double {
        Double(bitPattern: try reader.readFixed64())
    }
}

extension String: AttributeValue {
    /// ``AttributeType/string``.
    public static var attributeType: AttributeType { .string }
    /// Writes a varint length and the UTF-8 bytes.
    public func encode(to writer: inout PayloadWriter) { writer.write(string: self) }
    /// Reads a varint length and UTF-8 bytes (invalid UTF-8 is malformed, never trapped on).
    public static func decode(from reader: inout PayloadReader) throws(PayloadError) -> String {
        try reader.readString()
    }
    /// Moves past the length and the bytes, without making a string.
    public static func skip(from reader: inout PayloadReader) throws(PayloadError) {
        _ = try reader.readLengthPrefixed()
    }
}

extension Date: AttributeValue {
    /// ``AttributeType/date``.
    public static var attributeType: AttributeType { .date }
    /// Writes seconds since the reference date as an 8-byte double.
    public func encode(to writer: inout PayloadWriter) {
        writer.write(fixed64: timeIntervalSinceReferenceDate.bitPattern)
    }
    /// Reads an 8-byte double of seconds since the reference date.
    public static func decode(from reader: inout PayloadReader) throws(PayloadError) -> Date {
        Date(timeIntervalSinceReferenceDate: Double(bitPattern: try reader.readFixed64()))
    }
}

extension Data: AttributeValue {
    /// ``AttributeType/data``.
    public static var attributeType: AttributeType { .data }
    /// Writes a varint length and the bytes.
    public func encode(to writer: inout PayloadWriter) { writer.write(data: self) }
    /// Reads a varint length and the bytes.
    public static func decode(from reader: inout PayloadReader) throws(PayloadError) -> Data {
        try reader.readData()
    }
    /// Moves past the length and the bytes, without copying them.
    public static func skip(from reader: inout PayloadReader) throws(PayloadError) {
        _ = try reader.readLengthPrefixed()
    }
}

extension UUID: AttributeValue {
    /// ``AttributeType/uuid``.
    public static var attributeType: AttributeType { .uuid }
    /// Writes the 16 bytes in RFC 4122 order.
    public func encode(to writer: inout PayloadWriter) {
        withUnsafeBytes(of: uuid) { writer.write(raw: $0) }
    }
    /// Reads 16 bytes.
    public static func decode(from reader: inout PayloadReader) throws(PayloadError) -> UUID {
        let raw = try reader.readRaw(count: 16)
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &value) { $0.copyMemory(from: raw) }
        return UUID(uuid: value)
    }
}

extension URL: AttributeValue {
    /// ``AttributeType/url``.
    public static var attributeType: AttributeType { .url }
    /// Writes the absolute string.
    public func encode(to writer: inout PayloadWriter) { writer.write(string: absoluteString) }
    /// Reads a string and parses it as a URL.
    public static func decode(from reader: inout PayloadReader) throws(PayloadError) -> URL {
        let start = reader.offset
        let string = try reader.readString()
        guard let url = URL(string: string) else {
            throw .malformed(offset: start, "not a URL: \(string)")
        }
        return url
    }
}

extension Optional: AttributeValue where Wrapped: AttributeValue {
    /// The wrapped type's schema type.
    public static var attributeType: AttributeType { Wrapped.attributeType }
    /// Optionals admit `nil`.
    public static var isOptionalType: Bool { true }
    /// Writes a presence byte (0 for `nil`, 1 otherwise), then the wrapped value if present.
    public func encode(to writer: inout PayloadWriter) {
        switch self {
        case .none: writer.write(byte: 0)
        case .some(let value):
            writer.write(byte: 1)
            value.encode(to: &writer)
        }
    }
    /// Reads a presence byte, then the wrapped value if present.
    public static func decode(from reader: inout PayloadReader) throws(PayloadError) -> Wrapped? {
        switch try reader.readByte() {
        case 0: return nil
        case 1: return try Wrapped.decode(from: &reader)
        case let byte: throw .malformed(offset: reader.offset - 1, "presence byte \(byte)")
        }
    }
    /// Reads a presence byte, then moves past the wrapped value if present.
    public static func skip(from reader: inout PayloadReader) throws(PayloadError) {
        switch try reader.readByte() {
        case 0: return
        case 1: try Wrapped.skip(from: &reader)
        case let byte: throw .malformed(offset: reader.offset - 1, "presence byte \(byte)")
        }
    }
}

/// Recognises `Optional` among `Codable` attribute types.
protocol OptionalMarker {}
extension Optional: OptionalMarker {}
