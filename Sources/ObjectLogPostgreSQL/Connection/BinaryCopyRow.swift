/// One row of a binary `COPY … TO STDOUT`, read in place while its buffer lives.
///
/// Binary COPY lays a row out as a 16-bit field count, then each field as a 32-bit length (-1
/// for `NULL`) and its bytes, all big-endian; each field's bytes are its type's binary form, as
/// in ``BinaryRows``.
package struct BinaryCopyRow: RowValues {
    private let bytes: UnsafeRawBufferPointer
    /// Where each field's bytes start in ``bytes``, and how many there are (-1 for `NULL`).
    private let fields: [(start: Int, count: Int)]

    /// The number of columns of the row.
    package var columnCount: Int { fields.count }

    package func value(_ column: Int) -> UnsafeRawBufferPointer? {
        let field = fields[column]
        guard field.count >= 0 else { return nil }
        return UnsafeRawBufferPointer(rebasing: bytes[field.start..<(field.start + field.count)])
    }

    /// Reads the rows of a copy's messages in turn: the server sends one row in each, the
    /// first after the copy's header, and the trailer in a message of its own.
    package struct Parser {
        private static let signature: [UInt8] = Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00]
        private var sawHeader = false
        /// Whether the trailer, which ends the rows, has been read.
        private(set) var ended = false
        private var fields: [(start: Int, count: Int)] = []

        package init() {}

        /// The row in `message`; nil for the trailer.
        mutating func row(
            in message: UnsafeRawBufferPointer
        ) throws(PostgresError) -> BinaryCopyRow? {
            var offset = 0
            func int16() throws(PostgresError) -> Int {
                guard offset + 2 <= message.count else {
                    throw Self.malformed("a row is cut short")
                }
                defer { offset += 2 }
                return Int(
                    Int16(bigEndian: message.loadUnaligned(fromByteOffset: offset, as: Int16.self))
                )
            }
            func int32() throws(PostgresError) -> Int {
                guard offset + 4 <= message.count else {
                    throw Self.malformed("a row is cut short")
                }
                defer { offset += 4 }
                return Int(
                    Int32(bigEndian: message.loadUnaligned(fromByteOffset: offset, as: Int32.self))
                )
            }
            guard !ended else { throw Self.malformed("data after the trailer") }
            if !sawHeader {
                guard message.count >= Self.signature.count,
                    message.prefix(Self.signature.count).elementsEqual(Self.signature)
                else { throw Self.malformed("no binary COPY header") }
                offset = Self.signature.count
                // Bit 16 says each row starts with an OID, which servers since 12 never send.
                guard try int32() & (1 << 16) == 0 else {
                    throw Self.malformed("rows with OIDs")
                }
                let extensionLength = try int32()
                guard extensionLength >= 0, offset + extensionLength <= message.count else {
                    throw Self.malformed("the header is cut short")
                }
                offset += extensionLength
                sawHeader = true
            }
            let count = try int16()
            if count == -1 {
                guard offset == message.count else {
                    throw Self.malformed("data after the trailer")
                }
                ended = true
                return nil
            }
            guard count >= 0 else { throw Self.malformed("a negative field count") }
            fields.removeAll(keepingCapacity: true)
            for _ in 0..<count {
                let length = try int32()
                guard length >= -1, offset + max(length, 0) <= message.count else {
                    throw Self.malformed("a field is cut short")
                }
                fields.append((offset, length))
                offset += max(length, 0)
            }
            guard offset == message.count else {
                throw Self.malformed("a message holds more than one row")
            }
            return BinaryCopyRow(bytes: message, fields: fields)
        }

        private static func malformed(_ what: String) -> PostgresError {
            PostgresError(.statementFailed, "the server's binary COPY rows are malformed: \(what)")
        }
    }
}
