import Foundation

/// Reads the bytes of an object payload written by ``PayloadWriter``.
///
/// Reading never traps: running past the end or meeting a malformed varint throws
/// ``PayloadError``, because payloads come from disk and may be damaged.
public struct PayloadReader {
    let buffer: UnsafeRawBufferPointer
    /// The offset of the next byte to read.
    public private(set) var offset: Int

    /// Creates a reader over `buffer`, which must stay valid while the reader is used.
    public init(_ buffer: UnsafeRawBufferPointer) {
        self.buffer = buffer
        self.offset = 0
    }

    /// Whether every byte has been read.
    public var isAtEnd: Bool { offset >= buffer.count }

    /// Reads one byte.
    public mutating func readByte() throws(PayloadError) -> UInt8 {
        guard offset < buffer.count else { throw PayloadError.truncated(offset: offset) }
        let byte = buffer[offset]
        offset += 1
        return byte
    }

    /// Reads a LEB128 varint.
    @inline(__always)
    public mutating func readVarint() throws(PayloadError) -> UInt64 {
        // Most varints in a payload (counts, lengths, small integers) are one byte.
        if offset < buffer.count {
            let byte = buffer[offset]
            if byte < 0x80 {
                offset += 1
                return UInt64(byte)
            }
        }
        return try readLongVarint()
    }

    /// Moves past a varint, as ``readVarint()`` reads it.
    @inline(__always)
    public mutating func skipVarint() throws(PayloadError) {
        if buffer.count - offset >= 8,
            let length = Self.shortVarintLength(
                buffer.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            )
        {
            offset += length
            return
        }
        _ = try readVarint()
    }

    /// The length of the varint that starts the eight bytes of `word` (as loaded from memory),
    /// or nil if it does not end within them.
    ///
    /// Its length is where the first byte without its high bit is: found at once, where a
    /// byte-by-byte walk costs a test per byte. (A varint of eight bytes or fewer holds at most
    /// 56 bits, so it cannot overflow.)
    @inline(__always)
    static func shortVarintLength(_ word: UInt64) -> Int? {
        let ends = ~UInt64(littleEndian: word) & 0x8080_8080_8080_8080
        return ends != 0 ? ends.trailingZeroBitCount >> 3 + 1 : nil
    }

    /// Reads a varint at `offset` of the `end` bytes at `base`, as ``readVarint()`` does; nil
    /// where it throws (cut short, or longer than ten bytes), `offset` then left anywhere.
    ///
    /// For loops that read many values straight from their bytes (the attribute columns, the
    /// batch update's splice), where a reader per value costs more than the value.
    @inline(__always)
    static func varint(_ base: UnsafeRawPointer, _ end: Int, _ offset: inout Int) -> UInt64? {
        guard offset < end else { return nil }
        let first = base.load(fromByteOffset: offset, as: UInt8.self)
        offset += 1
        if first < 0x80 { return UInt64(first) }
        var result = UInt64(first & 0x7F)
        var shift: UInt64 = 7
        while true {
            guard offset < end else { return nil }
            let byte = base.load(fromByteOffset: offset, as: UInt8.self)
            offset += 1
            guard shift < 64 else { return nil }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
    }

    /// Moves past a varint at `offset`, as ``varint(_:_:_:)`` reads it; false where that is nil.
    @inline(__always)
    static func skipVarint(_ base: UnsafeRawPointer, _ end: Int, _ offset: inout Int) -> Bool {
        if end - offset >= 8,
            let length = shortVarintLength(
                base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            )
        {
            offset += length
            return true
        }
        return varint(base, end, &offset) != nil
    }

    /// Reads a varint of more than one byte (or reports a truncated one).
    private mutating func readLongVarint() throws(PayloadError) -> UInt64 {
        // With room for the longest varint (10 bytes), no byte needs its own bounds check.
        // A varint longer than that goes to the loop below, which reports it.
        if buffer.count - offset >= 10, let base = buffer.baseAddress {
            let start = base + offset
            var result: UInt64 = 0
            for index in 0..<10 {
                let byte = start.load(fromByteOffset: index, as: UInt8.self)
                result |= UInt64(byte & 0x7F) << UInt64(7 * index)
                if byte < 0x80 {
                    offset += index + 1
                    return result
                }
            }
        }
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard offset < buffer.count else { throw PayloadError.truncated(offset: offset) }
            let byte = buffer[offset]
            offset += 1
            guard shift < 64 else {
                throw PayloadError.malformed(offset: offset, "varint too long")
            }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
    }

    /// Reads a zigzag-mapped varint.
    public mutating func readZigzag() throws(PayloadError) -> Int64 {
        let raw = try readVarint()
        return Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))
    }

    /// Reads 8 little-endian bytes.
    public mutating func readFixed64() throws(PayloadError) -> UInt64 {
        guard buffer.count - offset >= 8 else { throw PayloadError.truncated(offset: offset) }
        let value = buffer.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        offset += 8
        return UInt64(littleEndian: value)
    }

    /// Reads 4 little-endian bytes.
    public mutating func readFixed32() throws(PayloadError) -> UInt32 {
        guard buffer.count - offset >= 4 else { throw PayloadError.truncated(offset: offset) }
        let value = buffer.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
        offset += 4
        return UInt32(littleEndian: value)
    }

    /// Reads `count` raw bytes as a buffer slice valid as long as the reader's buffer.
    public mutating func readRaw(count: Int) throws(PayloadError) -> UnsafeRawBufferPointer {
        guard count >= 0, buffer.count - offset >= count else {
            throw PayloadError.truncated(offset: offset)
        }
        let slice = UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + count])
        offset += count
        return slice
    }

    /// Reads a varint length, then that many bytes.
    public mutating func readLengthPrefixed() throws(PayloadError) -> UnsafeRawBufferPointer {
        let length = try readVarint()
        guard length <= UInt64(buffer.count - offset) else {
            throw PayloadError.truncated(offset: offset)
        }
        return try readRaw(count: Int(length))
    }

    /// Reads a length-prefixed UTF-8 string; invalid UTF-8 is malformed (FORMAT.md, section 1).
    public mutating func readString() throws(PayloadError) -> String {
        let start = offset
        let raw = try readLengthPrefixed()
        // ASCII, most text, is valid UTF-8 as it is; `String(decoding:as:)` is specialized
        // here, where `String(validating:as:)` looked up generic metadata for every string.
        if Self.isASCII(raw) { return String(decoding: raw, as: UTF8.self) }
        guard let string = String(validating: raw, as: UTF8.self) else {
            throw PayloadError.malformed(offset: start, "string is not valid UTF-8")
        }
        return string
    }

    /// Whether every byte is below 0x80, eight bytes at a time.
    @inline(__always)
    static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        var high: UInt64 = 0
        while index + 8 <= bytes.count {
            high |= bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            index += 8
        }
        while index < bytes.count {
            high |= UInt64(bytes[index])
            index += 1
        }
        return high & 0x8080_8080_8080_8080 == 0
    }

    /// Reads length-prefixed bytes as `Data`.
    public mutating func readData() throws(PayloadError) -> Data {
        Data(try readLengthPrefixed())
    }
}

/// A payload that cannot be decoded: truncated, malformed, or not matching the schema.
public enum PayloadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The payload ended before the value at `offset` was complete.
    case truncated(offset: Int)
    /// The bytes at `offset` do not form a valid value.
    case malformed(offset: Int, String)

    /// A one-line description naming the offset.
    public var description: String {
        switch self {
        case .truncated(let offset): "payload truncated at byte \(offset)"
        case .malformed(let offset, let why): "payload malformed at byte \(offset): \(why)"
        }
    }
}
