import Foundation
import ObjectLogStore

/// A rule an attribute's value must satisfy for a save to write it: a range, a length, a
/// pattern or a closure.
///
/// Give it to ``Attribute`` with the `validation:` argument:
///
/// ```swift
/// final class Player: ManagedObject {
///     @Attribute(validation: .range(0...100)) var score = 0
///     @Attribute(.unique, validation: .length(1...40)) var name = ""
///     @Attribute(validation: .pattern("[a-z0-9._%+-]+@[a-z0-9.-]+")) var email = ""
///     @Attribute(validation: .all(.range(0...), .rule("even") { $0 % 2 == 0 }))
///     var pairs = 0
/// }
/// ```
///
/// A save checks the rules of every inserted and updated object's attributes, after the
/// objects' ``ManagedObject/willSave()`` and with their ``ManagedObject/validateForInsert()``
/// and ``ManagedObject/validateForUpdate()``; when any fails, it throws one
/// ``ObjectLogError/Code/validation`` error listing every failure (in
/// ``ObjectLogError/errors``), each naming the object, the attribute, the value and the rule,
/// and saves nothing. An optional attribute that is `nil` satisfies every rule but ``rule(_:_:)``,
/// which sees the optional.
///
/// Rules are read once, when the model is built (like the attribute's other options), and are
/// not part of the store's schema: changing them needs no migration, and stored values that
/// break a new rule are only refused when their object is saved again.
public struct ValidationRule<Value>: Sendable {
    /// The checks, all of which must pass.
    let checks: [AttributeCheck]

    init(_ checks: [AttributeCheck]) { self.checks = checks }

    /// A rule that holds when all of `rules` hold; each one that fails is reported.
    /// - Parameter rules: The rules to combine.
    /// - Returns: The combined rule.
    public static func all(_ rules: ValidationRule<Value>...) -> ValidationRule<Value> {
        ValidationRule(rules.flatMap(\.checks))
    }

    /// A rule given by a closure: the value is valid when `isValid` returns true.
    ///
    /// ```swift
    /// @Attribute(validation: .rule("even") { $0 % 2 == 0 }) var pairs = 0
    /// ```
    ///
    /// For an optional attribute the closure sees the optional, `nil` included.
    /// - Parameters:
    ///   - name: What the rule demands, for the error message ("even").
    ///   - isValid: Decides a value; it runs on the saving context's isolation domain.
    /// - Returns: The rule.
    public static func rule(
        _ name: String,
        _ isValid: @escaping @Sendable (Value) -> Bool
    ) -> ValidationRule<Value> {
        ValidationRule([
            AttributeCheck(name: "the rule '\(name)'") { value in
                guard let value = value as? Value else { return true }
                return isValid(value)
            }
        ])
    }
}

extension ValidationRule where Value: Comparable & Sendable {
    /// A rule that the value lies in `bounds`: `.range(0...100)`, `.range(0.0..<1)`,
    /// `.range(1...)`.
    /// - Parameter bounds: The values allowed.
    /// - Returns: The rule.
    public static func range(
        _ bounds: some RangeExpression<Value> & Sendable
    ) -> ValidationRule<Value> {
        ValidationRule([
            AttributeCheck(name: "the range \(describeRange(bounds))") { value in
                guard let value = value as? Value else { return true }
                return bounds.contains(value)
            }
        ])
    }
}

extension ValidationRule {
    /// A rule that an optional value, when it is not `nil`, lies in `bounds`.
    /// - Parameter bounds: The values allowed.
    /// - Returns: The rule.
    public static func range<Wrapped: Comparable & Sendable>(
        _ bounds: some RangeExpression<Wrapped> & Sendable
    ) -> ValidationRule<Value> where Value == Wrapped? {
        ValidationRule([
            AttributeCheck(name: "the range \(describeRange(bounds))") { value in
                guard let value = value as? Wrapped else { return true }
                return bounds.contains(value)
            }
        ])
    }

