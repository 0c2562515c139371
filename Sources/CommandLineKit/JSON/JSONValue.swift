/// A JSON value whose objects keep their keys in the order given, so that output is
/// deterministic.
///
/// Commands build their `--json` output from these and render it with
/// ``rendered(pretty:escaping:)``, on one line (NDJSON) or indented by two spaces.
///
/// ```swift
/// let value = JSONValue.object([("name", .string("spots")), ("steps", .number(300))])
/// value.rendered()  // {"name":"spots","steps":300}
/// ```
public enum JSONValue: Sendable, Equatable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A signed integer.
    case integer(Int64)
    /// An unsigned integer, for values above `Int64.max`.
    case unsigned(UInt64)
    /// A floating-point number: always written with a fraction or an exponent, and as the
    /// strings `"NaN"`, `"Infinity"` and `"-Infinity"` when not finite (JSON has no such numbers).
    case double(Double)
    /// A string, escaped as JSON requires.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object, its members in the order given.
    case object([(String, JSONValue)])
    /// Text that is already valid JSON (a number in a form of its own, a stored encoding),
    /// written as is.
    case raw(String)

    /// Whether both values render as the same text.
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        lhs.rendered() == rhs.rendered()
    }

    /// An integer count or size.
    public static func number(_ value: Int) -> JSONValue { .integer(Int64(value)) }

    /// An optional value, `null` when absent.
    public static func optional(_ value: JSONValue?) -> JSONValue { value ?? .null }
}
