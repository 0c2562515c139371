/// The bytes of a binary `COPY … FROM STDIN` as its rows are made: field counts, lengths and
/// values in network (big-endian) order, as PostgreSQL's binary copy format has them.
///
/// A bulk insert writes a few fields of a few bytes for every row, millions of times. An
/// `Array.append(contentsOf:)` per field checks the array and copies through a generic path
/// each time; here the room is grown in large zeroed steps and each field is stored through a
/// pointer.
package struct CopyRowBuffer {
    /// The bytes written, followed by zeroed spare room.
    private var storage: [UInt8]
    /// The number of bytes written.
    package private(set) var count = 0

    package init(capacity: Int = 0) {
        storage = [UInt8](repeating: 0, count: capacity)
    }

    /// Calls `body` with the bytes written so far, without copying them.
    package func withUnsafeBytes<Result>(
        _ body: (UnsafeRawBufferPointer) throws -> Result
    ) rethrows -> Result {
        try storage.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
    }

    /// Forgets the bytes written, keeping the room for new ones.
    package mutating func removeAll() {
        count = 0
    }

    /// Makes room for `extra` more bytes, growing by at least a quarter of a megabyte so that a
    /// copy's buffer grows a few times and then stays.
    @inline(__always)
    private mutating func reserve(_ extra: Int) {
        if _slowPath(count + extra > storage.count) {
            storage.append(contentsOf: repeatElement(0, count: max(extra, 1 << 18)))
        }
    }

    /// Appends `value` in network byte order.
    @inline(__always)
    package mutating func append<Value: FixedWidthInteger>(bigEndian value: Value) {
        let size = MemoryLayout<Value>.size
        reserve(size)
        let offset = count
        storage.withUnsafeMutableBytes {
            $0.storeBytes(of: value.bigEndian, toByteOffset: offset, as: Value.self)
        }
        count += size
    }

    /// Appends one byte.
    @inline(__always)
    package mutating func append(byte: UInt8) {
        reserve(1)
        storage[count] = byte
        count += 1
    }

    /// Appends `bytes` as they are.
    package mutating func append(bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        reserve(bytes.count)
        let offset = count
        storage.withUnsafeMutableBytes {
            UnsafeMutableRawBufferPointer(rebasing: $0[offset..<offset + bytes.count])
                .copyMemory(from: bytes)
        }
        count += bytes.count
    }

    /// Appends the bytes of a contiguous collection (an array, `Data`) as they are.
    package mutating func append(contentsOf bytes: some Collection<UInt8>) {
        let copied: Void? = bytes.withContiguousStorageIfAvailable {
            append(bytes: UnsafeRawBufferPointer($0))
        }
        if copied == nil {
            for byte in bytes { append(byte: byte) }
        }
    }
}
