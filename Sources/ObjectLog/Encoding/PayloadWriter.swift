import Foundation

/// Appends the bytes of an object payload: little-endian fixed-width numbers and LEB128 varints.
///
/// The engine uses one writer per save and reuses its buffer across objects, so encoding an
/// object allocates nothing beyond the payload array handed to the store. Custom
/// ``AttributeValue`` conformances write their value with these methods; see
/// FORMAT.md (section 10) for the byte layout of every built-in type.
public struct PayloadWriter: Sendable {
    /// The bytes written so far.
    public var bytes: [UInt8]

    /// Creates an empty writer.
    public init() {
        bytes = []
        bytes.reserveCapacity(256)
    }

    /// Appends one byte.
    @inlinable
    public mutating func write(byte: UInt8) {
        bytes.append(byte)
    }

    /// Appends an unsigned integer as a LEB128 varint (7 bits a byte, low bits first).
    @inlinable
    public mutating func write(varint value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(truncatingIfNeeded: rest))
    }

    /// Appends a signed integer as a zigzag-mapped LEB128 varint, so small negatives stay short.
    @inlinable
    public mutating func write(zigzag value: Int64) {
        write(varint: UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    /// Appends the 8 little-endian bytes of `value`.
    @inlinable
    public mutating func write(fixed64 value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Appends the 4 little-endian bytes of `value`.
    @inlinable
    public mutating func write(fixed32 value: UInt32) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Appends a varint length followed by the UTF-8 bytes of `string`.
    @inlinable
    public mutating func write(string: String) {
        var copy = string
        copy.withUTF8 { utf8 in
            write(varint: UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    /// Appends a varint length followed by `data`.
    @inlinable
    public mutating func write(data: Data) {
        write(varint: UInt64(data.count))
        bytes.append(contentsOf: data)
    }

    /// Appends raw bytes without a length.
    @inlinable
    public mutating func write<Bytes: Sequence>(raw: Bytes) where Bytes.Element == UInt8 {
        bytes.append(contentsOf: raw)
    }

    /// A copy of the bytes in an array of exactly their size.
    ///
    /// Handing out ``bytes`` itself would share the writer's buffer, so the next
    /// ``removeAll()`` would allocate a fresh full-capacity buffer and the handed-out array would
    /// keep all its spare capacity.
    public func exactCopy() -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: bytes.count) { buffer, count in
            _ = buffer.initialize(from: bytes)
            count = bytes.count
        }
    }

    /// Removes every byte, keeping the capacity.
    @inlinable
    public mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
    }
}
