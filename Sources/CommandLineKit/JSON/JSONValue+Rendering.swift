extension JSONValue {
    /// How a string's control characters are escaped.
    ///
    /// Both forms are valid JSON and decode to the same string.
    public enum StringEscaping: Sendable {
        /// The short escapes JSON names for backspace, form feed, newline, carriage return and
        /// tab (`\b`, `\f`, `\n`, `\r`, `\t`); `\u00XX` for every other control character.
        case allShortForms
        /// Short escapes for newline, carriage return and tab only; `\u00XX` for every other
        /// control character, backspace and form feed included.
        case shortFormsForLineBreaksAndTabs
    }

    /// The JSON text: compact on one line, or indented by two spaces per level.
    ///
    /// ```swift
    /// JSONValue.array([.number(1), .string("a\tb")]).rendered()              // [1,"a\tb"]
    /// JSONValue.object([("k", .null)]).rendered(pretty: true)   // "{\n  \"k\": null\n}"
    /// ```
    ///
    /// - Parameters:
    ///   - pretty: Whether to break lines and indent; an empty array or object stays `[]`/`{}`.
    ///   - escaping: How strings' control characters are written.
    /// - Returns: The text, without a final newline.
    public func rendered(pretty: Bool = false, escaping: StringEscaping = .allShortForms) -> String
    {
        var writer = Writer(pretty: pretty, escaping: escaping)
        writer.write(self, indent: 0)
        return writer.text
    }
}

/// Appends a value's JSON text.
private struct Writer {
    let pretty: Bool
    let escaping: JSONValue.StringEscaping
    var text = ""

    mutating func write(_ value: JSONValue, indent: Int) {
        switch value {
        case .null: text += "null"
        case .bool(let value): text += value ? "true" : "false"
        case .integer(let value): text += String(value)
        case .unsigned(let value): text += String(value)
        case .double(let value): text += Self.render(value)
        case .string(let value): writeString(value)
        case .raw(let value): text += value
        case .array(let values):
            guard !values.isEmpty else {
                text += "[]"
                return
            }
            text += "["
            for (index, value) in values.enumerated() {
                if index > 0 { text += "," }
                newline(indent: indent + 1)
                write(value, indent: indent + 1)
            }
            newline(indent: indent)
            text += "]"
        case .object(let members):
            guard !members.isEmpty else {
                text += "{}"
                return
            }
            text += "{"
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { text += "," }
                newline(indent: indent + 1)
                writeString(key)
                text += pretty ? ": " : ":"
                write(value, indent: indent + 1)
            }
            newline(indent: indent)
            text += "}"
        }
    }

    private mutating func newline(indent: Int) {
        guard pretty else { return }
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

    private mutating func writeString(_ value: String) {
        text += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case "\u{08}" where escaping == .allShortForms: text += "\\b"
            case "\u{0C}" where escaping == .allShortForms: text += "\\f"
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
