import Foundation
import ObjectLogStore

/// What decides how one property's value is encoded in a payload (FORMAT.md section 10): its
/// kind, type, optionality, external storage and cardinality.
///
/// Migration reads old payloads through their version's shapes (to find each value's bytes)
/// and converts values whose shape changed between versions in ways that can be inferred.
struct ValueShape: Sendable, Equatable {
    var isRelationship: Bool
    var type: AttributeType?
    var isOptional: Bool
    var isExternal: Bool
    var isToMany: Bool

    init(_ property: ModelSchema.Property) {
        isRelationship = property.kind == .relationship
        type = property.type
        // Relationships have no presence byte, whatever the schema says of their optionality.
        isOptional = property.kind == .attribute && property.isOptional
        isExternal = property.kind == .attribute && property.isExternal
        isToMany = property.kind == .relationship && property.isToMany
    }

    /// Whether an optional value has a presence byte (every type but `codable`, whose nil is
    /// the JSON text `null`).
    private var hasPresenceByte: Bool { isOptional && type != .codable }

    /// Moves past one value of this shape.
    func skip(_ reader: inout PayloadReader) throws(PayloadError) {
        if isRelationship {
            if isToMany {
                let count = try reader.readVarint()
                guard count <= UInt64(reader.buffer.count - reader.offset) else {
                    throw PayloadError.truncated(offset: reader.offset)
                }
                for _ in 0..<count { _ = try reader.readVarint() }
            } else {
                _ = try reader.readVarint()
            }
            return
        }
        if hasPresenceByte {
            switch try reader.readByte() {
            case 0: return
            case 1: break
            default: throw PayloadError.malformed(offset: reader.offset - 1, "presence byte")
            }
        }
        if isExternal {
            switch try reader.readByte() {
            case 0: _ = try reader.readLengthPrefixed()
            case 1:
                _ = try reader.readRaw(count: LogFormat.blobIDLength)
                _ = try reader.readVarint()
            default: throw PayloadError.malformed(offset: reader.offset - 1, "storage mode byte")
            }
            return
        }
        try Self.skipBare(type ?? .codable, &reader)
    }

    /// Moves past a value of `type` without presence or mode byte.
    static func skipBare(_ type: AttributeType, _ reader: inout PayloadReader) throws(PayloadError)
    {
        switch type {
        case .bool, .int8, .uint8: _ = try reader.readByte()
        case .int16, .int32, .int64, .uint16, .uint32, .uint64: _ = try reader.readVarint()
        case .float: _ = try reader.readFixed32()
        case .double, .date: _ = try reader.readFixed64()
        case .uuid: _ = try reader.readRaw(count: 16)
        case .string, .data, .url, .codable: _ = try reader.readLengthPrefixed()
        }
    }

    /// Whether every value of `from` is a value of `to` (numeric widening).
    static func widens(_ from: AttributeType, _ to: AttributeType) -> Bool {
        if from == .float, to == .double { return true }
        guard let source = integerWidth(from), let target = integerWidth(to) else { return false }
        switch (source.signed, target.signed) {
        case (true, true), (false, false): return target.bits > source.bits
        case (false, true): return target.bits > source.bits
        case (true, false): return false
        }
    }

    private static func integerWidth(_ type: AttributeType) -> (bits: Int, signed: Bool)? {
        switch type {
        case .int8: (8, true)
        case .int16: (16, true)
        case .int32: (32, true)
        case .int64: (64, true)
        case .uint8: (8, false)
        case .uint16: (16, false)
        case .uint32: (32, false)
        case .uint64: (64, false)
        default: nil
        }
    }

