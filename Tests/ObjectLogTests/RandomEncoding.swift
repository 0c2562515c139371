import Foundation
import TestSupport

@testable import ObjectLog

/// Encodings of property values made at random, for tests that hold a path reading values
/// straight from their bytes to the `PayloadReader` path it stands in for.
enum RandomEncoding {
    /// A shape for every plain attribute type, required and optional.
    static func plainShapes() throws -> [ValueShape] {
        var shapes: [ValueShape] = []
        for type in AttributeType.allCases {
            for optional in [false, true] {
                let json = """
                    {"name": "p", "kind": "attribute", "type": "\(type.rawValue)",
                     "isOptional": \(optional), "isUnique": false, "isExternal": false,
                     "isToMany": false, "isOrdered": false, "minimumCount": 0, "maximumCount": 0}
                    """
                shapes.append(
                    ValueShape(
                        try JSONDecoder().decode(ModelSchema.Property.self, from: Data(json.utf8))
                    )
                )
            }
        }
        return shapes
    }

    /// A value of `shape`: valid bytes most of the time, sometimes a long varint (up to ten
    /// bytes) or a presence byte of 2.
    static func value(of shape: ValueShape, using random: inout SeededGenerator) -> [UInt8] {
        var bytes: [UInt8] = []
        if shape.isOptional, shape.type != .codable {
            let presence = UInt8.random(in: 0...9, using: &random)
            if presence == 0 { return [0] }
            bytes.append(presence == 9 ? 2 : 1)
        }
        switch shape.type ?? .codable {
        case .bool, .int8, .uint8: bytes.append(UInt8.random(in: 0...1, using: &random))
        case .float: bytes += [1, 2, 3, 4]
        case .double, .date: bytes += [1, 2, 3, 4, 5, 6, 7, 8]
        case .uuid: bytes += Array(repeating: 9, count: 16)
        case .string, .data, .url, .codable:
            let count = Int.random(in: 0...20, using: &random)
            bytes.append(UInt8(count))
            bytes += Array(repeating: 0x61, count: count)
        default:
            let length = Int.random(in: 1...10, using: &random)
            bytes += (0..<length).map { index in
                UInt8.random(in: 0...127, using: &random) | (index < length - 1 ? 0x80 : 0)
            }
        }
        return bytes
    }
}
