import CommandLineKit
import Foundation
import ObjectLogStore

/// How metadata values appear in the tool's text and JSON output.
enum MetadataRendering {
    /// The type's name as `meta set --type` spells it (`string`, `int`, `double`, `bool`) or, for
    /// types the tool cannot set, the store's name for it (`date`, `data`, `array`, `dictionary`).
    static func typeName(_ value: MetadataValue) -> String {
        switch value {
        case .string: "string"
        case .integer: "int"
        case .double: "double"
        case .bool: "bool"
        case .date: "date"
        case .data: "data"
        case .array: "array"
        case .dictionary: "dictionary"
        }
    }

    /// The value as JSON: dates as ISO 8601 strings, data as base64 strings, dictionaries with
    /// their keys sorted.
    static func json(_ value: MetadataValue) -> JSONValue {
        switch value {
        case .string(let string): .string(string)
        case .integer(let integer): .integer(integer)
        case .double(let double): .double(double)
        case .bool(let bool): .bool(bool)
        case .date(let date): .string(Formatting.date(date))
        case .data(let data): .string(data.base64EncodedString())
        case .array(let values): .array(values.map(json))
        case .dictionary(let entries): json(entries)
        }
    }

    /// A whole dictionary as a JSON object, keys sorted.
    static func json(_ metadata: Metadata) -> JSONValue {
        .object(metadata.keys.sorted().map { ($0, json(metadata[$0]!)) })
    }

    /// The value in full, as `meta get` prints it: scalars plainly, data as base64, arrays and
    /// dictionaries as compact JSON.
    static func fullText(_ value: MetadataValue) -> String {
        switch value {
        case .string(let string): string
        case .integer(let integer): String(integer)
        case .double(let double): String(double)
        case .bool(let bool): String(bool)
        case .date(let date): Formatting.date(date)
        case .data(let data): data.base64EncodedString()
        case .array, .dictionary: json(value).rendered()
        }
    }

    /// The value for a listing: like ``fullText(_:)`` but on one line, with data as its byte
    /// count and long values cut short, so one key takes one line.
    static func summary(_ value: MetadataValue, limit: Int = 120) -> String {
        if case .data(let data) = value { return "<\(data.count) bytes>" }
        let text = Formatting.singleLine(fullText(value))
        guard text.count > limit else { return text }
        return String(text.prefix(limit)) + "… (\(text.count) characters; use 'meta get')"
    }
}