    /// Writes the old value `bytes` (of shape `from`) in shape `to`.
    ///
    /// - Parameters:
    ///   - bytes: The old value's encoding.
    ///   - from: The old shape.
    ///   - to: The new shape.
    ///   - defaultValue: The new property's encoded default, for a nil that may no longer be.
    ///   - blob: Reads an external blob, for data that moves inline.
    ///   - writer: Receives the new encoding.
    /// - Throws: ``PayloadError`` for a malformed value, or what `blob` throws.
    static func convert(
        _ bytes: UnsafeRawBufferPointer,
        from: ValueShape,
        to: ValueShape,
        defaultValue: [UInt8],
        blob: (BlobID) throws -> Data,
        into writer: inout PayloadWriter
    ) throws {
        var reader = PayloadReader(bytes)
        if from.isRelationship {
            // To-one becomes to-many (the other conversions are copies or refused).
            let key = try reader.readVarint()
            if from.isToMany == to.isToMany {
                writer.write(raw: bytes)
            } else if key == 0 {
                writer.write(varint: 0)
            } else {
                writer.write(varint: 1)
                writer.write(varint: key)
            }
            return
        }
        // nil: kept where the new shape allows it, else the new default.
        if from.hasPresenceByte, try reader.readByte() == 0 {
            if to.isOptional {
                writer.write(raw: to.type == .codable ? [4] + Array("null".utf8) : [0])
            } else {
                writer.write(raw: defaultValue)
            }
            return
        }
        if from.type == .codable, from.isOptional, !to.isOptional {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[reader.offset...])
            var probe = PayloadReader(rest)
            if try probe.readLengthPrefixed().elementsEqual("null".utf8) {
                writer.write(raw: defaultValue)
                return
            }
        }
        if to.hasPresenceByte { writer.write(byte: 1) }
        // External storage: data may come inline, or as a blob reference.
        if from.isExternal {
            switch try reader.readByte() {
            case 0:
                let data = try reader.readLengthPrefixed()
                if to.isExternal { writer.write(byte: 0) }
                writer.write(varint: UInt64(data.count))
                writer.write(raw: data)
            default:
                let id = Array(try reader.readRaw(count: LogFormat.blobIDLength))
                let length = try reader.readVarint()
                if to.isExternal {
                    writer.write(byte: 1)
                    writer.write(raw: id)
                    writer.write(varint: length)
                } else {
                    guard let blobID = BlobID(bytes: id) else {
                        throw PayloadError.malformed(offset: reader.offset, "blob ID")
                    }
                    writer.write(data: try blob(blobID))
                }
            }
            return
        }
        if to.isExternal { writer.write(byte: 0) }
        guard let source = from.type, let target = to.type, source != target else {
            writer.write(raw: UnsafeRawBufferPointer(rebasing: bytes[reader.offset...]))
            return
        }
        switch source {
        case .float:
            writer.write(fixed64: Double(Float(bitPattern: try reader.readFixed32())).bitPattern)
            return
        case .int8:
            let value = Int64(Int8(bitPattern: try reader.readByte()))
            try writeInteger(signed: value, as: target, into: &writer)
        case .uint8:
            try writeInteger(unsigned: UInt64(try reader.readByte()), as: target, into: &writer)
        case .int16, .int32, .int64:
            try writeInteger(signed: try reader.readZigzag(), as: target, into: &writer)
        case .uint16, .uint32, .uint64:
            try writeInteger(unsigned: try reader.readVarint(), as: target, into: &writer)
        default:
            throw PayloadError.malformed(offset: 0, "no conversion \(source) -> \(target)")
        }
    }

    private static func writeInteger(
        signed value: Int64,
        as target: AttributeType,
        into writer: inout PayloadWriter
    ) throws {
        switch target {
        case .int8: writer.write(byte: UInt8(bitPattern: Int8(truncatingIfNeeded: value)))
        case .int16, .int32, .int64: writer.write(zigzag: value)
        default: throw PayloadError.malformed(offset: 0, "no conversion to \(target)")
        }
    }

    private static func writeInteger(
        unsigned value: UInt64,
        as target: AttributeType,
        into writer: inout PayloadWriter
    ) throws {
        switch target {
        case .int16, .int32, .int64: writer.write(zigzag: Int64(bitPattern: value))
        case .uint8: writer.write(byte: UInt8(truncatingIfNeeded: value))
        case .uint16, .uint32, .uint64: writer.write(varint: value)
        default: throw PayloadError.malformed(offset: 0, "no conversion to \(target)")
        }
    }
}

