import CLibPQ

/// The rows of a result in PostgreSQL's binary format, read in place while the result lives:
/// the borrowed bytes of each value, never copied into strings.
///
/// Each type has its own binary form: integers and floating-point numbers big-endian, text and
/// `bytea` as their bytes, `uuid` as its 16 bytes.
package struct BinaryRows: ~Copyable {
    private let result: OpaquePointer
    /// The number of rows.
    package let count: Int
    /// The number of columns of each row.
    package let columnCount: Int

    init(_ result: OpaquePointer) {
        self.result = result
        count = Int(PQntuples(result))
        columnCount = Int(PQnfields(result))
    }

    /// The bytes of the value at `row` and `column`; nil for SQL `NULL`.
    package func value(_ row: Int, _ column: Int) -> UnsafeRawBufferPointer? {
        self.row(row).value(column)
    }

    /// Row `index`, valid while the result lives.
    package func row(_ index: Int) -> Row { Row(result: result, row: Int32(index)) }

    /// One row of a result.
    package struct Row: RowValues {
        fileprivate let result: OpaquePointer
        fileprivate let row: Int32

        package func value(_ column: Int) -> UnsafeRawBufferPointer? {
            let column = Int32(column)
            guard PQgetisnull(result, row, column) == 0, let base = PQgetvalue(result, row, column)
            else { return nil }
            return UnsafeRawBufferPointer(
                start: UnsafeRawPointer(base),
                count: Int(PQgetlength(result, row, column))
            )
        }
    }

    /// The value at `row` and `column` of a `bigint` column; nil for `NULL` or another width.
    package func int64(_ row: Int, _ column: Int) -> Int64? { self.row(row).int64(column) }

    /// The value at `row` and `column` of an `integer` column; nil for `NULL` or another width.
    package func int32(_ row: Int, _ column: Int) -> Int32? { self.row(row).int32(column) }
}

/// The values of one row in PostgreSQL's binary format, however they arrived.
package protocol RowValues {
    /// The bytes of the value of `column`; nil for SQL `NULL`.
    func value(_ column: Int) -> UnsafeRawBufferPointer?
}

extension RowValues {
    /// The value of a `bigint` column; nil for `NULL` or another width.
    package func int64(_ column: Int) -> Int64? {
        guard let bytes = value(column), bytes.count == 8 else { return nil }
        return Int64(bigEndian: bytes.loadUnaligned(as: Int64.self))
    }

    /// The value of an `integer` column; nil for `NULL` or another width.
    package func int32(_ column: Int) -> Int32? {
        guard let bytes = value(column), bytes.count == 4 else { return nil }
        return Int32(bigEndian: bytes.loadUnaligned(as: Int32.self))
    }
}
