import Foundation

/// A typed value in a store's metadata dictionary.
///
/// The metadata dictionary is the equivalent of Core Data's persistent-store metadata: a small
/// dictionary of typed values kept in the store file and readable without loading any objects
/// (see `LogStore.readMetadata(path:)`).
///
/// ```swift
/// var metadata = store.metadata
/// metadata["author"] = .string("Ada")
/// metadata["gridSize"] = .integer(640)
/// ```
public indirect enum MetadataValue: Sendable, Hashable {
    /// A UTF-8 string.
    case string(String)
    /// A signed 64-bit integer.
    case integer(Int64)
    /// A 64-bit IEEE 754 floating-point number.
    case double(Double)
    /// A Boolean.
    case bool(Bool)
    /// A point in time, stored as seconds since 1970-01-01 00:00:00 UTC.
    case date(Date)
    /// Binary data.
    case data(Data)
    /// An ordered list of values.
    case array([MetadataValue])
    /// A nested dictionary.
    case dictionary([String: MetadataValue])
}

/// A store's metadata dictionary.
public typealias Metadata = [String: MetadataValue]

extension MetadataValue: CustomStringConvertible {
    /// A human-readable rendering: strings as they are, numbers in decimal, dates in ISO 8601,
    /// data as its byte count.
    public var description: String {
        switch self {
        case .string(let value): value
        case .integer(let value): String(value)
        case .double(let value): String(value)
        case .bool(let value): String(value)
        case .date(let value): value.formatted(.iso8601)
        case .data(let value): "<\(value.count) bytes>"
        case .array(let values): "[" + values.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(let values):
            "{"
                + values.keys.sorted().map { "\($0): \(values[$0]!.description)" }.joined(
                    separator: ", "
                )
                + "}"
        }
    }
}

extension MetadataValue {
    /// The string, if this is a string value.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The integer, if this is an integer value.
    public var integerValue: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// The number as a double, if this is a double or an integer value.
    public var doubleValue: Double? {
        switch self {
        case .double(let value): value
        case .integer(let value): Double(value)
        default: nil
        }
    }

    /// The Boolean, if this is a Boolean value.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }
}
