import CommandLineKit
import Foundation

extension JSONValue {
    /// A number from a float in its shortest exact form (`0.049023`, not the
    /// `0.04902300238609314` of its `Double`), or `null` when it is not finite.
    static func float(_ value: Float) -> JSONValue {
        value.isFinite ? .raw(value.description) : .null
    }

    /// A date as an ISO 8601 string (``LabFormat/date(_:)``).
    static func date(_ value: Date) -> JSONValue { .string(LabFormat.date(value)) }

    /// The value as `rdlab` prints it: indented by two spaces, with backspace and form feed in
    /// strings written as `\u0008` and `\u000c`.
    var labText: String {
        rendered(pretty: true, escaping: .shortFormsForLineBreaksAndTabs)
    }
}
