/// One value of a statement's parameter list: text in PostgreSQL's text form, or bytes in a
/// type's binary form (a `bytea`'s bytes, say), which travel without escaping.
package enum PostgresParameter: Sendable, Equatable {
    case text(String)
    case binary([UInt8])
}
