import Foundation
import TestSupport
import Testing

@testable import ObjectLog

@Suite("A compiled skip moves past the bytes ValueShape.skip does")
struct CompiledSkipTests {
    /// A property of the given kind, from its schema's JSON form.
    func property(
        kind: String,
        type: AttributeType?,
        optional: Bool,
        external: Bool,
        toMany: Bool
    ) throws -> ModelSchema.Property {
        let type = type.map { "\"type\": \"\($0.rawValue)\"," } ?? ""
        let json = """
            {"name": "p", "kind": "\(kind)", \(type) "isOptional": \(optional),
             "isUnique": false, "isExternal": \(external), "isToMany": \(toMany),
             "isOrdered": false, "minimumCount": 0, "maximumCount": 0}
            """
        return try JSONDecoder().decode(ModelSchema.Property.self, from: Data(json.utf8))
    }

    /// Where a skip ends, or the error it throws, as text.
    func outcome(_ bytes: [UInt8], _ skip: (inout PayloadReader) throws -> Void) -> String {
        bytes.withUnsafeBytes { buffer in
            var reader = PayloadReader(buffer)
            do {
                try skip(&reader)
                return "at \(reader.offset)"
            } catch {
                return "\(error)"
            }
        }
    }

    @Test("every shape, over random bytes (valid, truncated and malformed values)")
    func sameAsValueShape() throws {
        var shapes: [ValueShape] = []
        for type in AttributeType.allCases {
            for optional in [false, true] {
                for external in [false, true] {
                    shapes.append(
                        ValueShape(
                            try property(
                                kind: "attribute",
                                type: type,
                                optional: optional,
                                external: external,
                                toMany: false
                            )
                        )
                    )
                }
            }
        }
        for toMany in [false, true] {
            shapes.append(
                ValueShape(
                    try property(
                        kind: "relationship",
                        type: nil,
                        optional: true,
                        external: false,
                        toMany: toMany
                    )
                )
            )
        }
        var random = SeededGenerator(seed: 0x5C1F)
        var compared = 0
        var answered = 0
        for shape in shapes {
            let compiled = CompiledSkip(shape)
            for _ in 0..<400 {
                let length = Int.random(in: 0...40, using: &random)
                var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
                // Presence, mode and length bytes that often make sense.
                if !bytes.isEmpty, Bool.random(using: &random) {
                    bytes[0] = UInt8.random(in: 0...2, using: &random)
                }
                if bytes.count > 1, Bool.random(using: &random) {
                    bytes[1] = UInt8.random(in: 0...20, using: &random)
                }
                let expected = outcome(bytes) { try shape.skip(&$0) }
                let found = outcome(bytes) { try compiled.skip(&$0) }
                #expect(found == expected, "\(shape), \(bytes)")
                // Straight from the bytes: the same end, or no answer (never a wrong one).
                let direct = bytes.withUnsafeBytes { buffer -> String in
                    var offset = 0
                    guard let base = buffer.baseAddress,
                        compiled.skip(base, buffer.count, &offset)
                    else { return "none" }
                    return "at \(offset)"
                }
                if direct != "none" {
                    #expect(direct == expected, "\(shape), \(bytes)")
                    answered += 1
                } else {
                    #expect(
                        !compiled.isPlain || !expected.hasPrefix("at") || bytes.count > 8,
                        "no answer for a value it can read: \(shape), \(bytes)"
                    )
                }
                compared += 1
            }
        }
        #expect(compared == shapes.count * 400)
        #expect(answered > compared / 4)
    }
}
