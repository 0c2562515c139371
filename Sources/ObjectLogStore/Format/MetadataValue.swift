import Foundation

/// A typed value in a store's metadata dictionary.
///
/// The metadata dictionary is the equivalent of Core Data's persistent-store metadata: a small
/// dictionary of typed values kept in the store file and readable without loading any objects
/// (see ``LogStore/readMetadata(path:)``).
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

// MARK: - Encoding

/// The byte encoding of metadata values (FORMAT.md, "Metadata values").
package enum MetadataCoding {
    package static let stringTag: UInt8 = 1
    package static let integerTag: UInt8 = 2
    package static let doubleTag: UInt8 = 3
    package static let boolTag: UInt8 = 4
    package static let dateTag: UInt8 = 5
    package static let dataTag: UInt8 = 6
    package static let arrayTag: UInt8 = 7
    package static let dictionaryTag: UInt8 = 8

    /// Nesting deeper than this is refused, so a crafted file cannot exhaust the stack.
    package static let maximumDepth = 64

    /// Thrown for bytes that are not a valid encoding.
    package struct DecodingError: Error {
        package var position: Int
        package var reason: String
    }

    /// Encodes a whole dictionary (tag 8 and its entries), keys in byte order.
    package static func encode(_ metadata: Metadata) -> [UInt8] {
        var writer = ByteWriter(capacity: 64)
        encode(.dictionary(metadata), into: &writer)
        return writer.bytes
    }

    package static func encode(_ value: MetadataValue, into writer: inout ByteWriter) {
        switch value {
        case .string(let string):
            writer.append(stringTag)
            appendString(string, into: &writer)
        case .integer(let integer):
            writer.append(integerTag)
            writer.append(integer)
        case .double(let double):
            writer.append(doubleTag)
            writer.append(double)
        case .bool(let bool):
            writer.append(boolTag)
            writer.append(bool ? UInt8(1) : UInt8(0))
        case .date(let date):
            writer.append(dateTag)
            writer.append(date.timeIntervalSince1970)
        case .data(let data):
            writer.append(dataTag)
            writer.append(UInt32(data.count))
            writer.append(contentsOf: data)
        case .array(let values):
            writer.append(arrayTag)
            writer.append(UInt32(values.count))
            for element in values { encode(element, into: &writer) }
        case .dictionary(let entries):
            writer.append(dictionaryTag)
            writer.append(UInt32(entries.count))
            // Sorted by UTF-8 bytes so the same dictionary always encodes to the same bytes.
            for key in entries.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                appendString(key, into: &writer)
                encode(entries[key]!, into: &writer)
            }
        }
    }

    private static func appendString(_ string: String, into writer: inout ByteWriter) {
        let utf8 = Array(string.utf8)
        writer.append(UInt32(utf8.count))
        writer.append(contentsOf: utf8)
    }

    /// Decodes a whole dictionary encoding that fills `bytes` exactly.
    package static func decodeDictionary(
        _ bytes: UnsafeRawBufferPointer
    ) throws(DecodingError) -> Metadata {
        var reader = ByteReader(bytes)
        let value = try decodeValue(&reader, depth: 0)
        guard case .dictionary(let metadata) = value else {
            throw DecodingError(position: 0, reason: "metadata is not a dictionary")
        }
        guard reader.isAtEnd else {
            throw DecodingError(
                position: reader.position,
                reason: "trailing bytes after the metadata dictionary"
            )
        }
        return metadata
    }

    /// Decodes a whole dictionary encoding that fills `bytes` exactly.
    package static func decodeDictionary(_ bytes: [UInt8]) throws(DecodingError) -> Metadata {
        do {
            return try bytes.withUnsafeBytes { buffer in try decodeDictionary(buffer) }
        } catch let error as DecodingError {
            throw error
        } catch {
            throw DecodingError(position: 0, reason: "\(error)")
        }
    }

    private static func decodeValue(
        _ reader: inout ByteReader,
        depth: Int
    ) throws(DecodingError) -> MetadataValue {
        guard depth < maximumDepth else {
            throw DecodingError(
                position: reader.position,
                reason: "values nested deeper than \(maximumDepth)"
            )
        }
        let start = reader.position
        do {
            let tag = try reader.readUInt8()
            switch tag {
            case stringTag:
                return .string(try readString(&reader))
            case integerTag:
                return .integer(try reader.readInt64())
            case doubleTag:
                return .double(try reader.readDouble())
            case boolTag:
                let byte = try reader.readUInt8()
                guard byte <= 1 else {
                    throw DecodingError(
                        position: start + 1,
                        reason: "Boolean byte \(byte) is neither 0 nor 1"
                    )
                }
                return .bool(byte == 1)
            case dateTag:
                return .date(Date(timeIntervalSince1970: try reader.readDouble()))
            case dataTag:
                let length = Int(try reader.readUInt32())
                return .data(Data(try reader.readBytes(length)))
            case arrayTag:
                let count = Int(try reader.readUInt32())
                // Every element takes at least one byte: a count beyond the bytes left is damage,
                // refused before any allocation.
                guard count <= reader.remaining else {
                    throw DecodingError(
                        position: start,
                        reason: "array count \(count) exceeds the bytes present"
                    )
                }
                var values: [MetadataValue] = []
                values.reserveCapacity(count)
                for _ in 0..<count { values.append(try decodeValue(&reader, depth: depth + 1)) }
                return .array(values)
            case dictionaryTag:
                let count = Int(try reader.readUInt32())
                guard count <= reader.remaining / 5 else {
                    throw DecodingError(
                        position: start,
                        reason: "dictionary count \(count) exceeds the bytes present"
                    )
                }
                var entries: [String: MetadataValue] = [:]
                entries.reserveCapacity(count)
                for _ in 0..<count {
                    let keyPosition = reader.position
                    let key = try readString(&reader)
                    guard entries[key] == nil else {
                        throw DecodingError(
                            position: keyPosition,
                            reason: "duplicate key \"\(key)\""
                        )
                    }
                    entries[key] = try decodeValue(&reader, depth: depth + 1)
                }
                return .dictionary(entries)
            default:
                throw DecodingError(position: start, reason: "unknown value tag \(tag)")
            }
        } catch let error as ByteReader.Underflow {
            throw DecodingError(
                position: error.position,
                reason: "value runs past the end of its record"
            )
        } catch let error as DecodingError {
            throw error
        } catch {
            throw DecodingError(position: start, reason: "\(error)")
        }
    }

    private static func readString(_ reader: inout ByteReader) throws -> String {
        let position = reader.position
        let length = Int(try reader.readUInt32())
        let bytes = try reader.readBytes(length)
        guard let string = String(validating: bytes, as: UTF8.self) else {
            throw DecodingError(position: position, reason: "string is not valid UTF-8")
        }
        return string
    }
}
