import Foundation

/// Appends little-endian fields to a growing byte array.
///
/// Every multi-byte integer in the store format is little-endian; nothing is copied from a
/// memory layout.
package struct ByteWriter {
    /// The bytes written, followed by zeroed spare room.
    ///
    /// Growing the array once (zero-filled) and then writing through a pointer is much cheaper
    /// than an `Array.append` per field, which checks the array's capacity and uniqueness for
    /// every field of every record a bulk commit frames.
    private var storage: [UInt8]
    /// The number of bytes written.
    package private(set) var count = 0

    package init(capacity: Int = 0) {
        storage = [UInt8](repeating: 0, count: capacity)
    }

    /// A writer whose bytes written are `bytes`.
    package init(adopting bytes: [UInt8]) {
        storage = bytes
        count = bytes.count
    }

    /// The bytes written so far.
    package var bytes: [UInt8] {
        count == storage.count ? storage : Array(storage[..<count])
    }

    /// Calls `body` with the bytes written so far, without copying them.
    package func withUnsafeBytes<Result>(
        _ body: (UnsafeRawBufferPointer) throws -> Result
    ) rethrows -> Result {
        try storage.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
    }

    /// The bytes written, without copying them: the writer is left empty.
    package mutating func takeBytes() -> [UInt8] {
        storage.removeSubrange(count...)
        count = 0
        return storage
    }

    /// Forgets the bytes written, keeping the room for new ones.
    package mutating func removeAll() {
        count = 0
    }

    /// Makes room for `capacity` bytes in all without touching the memory yet.
    package mutating func reserveCapacity(_ capacity: Int) {
        storage.reserveCapacity(capacity)
    }

    /// Makes room for `extra` more bytes.
    ///
    /// The zeroed room grows by at most 1 MiB beyond the need at a time, so memory reserved
    /// with ``reserveCapacity(_:)`` is touched only as it is written.
    @inline(__always)
    private mutating func reserve(_ extra: Int) {
        if _slowPath(count + extra > storage.count) {
            let room = max(extra, min(storage.count, 1 << 20), 64)
            storage.append(contentsOf: repeatElement(0, count: room))
        }
    }

    package mutating func append(_ value: UInt8) {
        reserve(1)
        storage[count] = value
        count += 1
    }

    package mutating func append(_ value: UInt16) { appendLittleEndian(value) }

    package mutating func append(_ value: UInt32) { appendLittleEndian(value) }

    package mutating func append(_ value: UInt64) { appendLittleEndian(value) }

    @inline(__always)
    private mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        reserve(MemoryLayout<T>.size)
        let offset = count
        storage.withUnsafeMutableBytes {
            $0.storeBytes(of: value.littleEndian, toByteOffset: offset, as: T.self)
        }
        count += MemoryLayout<T>.size
    }

    package mutating func append(_ value: Int64) { append(UInt64(bitPattern: value)) }

    package mutating func append(_ value: Double) { append(value.bitPattern) }

    package mutating func append<S: Sequence>(contentsOf sequence: S) where S.Element == UInt8 {
        let copied: Void? = sequence.withContiguousStorageIfAvailable { source in
            append(count: source.count) { target in
                target.copyMemory(from: UnsafeRawBufferPointer(source))
            }
        }
        if copied == nil {
            for byte in sequence { append(byte) }
        }
    }

    /// Appends `count` bytes that `body` fills in (they start zeroed), in one step.
    ///
    /// For records written field by field, one append of the whole record is much cheaper
    /// than an `Array.append` per field.
    package mutating func append<Result>(
        count: Int,
        _ body: (UnsafeMutableRawBufferPointer) -> Result
    ) -> Result {
        reserve(count)
        let start = self.count
        self.count += count
        return storage.withUnsafeMutableBytes {
            body(UnsafeMutableRawBufferPointer(rebasing: $0[start..<start + count]))
        }
    }

    /// Stores `value` as a varint at `offset` in `buffer`; returns the offset after it.
    ///
    /// The caller has made room for ``varintLength(_:)`` bytes.
    package static func storeVarint(
        _ value: UInt64,
        at offset: Int,
        in buffer: UnsafeMutableRawBufferPointer
    ) -> Int {
        var value = value
        var offset = offset
        while value >= 0x80 {
            buffer[offset] = UInt8(truncatingIfNeeded: value) | 0x80
            value >>= 7
            offset += 1
        }
        buffer[offset] = UInt8(value)
        return offset + 1
    }

    /// Appends `value` as an unsigned LEB128 varint: 7 bits per byte, low group first, the high
    /// bit set on every byte but the last.
    package mutating func appendVarint(_ value: UInt64) {
        append(count: Self.varintLength(value)) { _ = Self.storeVarint(value, at: 0, in: $0) }
    }

    /// The number of bytes ``appendVarint(_:)`` writes for `value`.
    package static func varintLength(_ value: UInt64) -> Int {
        // Safe: a UInt64 has at most 64 significant bits, so this is 1 to 10.
        max(1, (64 - value.leadingZeroBitCount + 6) / 7)
    }

    /// Overwrites four bytes at `offset` with `value`, little-endian.
    package mutating func patch(_ value: UInt32, at offset: Int) {
        precondition(offset >= 0 && offset + 4 <= count, "patch outside the written bytes")
        storage.withUnsafeMutableBytes {
            $0.storeBytes(of: value.littleEndian, toByteOffset: offset, as: UInt32.self)
        }
    }
}

