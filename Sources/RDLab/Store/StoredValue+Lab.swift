import CommandLineKit
import Foundation
import ObjectLog

/// How the lab reads the values its store's history records (``HistoryChange/oldValues`` and
/// ``HistoryChange/newValues``) as its model's Swift types, and shows them.
extension StoredValue {
    /// The value of a `Float` attribute.
    var floatValue: Float? {
        switch self {
        case .float(let value): value
        case .double(let value): Float(value)
        default: nil
        }
    }

    /// The value of an integer attribute.
    var intValue: Int? {
        switch self {
        case .int(let value): Int(exactly: value)
        case .uint(let value): Int(exactly: value)
        default: nil
        }
    }

    /// The value of a `String` attribute.
    var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The value of a `Bool` attribute.
    var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The value of a `Date` attribute.
    var dateValue: Date? {
        if case .date(let value) = self { return value }
        return nil
    }

    /// The value of a `[String]` attribute (``Configuration/tags``), stored as its JSON text.
    var stringsValue: [String]? {
        guard case .json(let text) = self else { return nil }
        return try? JSONDecoder().decode([String].self, from: Data(text.utf8))
    }

    /// The destination's key of a to-one relationship.
    var destinationKey: ObjectKey? {
        if case .toOne(let key) = self { return key }
        return nil
    }

    /// The value as `rdlab history` shows it: tags as `[a, b]`, text quoted on one line (long
    /// notes shortened), data by its size.
    var labText: String {
        switch self {
        case .string(let text):
            let escaped =
                text
                .replacingOccurrences(of: "\\", with: "\\\\")
                .replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\n", with: "\\n")
                .replacingOccurrences(of: "\t", with: "\\t")
            let limit = 40
            return "\""
                + (escaped.count > limit ? escaped.prefix(limit - 1) + "…" : escaped) + "\""
        case .json:
            if let strings = stringsValue { return "[" + strings.joined(separator: ", ") + "]" }
            return description
        case .date(let date):
            return LabFormat.date(date)
        case .data(let data):
            return "<\(data.count) bytes>"
        case .externalData(_, let byteCount):
            return "<\(byteCount) bytes>"
        default:
            return description
        }
    }

    /// The value in `rdlab history --json`: numbers, strings, tags as an array of strings, data
    /// as its size in bytes.
    var labJSON: JSONValue {
        switch self {
        case .null: .null
        case .bool(let value): .bool(value)
        case .int(let value): .integer(value)
        case .uint(let value): .unsigned(value)
        case .float(let value): .float(value)
        case .double(let value): value.isFinite ? .double(value) : .null
        case .string(let value): .string(value)
        case .date(let value): .date(value)
        case .data(let value): .number(value.count)
        case .externalData(_, let byteCount): .number(byteCount)
        case .uuid(let value): .string(value.uuidString)
        case .url(let value): .string(value)
        case .json:
            stringsValue.map { .array($0.map { .string($0) }) } ?? .string(description)
        case .toOne(let key): key.map { .unsigned($0) } ?? .null
        case .toMany(let keys): .array(keys.map { .unsigned($0) })
        }
    }
}
