import Foundation

/// How the tool writes numbers, sizes and times in its text output.
enum Formatting {
    /// `12345 bytes (12.1 KiB)`; sizes below 1 KiB without the parenthesis.
    static func bytes(_ count: UInt64) -> String {
        let units = ["KiB", "MiB", "GiB", "TiB"]
        guard count >= 1024 else { return "\(count) bytes" }
        var value = Double(count) / 1024
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return "\(count) bytes (\(oneDecimal(value)) \(units[unit]))"
    }

    /// A share from 0 to 1 as a percentage with one decimal, `81.3%`.
    static func percentage(_ share: Double) -> String {
        oneDecimal(share * 100) + "%"
    }

    /// `value` rounded to one decimal place, without locale-dependent separators.
    static func oneDecimal(_ value: Double) -> String {
        let tenths = Int64((value * 10).rounded())
        let sign = tenths < 0 ? "-" : ""
        let magnitude = tenths.magnitude
        return "\(sign)\(magnitude / 10).\(magnitude % 10)"
    }

    /// A time in ISO 8601, UTC, with milliseconds: `2026-11-30T10:12:39.123Z`.
    static func date(_ date: Date) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date)
    }

    /// `text` padded with spaces on the left to `width` characters.
    static func leftPadded(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }

    /// `text` padded with spaces on the right to `width` characters.
    static func rightPadded(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    /// A report's field line: `  label:` padded to a column, then the value, as `compact` and
    /// `backup` print what they did.
    static func field(_ label: String, _ value: String) -> String {
        "  " + rightPadded(label + ":", 15) + value
    }

    /// `text` on one line: line breaks and tabs shown as `\n`, `\r` and `\t`, so a value cannot
    /// break the tool's line-oriented output.
    static func singleLine(_ text: String) -> String {
        guard text.contains(where: { $0 == "\n" || $0 == "\r" || $0 == "\t" }) else { return text }
        return
            text
            .replacingOccurrences(of: "\n", with: "\\n")
            .replacingOccurrences(of: "\r", with: "\\r")
            .replacingOccurrences(of: "\t", with: "\\t")
    }
}
