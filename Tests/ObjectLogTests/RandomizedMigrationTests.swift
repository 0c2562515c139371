import Foundation
import ObjectLogStore
import StoreTestSupport
import TestSupport
import Testing

@testable import ObjectLog

/// Random model edits on random objects: each old payload, translated by the inferred mapping,
/// must decode to what a plain model of the edit says (values kept, converted or defaulted).
///
/// Swift classes cannot be made at run time, so this works on stored schemas and payloads, the
/// layer every migration goes through; the seed is printed with each failure.
@Suite("Randomized migration: random schema edits against a plain model")
struct RandomizedMigrationTests {
    static let types: [AttributeType] = [
        .bool, .int8, .int16, .int32, .int64, .uint8, .uint16, .uint32, .uint64, .float, .double,
        .string, .date, .data, .uuid,
    ]

    /// A random value of `type` (nil only when `optional`).
    static func value(
        _ type: AttributeType,
        optional: Bool,
        using generator: inout SeededGenerator
    ) -> StoredValue {
        if optional, Int.random(in: 0..<4, using: &generator) == 0 { return .null }
        switch type {
        case .bool: return .bool(Bool.random(using: &generator))
        case .int8: return .int(Int64(Int8.random(in: .min ... .max, using: &generator)))
        case .int16: return .int(Int64(Int16.random(in: .min ... .max, using: &generator)))
        case .int32: return .int(Int64(Int32.random(in: .min ... .max, using: &generator)))
        case .int64: return .int(Int64.random(in: .min ... .max, using: &generator))
        case .uint8: return .uint(UInt64(UInt8.random(in: 0 ... .max, using: &generator)))
        case .uint16: return .uint(UInt64(UInt16.random(in: 0 ... .max, using: &generator)))
        case .uint32: return .uint(UInt64(UInt32.random(in: 0 ... .max, using: &generator)))
        case .uint64: return .uint(UInt64.random(in: 0 ... .max, using: &generator))
        case .float: return .float(Float(Int.random(in: -1000...1000, using: &generator)) / 8)
        case .double: return .double(Double(Int.random(in: -1000...1000, using: &generator)) / 16)
        case .string:
            return .string(String(repeating: "é", count: Int.random(in: 0...5, using: &generator)))
        case .date:
            return .date(
                Date(
                    timeIntervalSinceReferenceDate: Double(
                        Int.random(in: 0...1_000_000, using: &generator)
                    )
                )
            )
        case .data:
            return .data(Data((0..<Int.random(in: 0...6, using: &generator)).map { UInt8($0) }))
        case .uuid: return .uuid(UUID())
        default: return .null
        }
    }

    /// The encoding of `value` for `property` (FORMAT.md section 10).
    static func encode(
        _ value: StoredValue,
        for property: ModelSchema.Property,
        into writer: inout PayloadWriter
    ) {
        if property.isOptional {
            if case .null = value {
                writer.write(byte: 0)
                return
            }
            writer.write(byte: 1)
        }
        if property.isExternal { writer.write(byte: 0) }
        switch (property.type, value) {
        case (.bool, .bool(let flag)): writer.write(byte: flag ? 1 : 0)
        case (.int8, .int(let number)): writer.write(byte: UInt8(bitPattern: Int8(number)))
        case (.int16, .int(let number)), (.int32, .int(let number)), (.int64, .int(let number)):
            writer.write(zigzag: number)
        case (.uint8, .uint(let number)): writer.write(byte: UInt8(number))
        case (.uint16, .uint(let number)), (.uint32, .uint(let number)),
            (.uint64, .uint(let number)):
            writer.write(varint: number)
        case (.float, .float(let number)): writer.write(fixed32: number.bitPattern)
        case (.double, .double(let number)): writer.write(fixed64: number.bitPattern)
        case (.string, .string(let text)): writer.write(string: text)
        case (.date, .date(let date)):
            writer.write(fixed64: date.timeIntervalSinceReferenceDate.bitPattern)
        case (.data, .data(let data)): writer.write(data: data)
        case (.uuid, .uuid(let uuid)):
            writer.write(raw: withUnsafeBytes(of: uuid.uuid) { Array($0) })
        default: Issue.record("cannot encode \(value) as \(property.summary)")
        }
    }

    static func encoded(_ value: StoredValue, for property: ModelSchema.Property) -> [UInt8] {
        var writer = PayloadWriter()
        encode(value, for: property, into: &writer)
        return writer.bytes
    }