    /// A rule that the value's length lies in `bounds`: characters for a `String`, bytes for
    /// `Data` (`nil` passes).
    ///
    /// ```swift
    /// @Attribute(validation: .length(1...40)) var name = ""
    /// @Attribute(validation: .length(...65_536)) var thumbnail: Data? = nil
    /// ```
    /// - Parameter bounds: The lengths allowed.
    /// - Returns: The rule.
    public static func length(
        _ bounds: some RangeExpression<Int> & Sendable
    ) -> ValidationRule<Value> where Value: MeasurableAttributeValue {
        ValidationRule([
            AttributeCheck(name: "the length \(describeRange(bounds))") { value in
                // An existential cast: the closure must not capture `Value`, which need not be
                // `Sendable`.
                guard let length = (value as? any MeasurableAttributeValue)?.validationLength
                else { return true }
                return bounds.contains(length)
            }
        ])
    }

    /// A rule that the whole string matches a regular expression.
    ///
    /// The pattern is ICU syntax, as `NSRegularExpression` reads it, and must match the whole
    /// value, as Core Data's `MATCHES` does (no `^…$` needed). A pattern that does not compile
    /// makes the model refuse to build, with ``ObjectLogError/Code/invalidModel``.
    /// - Parameter pattern: The regular expression.
    /// - Returns: The rule.
    public static func pattern(_ pattern: String) -> ValidationRule<Value> where Value == String {
        ValidationRule([AttributeCheck.pattern(pattern)])
    }

    /// A rule that an optional string, when it is not `nil`, matches a regular expression
    /// (see ``pattern(_:)``).
    /// - Parameter pattern: The regular expression.
    /// - Returns: The rule.
    public static func pattern(_ pattern: String) -> ValidationRule<Value> where Value == String? {
        ValidationRule([AttributeCheck.pattern(pattern)])
    }
}

/// The attribute types whose values ``ValidationRule/length(_:)`` measures: `String`, `Data`
/// and their optionals.
///
/// Not meant for conformance outside ObjectLog.
public protocol MeasurableAttributeValue {
    /// The length a length rule checks: characters of a string, bytes of data; nil for `nil`.
    var validationLength: Int? { get }
}

extension String: MeasurableAttributeValue {
    /// The number of characters.
    public var validationLength: Int? { count }
}

extension Data: MeasurableAttributeValue {
    /// The number of bytes.
    public var validationLength: Int? { count }
}

extension Optional: MeasurableAttributeValue where Wrapped: MeasurableAttributeValue {
    /// The wrapped value's length; nil for `nil`.
    public var validationLength: Int? { self?.validationLength }
}

/// One check of a ``ValidationRule``, with the value's type erased so that a model can keep
/// the checks of attributes of every type together.
struct AttributeCheck: Sendable {
    /// What the rule demands, as the error message says it ("the range 0...100").
    let name: String
    /// Why the model cannot use the rule (a pattern that does not compile), if it cannot.
    var modelError: String?
    /// Whether a value (the attribute's value, as `Any`) passes.
    let passes: @Sendable (Any) -> Bool

    init(name: String, modelError: String? = nil, passes: @escaping @Sendable (Any) -> Bool) {
        self.name = name
        self.modelError = modelError
        self.passes = passes
    }

    /// The check of ``ValidationRule/pattern(_:)``, for `String` and `String?` values.
    static func pattern(_ pattern: String) -> AttributeCheck {
        // Anchored so that the whole value must match, as Core Data's `MATCHES`.
        let regex = (try? NSRegularExpression(pattern: "^(?:\(pattern))$")).map(
            UncheckedSendable.init
        )
        return AttributeCheck(
            name: "the pattern '\(pattern)'",
            modelError: regex == nil
                ? "the pattern '\(pattern)' is not a valid regular expression" : nil
        ) { value in
            // A `String?` holding nil is not a `String`: it passes.
            guard let text = value as? String, let regex else { return true }
            // Safe to share: an `NSRegularExpression` is immutable, and documented as safe to
            // use from several threads.
            let range = NSRange(text.startIndex..<text.endIndex, in: text)
            return regex.value.firstMatch(in: text, range: range) != nil
        }
    }
}

/// A range as Swift code writes it ("1...", "..<10"): the partial ranges describe themselves
/// as structures, which reads badly in an error message.
func describeRange<Bound>(_ range: some RangeExpression<Bound>) -> String {
    switch range {
    case let range as PartialRangeFrom<Bound>: "\(range.lowerBound)..."
    case let range as PartialRangeThrough<Bound>: "...\(range.upperBound)"
    case let range as PartialRangeUpTo<Bound>: "..<\(range.upperBound)"
    default: "\(range)"
    }
}
