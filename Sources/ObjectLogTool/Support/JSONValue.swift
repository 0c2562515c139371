/// A JSON value whose objects keep their keys in the order given, so output is deterministic.
///
/// The tool builds its `--json` output from these and renders them either on one line (for
/// NDJSON) or indented by two spaces.
enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case integer(Int64)
    case unsigned(UInt64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])
    /// Text that is already valid JSON (a `Codable` attribute's stored encoding), written as is.
    case raw(String)

    static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        lhs.rendered() == rhs.rendered()
    }

    /// An integer count or size.
    static func number(_ value: Int) -> JSONValue { .integer(Int64(value)) }

    /// An optional value, `null` when absent.
    static func optional(_ value: JSONValue?) -> JSONValue { value ?? .null }

    /// The JSON text: compact on one line, or indented by two spaces per level.
    func rendered(pretty: Bool = false) -> String {
        var text = ""
        write(into: &text, pretty: pretty, indent: 0)
        return text
    }

    private func write(into text: inout String, pretty: Bool, indent: Int) {
        switch self {
        case .null: text += "null"
        case .bool(let value): text += value ? "true" : "false"
        case .integer(let value): text += String(value)
        case .unsigned(let value): text += String(value)
        case .double(let value): text += Self.render(value)
        case .string(let value): Self.writeString(value, into: &text)
        case .raw(let value): text += value
        case .array(let values):
            guard !values.isEmpty else {
                text += "[]"
                return
            }
            text += "["
            for (index, value) in values.enumerated() {
                if index > 0 { text += "," }
                if pretty { Self.newline(&text, indent: indent + 1) }
                value.write(into: &text, pretty: pretty, indent: indent + 1)
            }
            if pretty { Self.newline(&text, indent: indent) }
            text += "]"
        case .object(let members):
            guard !members.isEmpty else {
                text += "{}"
                return
            }
            text += "{"
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { text += "," }
                if pretty { Self.newline(&text, indent: indent + 1) }
                Self.writeString(key, into: &text)
                text += pretty ? ": " : ":"
                value.write(into: &text, pretty: pretty, indent: indent + 1)
            }
            if pretty { Self.newline(&text, indent: indent) }
            text += "}"
        }
    }

    private static func newline(_ text: inout String, indent: Int) {
        text += "\n"
        text += String(repeating: "  ", count: indent)
    }

    /// A finite double in Swift's shortest round-tripping form, always with a fraction or an
    /// exponent so it reads back as a floating-point number; JSON has no infinities or NaN, so
    /// those become strings.
    private static func render(_ value: Double) -> String {
        guard value.isFinite else {
            return value.isNaN ? "\"NaN\"" : (value < 0 ? "\"-Infinity\"" : "\"Infinity\"")
        }
        let text = String(value)
        if text.contains(".") || text.contains("e") { return text }
        return text + ".0"
    }

    private static func writeString(_ value: String, into text: inout String) {
        text += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case "\u{08}": text += "\\b"
            case "\u{0C}": text += "\\f"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    text.unicodeScalars.append(scalar)
                }
            }
        }
        text += "\""
    }
}
