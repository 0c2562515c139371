/// Rows in the text format of `COPY … FROM STDIN`: values separated by tabs, a row ended by a
/// newline, `\N` for `NULL`, and a backslash before a backslash, tab, newline or carriage
/// return in a value (so that no value can end its field or row early).
enum CopyText {
    /// Appends one row of `values` (nil for `NULL`), each in its parameter's text form.
    ///
    /// - Throws: ``PostgresError/Code/invalidParameter`` for a value that holds a NUL
    ///   character, which PostgreSQL text cannot hold (as a statement's parameter is refused).
    static func append(_ values: [String?], to buffer: inout [UInt8]) throws(PostgresError) {
        for (index, value) in values.enumerated() where value?.utf8.contains(0) == true {
            throw PostgresError(
                .invalidParameter,
                "value \(index + 1) of a row holds a NUL character, which PostgreSQL text cannot "
                    + "hold"
            )
        }
        for (index, value) in values.enumerated() {
            if index > 0 { buffer.append(UInt8(ascii: "\t")) }
            guard let value else {
                buffer.append(UInt8(ascii: "\\"))
                buffer.append(UInt8(ascii: "N"))
                continue
            }
            for byte in value.utf8 {
                switch byte {
                case UInt8(ascii: "\\"): buffer += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
                case UInt8(ascii: "\t"): buffer += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
                case UInt8(ascii: "\n"): buffer += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
                case UInt8(ascii: "\r"): buffer += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
                default: buffer.append(byte)
                }
            }
        }
        buffer.append(UInt8(ascii: "\n"))
    }
}
