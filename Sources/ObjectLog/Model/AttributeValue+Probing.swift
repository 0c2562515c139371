import Foundation

extension AttributeValue {
    /// Distinct values of the type, as payload encodings, for checking that a key path reads
    /// and writes an attribute unchanged (see `PropertyAccessor.forwards(_:on:)`).
    ///
    /// They are chosen to differ under the usual transformations a computed property might
    /// apply (case, whitespace, sign, rounding, normalisation), and are made by decoding
    /// crafted payloads so that every ``AttributeType`` has some. Empty for a type whose
    /// crafted payloads do not decode.
    static var probePayloads: [[UInt8]] {
        var wrapped: [[UInt8]]
        switch attributeType {
        case .bool: wrapped = [[0], [1]]
        case .int8: wrapped = [[0x85], [0x07]]
        case .uint8: wrapped = [[0xF0], [0x03]]
        // Zigzag varints of -3 and 103.
        case .int16, .int32, .int64: wrapped = [[0x05], [0xCE, 0x01]]
        // Varints of 3 and 200.
        case .uint16, .uint32, .uint64: wrapped = [[0x03], [0xC8, 0x01]]
        case .float:
            wrapped = [Float(-2.5), Float(0.001)].map { littleEndianBytes($0.bitPattern) }
        case .double, .date:
            wrapped = [Double(-2.5), Double(123_456.125)].map { littleEndianBytes($0.bitPattern) }
        case .string, .url:
            let texts =
                attributeType == .url
                ? ["https://example.com/A%20b?c=D", "file:///tmp/x"]
                : [" aE\u{301}z\tQ ", "Zy9"]
            wrapped = texts.map { lengthPrefixed(Array($0.utf8)) }
        case .data: wrapped = [lengthPrefixed([0, 0xFF, 0x41]), lengthPrefixed([])]
        case .uuid:
            wrapped = [
                Array(0..<16).map { UInt8($0 * 17) },
                Array(0..<16).map { UInt8(255 - $0) },
            ]
        case .codable: wrapped = []
        }
        let payloads = isOptionalType ? [[0]] + wrapped.map { [1] + $0 } : wrapped
        // Keep only payloads that decode to a value that encodes back to the same bytes.
        return payloads.filter { payload in
            guard
                let value = payload.withUnsafeBytes({ buffer -> Self? in
                    var reader = PayloadReader(buffer)
                    return try? Self.decode(from: &reader)
                })
            else { return false }
            var writer = PayloadWriter()
            value.encode(to: &writer)
            return writer.bytes == payload
        }
    }

    /// The value a probe payload decodes to.
    static func probeValue(_ payload: [UInt8]) -> Self? {
        payload.withUnsafeBytes { buffer in
            var reader = PayloadReader(buffer)
            return try? Self.decode(from: &reader)
        }
    }

    /// The payload encoding of the value.
    var payloadBytes: [UInt8] {
        var writer = PayloadWriter()
        encode(to: &writer)
        return writer.bytes
    }
}

private func littleEndianBytes<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
    withUnsafeBytes(of: value.littleEndian) { Array($0) }
}

private func lengthPrefixed(_ bytes: [UInt8]) -> [UInt8] {
    var writer = PayloadWriter()
    writer.write(varint: UInt64(bytes.count))
    writer.write(raw: bytes)
    return writer.bytes
}
