import Foundation
import ObjectLog

/// How one attribute or to-one value crosses between the engine's payload and its column in
/// PostgreSQL's binary form, with no text and no ``StoredValue`` in between.
///
/// The column types are those of ``SchemaMapping/sqlType(_:)``; each binary form is the one
/// PostgreSQL's `send` and `recv` functions use (big-endian numbers, text and `bytea` as their
/// bytes, `uuid` as its 16 bytes, `numeric` as base-10000 digits). The payload's encodings
/// are FORMAT.md's, section 10.
struct BinaryColumn: Sendable {
    /// The column's form.
    enum Form: Sendable, Equatable {
        case bool
        /// `int8`, whose payload byte is its two's complement, in a `smallint`.
        case int8
        /// `int16`, `int32` or `int64` (zigzag in a payload) in a column of `width` bytes.
        case signed(width: Int)
        /// `uint8`, whose payload byte is itself, in a `smallint`.
        case uint8
        /// `uint16` or `uint32` (a varint in a payload) in a column of `width` bytes.
        case unsigned(width: Int)
        /// `uint64` in a `numeric(20, 0)`.
        case uint64
        case float
        /// `double` and `date` (seconds since 2001), both `double precision`.
        case double
        /// `string` and `url`, as `text`.
        case text
        /// `codable`, as `json` text.
        case json
        /// Inline `data`, as `bytea`.
        case data
        case uuid
        /// A to-one relationship: the destination's key, as `bigint`.
        case toOne
    }

    let form: Form
    /// Whether the payload has a presence byte before the value.
    let hasPresenceByte: Bool
    /// Whether `nil` is SQL `NULL` (an optional attribute, or a to-one).
    let isOptional: Bool
    /// Whether the payload has a mode byte (inline or external) before `data`.
    let isExternal: Bool

    /// The column of `property`, an attribute or a to-one relationship.
    init(_ property: ModelSchema.Property) {
        isExternal = property.kind == .attribute && property.isExternal
        guard property.kind == .attribute, let type = property.type else {
            form = .toOne
            hasPresenceByte = false
            isOptional = true
            return
        }
        isOptional = property.isOptional
        hasPresenceByte = property.isOptional && type != .codable
        switch type {
        case .bool: form = .bool
        case .int8: form = .int8
        case .int16: form = .signed(width: 2)
        case .int32: form = .signed(width: 4)
        case .int64: form = .signed(width: 8)
        case .uint8: form = .uint8
        case .uint16: form = .unsigned(width: 4)
        case .uint32: form = .unsigned(width: 8)
        case .uint64: form = .uint64
        case .float: form = .float
        case .double, .date: form = .double
        case .string, .url: form = .text
        case .codable: form = .json
        case .data: form = .data
        case .uuid: form = .uuid
        }
    }

    // MARK: Column to payload

    /// Appends the payload encoding of a column's binary value (nil for `NULL`); false when
    /// the value is not one the property can hold.
    func appendPayload(of value: UnsafeRawBufferPointer?, to writer: inout PayloadWriter) -> Bool {
        guard let value else {
            switch form {
            case .toOne: writer.write(varint: 0)
            case .json where isOptional: writer.write(string: "null")
            default:
                guard hasPresenceByte else { return false }
                writer.write(byte: 0)
            }
            return true
        }
        if hasPresenceByte { writer.write(byte: 1) }
        switch form {
        case .bool:
            guard value.count == 1, value[0] <= 1 else { return false }
            writer.write(byte: value[0])
        case .int8:
            guard let number = Self.signed(value), let byte = Int8(exactly: number) else {
                return false
            }
            writer.write(byte: UInt8(bitPattern: byte))
        case .signed:
            guard let number = Self.signed(value) else { return false }
            writer.write(zigzag: number)
        case .uint8:
            guard let number = Self.signed(value), let byte = UInt8(exactly: number) else {
                return false
            }
            writer.write(byte: byte)
        case .unsigned:
            guard let number = Self.signed(value), let unsigned = UInt64(exactly: number) else {
                return false
            }
            writer.write(varint: unsigned)
        case .uint64:
            guard let number = Self.unsignedNumeric(value) else { return false }
            writer.write(varint: number)
        case .float:
            guard value.count == 4 else { return false }
            writer.write(fixed32: UInt32(bigEndian: value.loadUnaligned(as: UInt32.self)))
        case .double:
            guard value.count == 8 else { return false }
            writer.write(fixed64: UInt64(bigEndian: value.loadUnaligned(as: UInt64.self)))
        case .text, .json:
            writer.write(varint: UInt64(value.count))
            writer.write(bytes: value)
        case .data:
            if isExternal { writer.write(byte: 0) }
            writer.write(varint: UInt64(value.count))
            writer.write(bytes: value)
        case .uuid:
            guard value.count == 16 else { return false }
            writer.write(bytes: value)
        case .toOne:
            guard let key = Self.signed(value), key > 0 else { return false }
            writer.write(varint: UInt64(key))
        }
        return true
    }

