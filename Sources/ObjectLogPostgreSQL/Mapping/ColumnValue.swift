import Foundation
import ObjectLog

/// An attribute or to-one value as the text of its column's parameter, and back.
///
/// Every value travels as a statement parameter in PostgreSQL's text form, chosen so that it
/// comes back exactly: floating-point values in their shortest form that reads back to the same
/// bits (PostgreSQL writes them so too), dates as their seconds since 2001-01-01, data as
/// `bytea` hex, Codable values as their JSON text unchanged.
enum ColumnValue {
    /// The parameter text of `value`, a value of an attribute of `type` (nil for a
    /// relationship); nil for SQL `NULL`.
    ///
    /// - Throws: ``PostgresError/Code/invalidParameter`` for a value its column cannot hold
    ///   (a to-many value, external data, whose bytes live apart from the payload).
    static func parameter(
        _ value: StoredValue,
        type: AttributeType?
    ) throws(PostgresError) -> String? {
        switch value {
        case .null, .toOne(nil): return nil
        case .bool(let flag): return flag ? "t" : "f"
        case .int(let integer): return String(integer)
        case .uint(let integer): return String(integer)
        case .float(let number): return text(of: number)
        case .double(let number): return text(of: number)
        case .string(let text), .url(let text), .json(let text): return text
        case .date(let date): return text(of: date.timeIntervalSinceReferenceDate)
        case .data(let bytes):
            return "\\x" + bytes.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
        case .uuid(let uuid): return uuid.uuidString.lowercased()
        case .toOne(let key?): return String(key)
        case .externalData, .toMany:
            throw PostgresError(.invalidParameter, "\(value) has no column of its own")
        }
    }

    /// The value a column's text holds, for an attribute of `type` (nil for a to-one
    /// relationship); nil when the text is not one.
    static func value(_ text: String?, type: AttributeType?) -> StoredValue? {
        guard let text else { return type == nil ? .toOne(nil) : .null }
        guard let type else { return ObjectKey(text).map { .toOne($0) } }
        switch type {
        case .bool: return text == "t" ? .bool(true) : text == "f" ? .bool(false) : nil
        case .int8, .int16, .int32, .int64: return Int64(text).map { .int($0) }
        case .uint8, .uint16, .uint32, .uint64: return UInt64(text).map { .uint($0) }
        case .float: return number(text).map { .float(Float($0)) }
        case .double: return number(text).map { .double($0) }
        case .date: return number(text).map { .date(Date(timeIntervalSinceReferenceDate: $0)) }
        case .string: return .string(text)
        case .url: return .url(text)
        case .codable: return .json(text)
        case .uuid: return UUID(uuidString: text).map { .uuid($0) }
        case .data: return bytes(text).map { .data($0) }
        }
    }

    /// PostgreSQL's text of a floating-point value: its shortest exact digits, and its names
    /// for the infinities and NaN.
    private static func text(
        of number: some BinaryFloatingPoint & LosslessStringConvertible
    ) -> String {
        if number.isNaN { return "NaN" }
        if number.isInfinite { return number < 0 ? "-Infinity" : "Infinity" }
        return "\(number)"
    }

    private static func number(_ text: String) -> Double? {
        switch text {
        case "NaN": .nan
        case "Infinity": .infinity
        case "-Infinity": -.infinity
        default: Double(text)
        }
    }

    /// The bytes of `bytea` hex text (`\x0aff…`).
    private static func bytes(_ text: String) -> Data? {
        guard text.hasPrefix("\\x") else { return nil }
        let digits = Array(text.utf8.dropFirst(2))
        guard digits.count.isMultiple(of: 2) else { return nil }
        var bytes = Data(capacity: digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = hexDigit(digits[index]), let low = hexDigit(digits[index + 1]) else {
                return nil
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func hexDigit(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension String {
    /// The string with zeros before it up to `width` characters.
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
