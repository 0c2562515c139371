extension Attribute {
    /// Declares an attribute stored natively whose values a save checks against a rule.
    ///
    /// ```swift
    /// @Attribute(validation: .range(0...100)) var score = 0
    /// @Attribute(.unique, validation: .length(1...40)) var name = ""
    /// ```
    ///
    /// The rule is an autoclosure, evaluated only while the model is built: making objects
    /// (a fetch of a million, say) does not build it again for each one. See
    /// ``ValidationRule`` for the rules and how failures are reported.
    /// - Parameters:
    ///   - wrappedValue: The default value.
    ///   - options: Uniqueness, external storage or transience.
    ///   - originalName: The attribute's name in an earlier model version, if it was renamed.
    ///   - validation: The rule the value must satisfy (combine several with
    ///     ``ValidationRule/all(_:)``).
    @inlinable
    public init(
        wrappedValue: Value,
        _ options: AttributeOptions = [],
        originalName: String? = nil,
        validation: @autoclosure () -> ValidationRule<Value>
    ) where Value: AttributeValue {
        self.value = wrappedValue
        if _slowPath(AttributeDiscovery.isActive) {
            AttributeDiscovery.record(options, originalName: originalName, rule: validation())
        }
    }

    /// Declares an attribute of any `Codable` type, stored as JSON, whose values a save checks
    /// against a rule, as the native form above.
    /// - Parameters:
    ///   - wrappedValue: The default value.
    ///   - options: Uniqueness or transience.
    ///   - originalName: The attribute's name in an earlier model version, if it was renamed.
    ///   - validation: The rule the value must satisfy.
    @inlinable
    public init(
        wrappedValue: Value,
        _ options: AttributeOptions = [],
        originalName: String? = nil,
        validation: @autoclosure () -> ValidationRule<Value>
    ) where Value: Codable {
        self.value = wrappedValue
        if _slowPath(AttributeDiscovery.isActive) {
            AttributeDiscovery.record(options, originalName: originalName, rule: validation())
        }
    }
}