    /// A big-endian integer of 2, 4 or 8 bytes.
    static func signed(_ value: UnsafeRawBufferPointer) -> Int64? {
        switch value.count {
        case 2: Int64(Int16(bigEndian: value.loadUnaligned(as: Int16.self)))
        case 4: Int64(Int32(bigEndian: value.loadUnaligned(as: Int32.self)))
        case 8: Int64(bigEndian: value.loadUnaligned(as: Int64.self))
        default: nil
        }
    }

    /// A whole, non-negative `numeric` that fits 64 bits: its digit count, weight, sign and
    /// scale, then its base-10000 digits, most significant first.
    static func unsignedNumeric(_ value: UnsafeRawBufferPointer) -> UInt64? {
        guard value.count >= 8 else { return nil }
        func field(_ index: Int) -> Int {
            Int(Int16(bigEndian: value.loadUnaligned(fromByteOffset: index * 2, as: Int16.self)))
        }
        let (digits, weight, sign) = (field(0), field(1), field(2))
        guard sign == 0, digits >= 0, value.count == 8 + 2 * digits else { return nil }
        guard digits > 0 else { return 0 }
        // Only whole numbers: every digit at or above the units position.
        guard weight >= digits - 1, weight < 5 else { return nil }
        var result: UInt64 = 0
        for index in 0...weight {
            let digit = index < digits ? field(4 + index) : 0
            guard (0..<10_000).contains(digit) else { return nil }
            let (scaled, over) = result.multipliedReportingOverflow(by: 10_000)
            let (sum, carry) = scaled.addingReportingOverflow(UInt64(digit))
            guard !over, !carry else { return nil }
            result = sum
        }
        return result
    }

    // MARK: Payload to column