    /// `value` in the type `to` (a widening), as the decoder reports it.
    static func widened(_ value: StoredValue, to type: AttributeType) -> StoredValue {
        switch (value, type) {
        case (.uint(let number), .int16), (.uint(let number), .int32), (.uint(let number), .int64):
            return .int(Int64(number))
        case (.float(let number), .double): return .double(Double(number))
        default: return value
        }
    }

    @Test("inferred mappings agree with a plain model", arguments: 1...40)
    func randomEdits(seed: UInt64) throws {
        var generator = SeededGenerator(seed: seed)
        // The old entity and its objects.
        var old: [ModelSchema.Property] = []
        for index in 0..<Int.random(in: 1...8, using: &generator) {
            let type = Self.types.randomElement(using: &generator)!
            old.append(
                .attribute(
                    "p\(index)",
                    type: type,
                    isOptional: Bool.random(using: &generator),
                    isExternal: type == .data && Bool.random(using: &generator)
                )
            )
        }
        let objects = (0..<5).map { _ in
            old.map { Self.value($0.type!, optional: $0.isOptional, using: &generator) }
        }
        // Random edits, with the plain model of what each new property holds.
        enum Source {
            case old(Int)
            case fresh(StoredValue)
        }
        var new: [(ModelSchema.Property, Source)] = []
        for (index, property) in old.enumerated() {
            switch Int.random(in: 0..<6, using: &generator) {
            case 0: continue  // removed
            case 1:  // renamed
                var renamed = property
                renamed.name = property.name + "r"
                renamed.originalName = property.name
                new.append((renamed, .old(index)))
            case 2:  // widened, where it can be
                var widened = property
                if let targets = lightweightWidenings[property.type!] {
                    widened.type = targets.randomElement(using: &generator)!
                }
                new.append((widened, .old(index)))
            case 3:  // optionality flipped; a required one gets a default for the nils
                var flipped = property
                flipped.isOptional.toggle()
                if !flipped.isOptional {
                    let fallback = Self.value(property.type!, optional: false, using: &generator)
                    flipped.defaultValue = ModelSchema.Property.hex(
                        Self.encoded(fallback, for: flipped)
                    )
                }
                new.append((flipped, .old(index)))
            case 4 where property.type == .data:  // external storage toggled
                var toggled = property
                toggled.isExternal.toggle()
                new.append((toggled, .old(index)))
            default:
                new.append((property, .old(index)))
            }
            if Int.random(in: 0..<4, using: &generator) == 0 {  // an attribute added
                let type = Self.types.randomElement(using: &generator)!
                let fallback = Self.value(type, optional: false, using: &generator)
                var added = ModelSchema.Property.attribute("n\(index)", type: type)
                added.defaultValue = ModelSchema.Property.hex(Self.encoded(fallback, for: added))
                new.append((added, .fresh(fallback)))
            }
        }
        let oldEntity = ModelSchema.Entity(
            name: "E",
            tag: 1,
            properties: old,
            uniquenessConstraints: []
        )
        let newEntity = ModelSchema.Entity(
            name: "E",
            tag: 1,
            properties: new.map(\.0),
            uniquenessConstraints: []
        )
        let mapping = SchemaMapping(
            from: ModelSchema(entities: [oldEntity]),
            to: ModelSchema(entities: [newEntity])
        )
        #expect(mapping.problems.isEmpty, "seed \(seed): \(mapping.problems)")
        let transcoder = try #require(mapping.transcoder(forOldTag: 1), "seed \(seed)")
        for values in objects {
            var writer = PayloadWriter()
            writer.write(varint: UInt64(old.count))
            for (property, value) in zip(old, values) {
                Self.encode(value, for: property, into: &writer)
            }
            let translated = try writer.bytes.withUnsafeBytes { buffer in
                try transcoder.transcode(buffer) { _ in Data() }
            }
            let decoded = try translated.withUnsafeBytes { buffer in
                try StoreInspector.decode(payload: buffer, entity: newEntity)
            }
            for ((property, source), (name, value)) in zip(new, decoded) {
                let expected: StoredValue
                switch source {
                case .fresh(let fallback): expected = fallback
                case .old(let index):
                    let before = values[index]
                    if case .null = before, !property.isOptional {
                        let bytes = try #require(property.defaultBytes)
                        expected = try bytes.withUnsafeBytes { buffer in
                            var reader = PayloadReader(buffer)
                            return try StoredValue.decode(property, from: &reader)
                        }
                    } else {
                        expected = Self.widened(before, to: property.type!)
                    }
                }
                #expect(name == property.name)
                #expect(value == expected, "seed \(seed): \(property.name) \(property.summary)")
            }
        }
    }
}