/// Reads little-endian fields from a byte buffer, never past its end.
///
/// Every read checks the bytes remaining and throws `ByteReader.Underflow` instead of trapping,
/// so data from disk can never crash the reader.
package struct ByteReader {
    /// Thrown when a read needs more bytes than remain.
    package struct Underflow: Error {
        /// The position (relative to the buffer's start) of the read that failed.
        package var position: Int
    }

    package let buffer: UnsafeRawBufferPointer
    package private(set) var position: Int

    package init(_ buffer: UnsafeRawBufferPointer, position: Int = 0) {
        self.buffer = buffer
        self.position = position
    }

    package var remaining: Int { buffer.count - position }

    package var isAtEnd: Bool { position >= buffer.count }

    @inline(__always)
    private mutating func take(_ count: Int) throws(Underflow) -> Int {
        guard count >= 0, count <= remaining else { throw Underflow(position: position) }
        let start = position
        position += count
        return start
    }

    package mutating func readUInt8() throws(Underflow) -> UInt8 {
        buffer[try take(1)]
    }

    package mutating func readUInt16() throws(Underflow) -> UInt16 {
        UInt16(littleEndianBytesOf: buffer, at: try take(2))
    }

    package mutating func readUInt32() throws(Underflow) -> UInt32 {
        UInt32(littleEndianBytesOf: buffer, at: try take(4))
    }

    package mutating func readUInt64() throws(Underflow) -> UInt64 {
        UInt64(littleEndianBytesOf: buffer, at: try take(8))
    }

    package mutating func readInt64() throws(Underflow) -> Int64 {
        Int64(bitPattern: try readUInt64())
    }

    package mutating func readDouble() throws(Underflow) -> Double {
        Double(bitPattern: try readUInt64())
    }

    package mutating func readBytes(_ count: Int) throws(Underflow) -> UnsafeRawBufferPointer {
        let start = try take(count)
        return UnsafeRawBufferPointer(rebasing: buffer[start..<(start + count)])
    }

    package mutating func skip(_ count: Int) throws(Underflow) {
        _ = try take(count)
    }
}

/// The outcome of decoding a varint from a buffer that may end early.
package enum VarintDecoding {
    /// The value and the number of bytes it took.
    case value(UInt64, length: Int)
    /// The buffer ends inside the varint.
    case incomplete
    /// More than `maximumLength` bytes, or a value that overflows 64 bits.
    case malformed
}

/// Decodes an unsigned LEB128 varint at `offset` in `buffer`, reading at most `maximumLength`
/// bytes (10 for 64 bits, 5 for 32) and never past the buffer's end.
@inline(__always)
package func decodeVarint(
    _ buffer: UnsafeRawBufferPointer,
    at offset: Int,
    maximumLength: Int = 10
) -> VarintDecoding {
    var value: UInt64 = 0
    var shift: UInt64 = 0
    var position = offset
    while position < buffer.count {
        let byte = buffer[position]
        let group = UInt64(byte & 0x7F)
        // The tenth byte may only carry the 64th bit.
        if shift == 63 && group > 1 { return .malformed }
        value |= group << shift
        position += 1
        if byte & 0x80 == 0 { return .value(value, length: position - offset) }
        shift += 7
        if position - offset >= maximumLength { return .malformed }
    }
    return .incomplete
}

extension FixedWidthInteger {
    /// Decodes a little-endian integer from `buffer` at `offset`; the caller has checked bounds.
    @inline(__always)
    package init(littleEndianBytesOf buffer: UnsafeRawBufferPointer, at offset: Int) {
        var value = Self.zero
        withUnsafeMutableBytes(of: &value) { target in
            target.copyMemory(
                from: UnsafeRawBufferPointer(
                    rebasing: buffer[offset..<(offset + Self.bitWidth / 8)]
                )
            )
        }
        self = Self(littleEndian: value)
    }
}
