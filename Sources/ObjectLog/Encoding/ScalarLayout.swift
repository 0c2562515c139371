import Foundation

/// A common attribute type with a concrete encoding path.
enum ScalarKind: UInt8, Sendable {
    case int, int64, double, string, date, bool

    /// The kind of a value type, or nil for any other type.
    init?(_ type: Any.Type) {
        switch type {
        case is Int.Type: self = .int
        case is Int64.Type: self = .int64
        case is Double.Type: self = .double
        case is String.Type: self = .string
        case is Date.Type: self = .date
        case is Bool.Type: self = .bool
        default: return nil
        }
    }

    // The concrete paths. Safe when `address` holds a value of exactly this kind, which
    // callers take from the runtime-reported layout of the entity's class.

    /// Appends the value at `address` with its type's own ``AttributeValue`` encoding.
    @inline(__always)
    func encode(at address: UnsafeMutableRawPointer, to writer: inout PayloadWriter) {
        switch self {
        case .int: address.assumingMemoryBound(to: Int.self).pointee.encode(to: &writer)
        case .int64: address.assumingMemoryBound(to: Int64.self).pointee.encode(to: &writer)
        case .double: address.assumingMemoryBound(to: Double.self).pointee.encode(to: &writer)
        case .string: address.assumingMemoryBound(to: String.self).pointee.encode(to: &writer)
        case .date: address.assumingMemoryBound(to: Date.self).pointee.encode(to: &writer)
        case .bool: address.assumingMemoryBound(to: Bool.self).pointee.encode(to: &writer)
        }
    }

    /// Reads a value into `address` with its type's own ``AttributeValue`` decoding.
    @inline(__always)
    func decode(
        into address: UnsafeMutableRawPointer,
        from reader: inout PayloadReader
    ) throws(PayloadError) {
        switch self {
        case .int: address.assumingMemoryBound(to: Int.self).pointee = try .decode(from: &reader)
        case .int64:
            address.assumingMemoryBound(to: Int64.self).pointee = try .decode(from: &reader)
        case .double:
            address.assumingMemoryBound(to: Double.self).pointee = try .decode(from: &reader)
        case .string:
            address.assumingMemoryBound(to: String.self).pointee = try .decode(from: &reader)
        case .date: address.assumingMemoryBound(to: Date.self).pointee = try .decode(from: &reader)
        case .bool: address.assumingMemoryBound(to: Bool.self).pointee = try .decode(from: &reader)
        }
    }

    /// Reads a value as an ``AttributeColumns`` column holds it: its 8-byte representation,
    /// and whether it has a place in the column's order.
    @inline(__always)
    func columnValue(from reader: inout PayloadReader) throws(PayloadError) -> (UInt64, Bool) {
        switch self {
        case .int: return (UInt64(bitPattern: Int64(try Int.decode(from: &reader))), true)
        case .int64: return (UInt64(bitPattern: try Int64.decode(from: &reader)), true)
        case .double, .date:
            let bits = try reader.readFixed64()
            return (bits, !Double(bitPattern: bits).isNaN)
        case .bool: return (try Bool.decode(from: &reader) ? 1 : 0, true)
        case .string:
            let (value, isASCII) = AttributeColumns.prefix(of: try reader.readLengthPrefixed())
            return (value, isASCII)
        }
    }

    /// A column value of this kind (``columnValue(from:)``) as an unsigned integer in the
    /// attribute's ascending order: equal values map equal, and a smaller one smaller.
    ///
    /// -0 and +0 map to one key, a NaN above every number, and a string to its first 8 bytes
    /// (the order of ASCII strings): the callers leave such values to a comparison of the
    /// values themselves.
    @inline(__always)
    func orderKey(ofColumnValue value: UInt64) -> UInt64 {
        switch self {
        case .int, .int64: return value ^ (1 << 63)
        case .double, .date:
            let bits = value == 1 << 63 ? 0 : value
            return bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
        case .bool, .string: return value
        }
    }

    /// The value at `address` as an unsigned integer in its ascending order, or nil when no
    /// integer orders it (a NaN, a string that is not all ASCII, a Boolean).
    ///
    /// Strict one way: a smaller key means a smaller value, so two keys that differ decide a
    /// comparison; equal keys decide nothing (two strings with the same first 8 bytes, -0 and
    /// +0). A string's key is its first 8 UTF-8 bytes, big-endian and zero-padded: for ASCII,
    /// byte order is both `String`'s order and `.lexical`'s.
    @inline(__always)
    func orderKey(at address: UnsafeRawPointer) -> UInt64? {
        let value: UInt64
        switch self {
        case .int:
            value = UInt64(bitPattern: Int64(address.assumingMemoryBound(to: Int.self).pointee))
        case .int64: value = UInt64(bitPattern: address.assumingMemoryBound(to: Int64.self).pointee)
        case .double, .date:
            let number =
                self == .double
                ? address.assumingMemoryBound(to: Double.self).pointee
                : address.assumingMemoryBound(to: Date.self).pointee.timeIntervalSinceReferenceDate
            guard !number.isNaN else { return nil }
            value = number.bitPattern
        case .bool: return nil
        case .string:
            var string = address.assumingMemoryBound(to: String.self).pointee
            let (prefix, isASCII) = string.withUTF8 {
                AttributeColumns.prefix(of: UnsafeRawBufferPointer($0))
            }
            guard isASCII else { return nil }
            value = prefix
        }
        return orderKey(ofColumnValue: value)
    }

    /// Moves past a value of this kind.
    @inline(__always)
    func skip(from reader: inout PayloadReader) throws(PayloadError) {
        switch self {
        case .int: try Int.skip(from: &reader)
        case .int64: try Int64.skip(from: &reader)
        case .double: try Double.skip(from: &reader)
        case .string: try String.skip(from: &reader)
        case .date: try Date.skip(from: &reader)
        case .bool: try Bool.skip(from: &reader)
        }
    }
}

