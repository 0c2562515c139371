import Foundation
import ObjectLogValues

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