    /// Reads one value of this column from a payload and appends it as a field of a binary
    /// `COPY` row (its length, then its bytes; length −1 for `NULL`).
    ///
    /// External data's bytes come from `blob`, given the blob's ID.
    func appendField(
        from reader: inout PayloadReader,
        to buffer: inout CopyRowBuffer,
        blob: (BlobID) throws(PostgresError) -> Data
    ) throws(PostgresError) {
        do {
            if form == .toOne {
                let key = try reader.readVarint()
                guard key != 0 else { return Self.appendNull(to: &buffer) }
                guard let signed = Int64(exactly: key) else { throw Self.outOfRange }
                buffer.append(bigEndian: Int32(8))
                return buffer.append(bigEndian: signed)
            }
            if hasPresenceByte, try reader.readByte() == 0 {
                return Self.appendNull(to: &buffer)
            }
            switch form {
            case .bool:
                buffer.append(bigEndian: Int32(1))
                buffer.append(byte: try reader.readByte() == 0 ? 0 : 1)
            case .int8:
                buffer.append(bigEndian: Int32(2))
                buffer.append(bigEndian: Int16(Int8(bitPattern: try reader.readByte())))
            case .signed(let width):
                let number = try reader.readZigzag()
                try Self.appendInteger(number, width: width, to: &buffer)
            case .uint8:
                buffer.append(bigEndian: Int32(2))
                buffer.append(bigEndian: Int16(try reader.readByte()))
            case .unsigned(let width):
                guard let number = Int64(exactly: try reader.readVarint()) else {
                    throw Self.outOfRange
                }
                try Self.appendInteger(number, width: width, to: &buffer)
            case .uint64:
                Self.appendNumeric(try reader.readVarint(), to: &buffer)
            case .float:
                buffer.append(bigEndian: Int32(4))
                buffer.append(bigEndian: try reader.readFixed32())
            case .double:
                buffer.append(bigEndian: Int32(8))
                buffer.append(bigEndian: try reader.readFixed64())
            case .text:
                try Self.appendText(try reader.readLengthPrefixed(), to: &buffer)
            case .json:
                let text = try reader.readLengthPrefixed()
                // An optional Codable's nil is the JSON text `null` in a payload, NULL here.
                if isOptional, text.elementsEqual("null".utf8) {
                    return Self.appendNull(to: &buffer)
                }
                try Self.appendText(text, to: &buffer)
            case .data:
                if isExternal, try reader.readByte() == 1 {
                    let digest = try reader.readRaw(count: 32)
                    _ = try reader.readVarint()
                    guard let id = BlobID(bytes: Array(digest)) else { throw Self.outOfRange }
                    let bytes = try blob(id)
                    buffer.append(bigEndian: Int32(bytes.count))
                    bytes.withUnsafeBytes { buffer.append(bytes: $0) }
                } else {
                    let bytes = try reader.readLengthPrefixed()
                    buffer.append(bigEndian: Int32(bytes.count))
                    buffer.append(bytes: bytes)
                }
            case .uuid:
                buffer.append(bigEndian: Int32(16))
                buffer.append(bytes: try reader.readRaw(count: 16))
            case .toOne:
                break
            }
        } catch let error as PostgresError {
            throw error
        } catch {
            throw PostgresError(.invalidParameter, "a payload that cannot be read: \(error)")
        }
    }

    private static let outOfRange = PostgresError(
        .invalidParameter,
        "a value out of its column's range"
    )

    static func appendNull(to buffer: inout CopyRowBuffer) {
        buffer.append(bigEndian: Int32(-1))
    }

    /// Appends an integer field of `width` bytes.
    private static func appendInteger(
        _ number: Int64,
        width: Int,
        to buffer: inout CopyRowBuffer
    ) throws(PostgresError) {
        buffer.append(bigEndian: Int32(width))
        switch width {
        case 2:
            guard let narrow = Int16(exactly: number) else { throw outOfRange }
            buffer.append(bigEndian: narrow)
        case 4:
            guard let narrow = Int32(exactly: number) else { throw outOfRange }
            buffer.append(bigEndian: narrow)
        default:
            buffer.append(bigEndian: number)
        }
    }

    /// Appends a text field; text with a NUL character is refused, as PostgreSQL's text
    /// cannot hold one.
    private static func appendText(
        _ text: UnsafeRawBufferPointer,
        to buffer: inout CopyRowBuffer
    ) throws(PostgresError) {
        if text.contains(0) {
            throw PostgresError(
                .invalidParameter,
                "a value holds a NUL character, which PostgreSQL text cannot hold"
            )
        }
        buffer.append(bigEndian: Int32(text.count))
        buffer.append(bytes: text)
    }

    /// Appends a `numeric` field holding `number`.
    static func appendNumeric(_ number: UInt64, to buffer: inout CopyRowBuffer) {
        var digits: [Int16] = []
        var rest = number
        while rest > 0 {
            digits.append(Int16(rest % 10_000))
            rest /= 10_000
        }
        digits.reverse()
        let weight = max(digits.count - 1, 0)
        // Trailing zero digits are implied by the weight, as PostgreSQL writes them.
        while digits.last == 0 { digits.removeLast() }
        buffer.append(bigEndian: Int32(8 + 2 * digits.count))
        buffer.append(bigEndian: Int16(digits.count))
        buffer.append(bigEndian: Int16(weight))
        buffer.append(bigEndian: Int16(0))  // sign: positive
        buffer.append(bigEndian: Int16(0))  // display scale
        for digit in digits { buffer.append(bigEndian: digit) }
    }
}