/// ``ValueShape/skip(_:)`` decided once for a shape: how to move past one of its values, for
/// loops that skip the same properties in record after record (a batch update, a rewriting
/// stage), where deciding it from the shape again for every value cost more than the skip.
///
/// Moves past exactly the bytes ``ValueShape/skip(_:)`` does and throws what it throws.
struct CompiledSkip: Sendable {
    private enum Kind: UInt8, Sendable {
        case byte, varint, fixed32, fixed64, uuid, lengthPrefixed
        /// Through ``ValueShape/skip(_:)``: relationships and external-storage values.
        case shape
    }

    private let kind: Kind
    /// Whether the value starts with a presence byte (as ``ValueShape/skip(_:)`` reads one).
    private let hasPresenceByte: Bool
    private let shape: ValueShape

    init(_ shape: ValueShape) {
        self.shape = shape
        guard !shape.isRelationship, !shape.isExternal else {
            kind = .shape
            hasPresenceByte = false
            return
        }
        let type = shape.type ?? .codable
        hasPresenceByte = shape.isOptional && type != .codable
        switch type {
        case .bool, .int8, .uint8: kind = .byte
        case .int16, .int32, .int64, .uint16, .uint32, .uint64: kind = .varint
        case .float: kind = .fixed32
        case .double, .date: kind = .fixed64
        case .uuid: kind = .uuid
        case .string, .data, .url, .codable: kind = .lengthPrefixed
        }
    }

    /// Moves past one value.
    @inline(__always)
    func skip(_ reader: inout PayloadReader) throws(PayloadError) {
        if hasPresenceByte {
            switch try reader.readByte() {
            case 0: return
            case 1: break
            default: throw PayloadError.malformed(offset: reader.offset - 1, "presence byte")
            }
        }
        switch kind {
        case .byte: _ = try reader.readByte()
        case .varint: try reader.skipVarint()
        case .fixed32: _ = try reader.readFixed32()
        case .fixed64: _ = try reader.readFixed64()
        case .uuid: _ = try reader.readRaw(count: 16)
        case .lengthPrefixed: _ = try reader.readLengthPrefixed()
        case .shape: try shape.skip(&reader)
        }
    }

    /// Whether ``skip(_:_:_:)`` can move past this shape's values: every attribute but an
    /// external-storage one.
    var isPlain: Bool { kind != .shape }

    /// Moves past one value at `offset` of the `end` bytes at `base`, as ``skip(_:)`` does, but
    /// straight from the bytes; false where it cannot tell at once, and the caller then skips
    /// the whole value through ``skip(_:)`` from its start (`offset` is left anywhere).
    ///
    /// It cannot tell where ``skip(_:)`` would throw (a value cut short, a presence byte other
    /// than 0 or 1, a varint too long), nor for a shape that is not plain.
    @inline(__always)
    func skip(_ base: UnsafeRawPointer, _ end: Int, _ offset: inout Int) -> Bool {
        if hasPresenceByte {
            guard offset < end else { return false }
            let presence = base.load(fromByteOffset: offset, as: UInt8.self)
            offset += 1
            if presence == 0 { return true }
            guard presence == 1 else { return false }
        }
        switch kind {
        case .byte:
            guard offset < end else { return false }
            offset += 1
        case .varint:
            guard PayloadReader.skipVarint(base, end, &offset) else { return false }
        case .fixed32:
            guard end - offset >= 4 else { return false }
            offset += 4
        case .fixed64:
            guard end - offset >= 8 else { return false }
            offset += 8
        case .uuid:
            guard end - offset >= 16 else { return false }
            offset += 16
        case .lengthPrefixed:
            guard let length = PayloadReader.varint(base, end, &offset),
                length <= UInt64(end - offset)
            else { return false }
            offset += Int(length)
        case .shape:
            return false
        }
        return true
    }
}