/// The payload layout of an entity whose persistent properties are all ``ScalarKind`` values.
///
/// Encoding and decoding such an object walks a plain array of (kind, offset) pairs and reads
/// or writes the values in the object's memory directly: no per-property class dispatch,
/// retain or release of accessors, or generic value witnesses, which would be paid for every
/// property of every object a bulk save or fetch handles, and cost more than the values' own
/// bytes. Each value is still written and read by its type's own ``AttributeValue`` methods,
/// so the bytes are exactly those of the general path.
struct ScalarLayout: Sendable {
    /// One property: its kind and the offset of its value in the object.
    struct Field: Sendable {
        var kind: ScalarKind
        var offset: Int
    }

    let fields: [Field]

    /// The layout of `accessors`, or nil if one of them is not a scalar attribute.
    init?(_ accessors: [PropertyAccessor]) {
        var fields: [Field] = []
        for accessor in accessors {
            guard let field = accessor.scalarField else { return nil }
            fields.append(field)
        }
        self.fields = fields
    }

    /// Appends the property count and every value, as ``ObjectEncoder`` does.
    ///
    /// The bytes are those of each type's ``AttributeValue/encode(to:)``, written in one pass
    /// through a pointer into room reserved once: the most the values can take is known
    /// before writing (at most 10 bytes a number, plus each string's UTF-8 length), so no
    /// write checks the buffer's capacity or uniqueness: checks per value that would cost more
    /// than writing most values.
    func encode(_ object: ManagedObject, to writer: inout PayloadWriter) {
        // Safe: each offset is the runtime-reported offset of a stored value of exactly the
        // field's kind in this entity's class, and `object` is an instance of that class
        // (checked when it was registered), alive for the call.
        let base = UnsafeMutableRawPointer(Unmanaged.passUnretained(object).toOpaque())
        fields.withUnsafeBufferPointer { fields in
            var bound = 10 * (fields.count + 1)
            for field in fields where field.kind == .string {
                bound +=
                    (base + field.offset).assumingMemoryBound(to: String.self).pointee.utf8.count
            }
            let start = writer.tail(bound)
            var cursor = RawCursor(start)
            cursor.write(varint: UInt64(fields.count))
            for field in fields {
                let address = base + field.offset
                switch field.kind {
                case .int:
                    cursor.write(zigzag: Int64(address.assumingMemoryBound(to: Int.self).pointee))
                case .int64:
                    cursor.write(zigzag: address.assumingMemoryBound(to: Int64.self).pointee)
                case .double:
                    cursor.write(
                        fixed64: address.assumingMemoryBound(to: Double.self).pointee.bitPattern
                    )
                case .date:
                    let date = address.assumingMemoryBound(to: Date.self).pointee
                    cursor.write(fixed64: date.timeIntervalSinceReferenceDate.bitPattern)
                case .bool:
                    cursor.write(byte: address.assumingMemoryBound(to: Bool.self).pointee ? 1 : 0)
                case .string:
                    // `withUTF8` may make a non-contiguous string contiguous, so it works on a
                    // copy; the count is the one the bound above included.
                    var string = address.assumingMemoryBound(to: String.self).pointee
                    string.withUTF8 { utf8 in
                        cursor.write(varint: UInt64(utf8.count))
                        cursor.write(utf8)
                    }
                }
            }
            writer.written += cursor.position - start
        }
    }

    /// Reads the values after the property count; with `wanted`, only the marked ones are
    /// stored (the others are moved past) and reading stops after the last marked one.
    func decodeValues(
        _ reader: inout PayloadReader,
        into object: ManagedObject,
        only wanted: [Bool]?
    ) throws(PayloadError) {
        // Safe: as in `encode`.
        let base = UnsafeMutableRawPointer(Unmanaged.passUnretained(object).toOpaque())
        try fields.withUnsafeBufferPointer { (fields) throws(PayloadError) in
            guard let wanted else {
                for field in fields {
                    try field.kind.decode(into: base + field.offset, from: &reader)
                }
                return
            }
            let end = (wanted.lastIndex(of: true) ?? -1) + 1
            for index in 0..<min(end, fields.count) {
                let field = fields[index]
                if wanted[index] {
                    try field.kind.decode(into: base + field.offset, from: &reader)
                } else {
                    try field.kind.skip(from: &reader)
                }
            }
        }
    }
}

/// Writes encoded values through a pointer into room reserved beforehand.
///
/// The same encodings as ``PayloadWriter``'s methods, without their capacity checks: the
/// caller reserves enough room for everything it writes.
private struct RawCursor {
    var position: UnsafeMutablePointer<UInt8>

    init(_ start: UnsafeMutablePointer<UInt8>) { position = start }

    @inline(__always)
    mutating func write(byte: UInt8) {
        position.pointee = byte
        position += 1
    }

    @inline(__always)
    mutating func write(varint value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            position.pointee = UInt8(truncatingIfNeeded: rest) | 0x80
            position += 1
            rest >>= 7
        }
        position.pointee = UInt8(truncatingIfNeeded: rest)
        position += 1
    }

    @inline(__always)
    mutating func write(zigzag value: Int64) {
        write(varint: UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    @inline(__always)
    mutating func write(fixed64 value: UInt64) {
        UnsafeMutableRawPointer(position).storeBytes(of: value.littleEndian, as: UInt64.self)
        position += 8
    }

    @inline(__always)
    mutating func write(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        position.update(from: source, count: bytes.count)
        position += bytes.count
    }
}
