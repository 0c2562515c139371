import Foundation

/// A JSON value written with keys in a fixed order and numbers as given, so that `Float`
/// parameters print as their shortest exact form (`0.049023`, not `0.04902300238609314`).
enum JSONValue {
    case string(String)
    /// A number already rendered as JSON.
    case number(String)
    case bool(Bool)
    case null
    case array([JSONValue])
    /// An object whose keys keep their order.
    case object([(String, JSONValue)])

    /// A number from an integer.
    static func integer(_ value: Int) -> JSONValue { .number(String(value)) }

    /// A number from a float, or `null` when it is not finite (JSON has no NaN).
    static func float(_ value: Float) -> JSONValue {
        value.isFinite ? .number(value.description) : .null
    }

    /// A date as an ISO 8601 string.
    static func date(_ value: Date) -> JSONValue { .string(LabFormat.date(value)) }

    /// The value as indented JSON text.
    func text(indent: String = "") -> String {
        let inner = indent + "  "
        switch self {
        case .string(let string): return Self.quoted(string)
        case .number(let number): return number
        case .bool(let bool): return bool ? "true" : "false"
        case .null: return "null"
        case .array(let items):
            guard !items.isEmpty else { return "[]" }
            let lines = items.map { inner + $0.text(indent: inner) }
            return "[\n" + lines.joined(separator: ",\n") + "\n" + indent + "]"
        case .object(let members):
            guard !members.isEmpty else { return "{}" }
            let lines = members.map { inner + Self.quoted($0.0) + ": " + $0.1.text(indent: inner) }
            return "{\n" + lines.joined(separator: ",\n") + "\n" + indent + "}"
        }
    }

    private static func quoted(_ string: String) -> String {
        var result = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20:
                result += String(format: "\\u%04x", scalar.value)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
