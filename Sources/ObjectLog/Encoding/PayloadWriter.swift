import Foundation

/// Appends the bytes of an object payload: little-endian fixed-width numbers and LEB128 varints.
///
/// The engine uses one writer per save and reuses its buffer across objects, and the store's
/// transaction copies each payload into one packed buffer, so encoding an object allocates
/// nothing of its own. Custom ``AttributeValue`` conformances write their value with these
/// methods; see FORMAT.md (section 10) for the byte layout of every built-in type.
///
/// A writer is a value: copies share their buffer until one of them writes.
public struct PayloadWriter: Sendable {
    /// The writer's buffer.
    ///
    /// Its memory is written only while the writer holds the sole reference (copy on write),
    /// which is what makes sharing it between copies safe.
    @usableFromInline
    final class Storage: @unchecked Sendable {
        @usableFromInline let base: UnsafeMutablePointer<UInt8>
        @usableFromInline let capacity: Int

        @usableFromInline
        init(capacity: Int) {
            base = .allocate(capacity: capacity)
            self.capacity = capacity
        }

        deinit { base.deallocate() }
    }

    @usableFromInline var storage: Storage
    @usableFromInline var written: Int

    /// The number of bytes written.
    public var count: Int { written }

    /// Creates an empty writer.
    public init() {
        storage = Storage(capacity: 256)
        written = 0
    }

    /// The bytes written so far.
    public var bytes: [UInt8] {
        Array(UnsafeBufferPointer(start: storage.base, count: count))
    }

    /// Calls `body` with the bytes written so far, without copying them.
    public func withUnsafeBytes<Result>(
        _ body: (UnsafeRawBufferPointer) throws -> Result
    ) rethrows -> Result {
        try withExtendedLifetime(storage) {
            try body(UnsafeRawBufferPointer(start: storage.base, count: count))
        }
    }

    /// Room for `extra` more bytes at the end, owned by this writer alone.
    @inlinable
    @inline(__always)
    mutating func tail(_ extra: Int) -> UnsafeMutablePointer<UInt8> {
        if _slowPath(count + extra > storage.capacity || !isKnownUniquelyReferenced(&storage)) {
            reallocate(minimumCapacity: count + extra)
        }
        return storage.base + count
    }

    @usableFromInline
    mutating func reallocate(minimumCapacity: Int) {
        let new = Storage(capacity: Swift.max(minimumCapacity, storage.capacity * 2))
        new.base.update(from: storage.base, count: count)
        storage = new
    }

    /// Appends one byte.
    @inlinable
    public mutating func write(byte: UInt8) {
        tail(1).pointee = byte
        written += 1
    }

    /// Appends an unsigned integer as a LEB128 varint (7 bits a byte, low bits first).
    @inlinable
    public mutating func write(varint value: UInt64) {
        let start = tail(10)
        var rest = value
        var length = 0
        while rest >= 0x80 {
            start[length] = UInt8(truncatingIfNeeded: rest) | 0x80
            rest >>= 7
            length += 1
        }
        start[length] = UInt8(truncatingIfNeeded: rest)
        written += length + 1
    }

    /// Appends a signed integer as a zigzag-mapped LEB128 varint, so small negatives stay short.
    @inlinable
    public mutating func write(zigzag value: Int64) {
        write(varint: UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    /// Appends the 8 little-endian bytes of `value`.
    @inlinable
    public mutating func write(fixed64 value: UInt64) {
        UnsafeMutableRawPointer(tail(8)).storeBytes(of: value.littleEndian, as: UInt64.self)
        written += 8
    }

    /// Appends the 4 little-endian bytes of `value`.
    @inlinable
    public mutating func write(fixed32 value: UInt32) {
        UnsafeMutableRawPointer(tail(4)).storeBytes(of: value.littleEndian, as: UInt32.self)
        written += 4
    }

    /// Appends a varint length followed by the UTF-8 bytes of `string`.
    @inlinable
    public mutating func write(string: String) {
        var copy = string
        copy.withUTF8 { utf8 in
            write(varint: UInt64(utf8.count))
            write(bytes: UnsafeRawBufferPointer(utf8))
        }
    }

    /// Appends a varint length followed by `data`.
    @inlinable
    public mutating func write(data: Data) {
        write(varint: UInt64(data.count))
        data.withUnsafeBytes { write(bytes: $0) }
    }

    /// Appends raw bytes without a length.
    @inlinable
    public mutating func write<Bytes: Sequence>(raw: Bytes) where Bytes.Element == UInt8 {
        let handled: Void? = raw.withContiguousStorageIfAvailable {
            write(bytes: UnsafeRawBufferPointer($0))
        }
        guard handled == nil else { return }
        for byte in raw { write(byte: byte) }
    }

    /// Appends the bytes of a buffer.
    @inlinable
    package mutating func write(bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        tail(bytes.count).update(
            from: source.assumingMemoryBound(to: UInt8.self),
            count: bytes.count
        )
        written += bytes.count
    }

    /// Removes the bytes after the first `count`.
    mutating func truncate(to count: Int) {
        written = min(written, max(count, 0))
    }

    /// Removes every byte, keeping the capacity.
    @inlinable
    public mutating func removeAll() {
        written = 0
    }
}
