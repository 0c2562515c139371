/// An option a command takes: a flag (`--json`) or an option with a value (`--format json`,
/// `--format=json`), with its help.
///
/// ```swift
/// let output = OptionDefinition.option("--output", "-o", value: "path", help: "Where to write.")
/// output.helpEntry.label  // "-o, --output <path>"
/// ```
public struct OptionDefinition: Sendable {
    /// The option's names, long first (`["--output", "-o"]`).
    public var names: [String]
    /// The value's name in help (`format`), or nil for a flag.
    public var valueName: String?
    /// What the option does.
    public var help: String
    /// The values accepted, if only a few are; help lists them.
    public var allowedValues: [String]?

    /// Creates an option.
    public init(names: [String], valueName: String?, help: String, allowedValues: [String]? = nil) {
        self.names = names
        self.valueName = valueName
        self.help = help
        self.allowedValues = allowedValues
    }

    /// A flag without a value.
    public static func flag(_ names: String..., help: String) -> OptionDefinition {
        OptionDefinition(names: names, valueName: nil, help: help)
    }

    /// An option that takes a value.
    ///
    /// - Parameters:
    ///   - names: The names, long first.
    ///   - value: The value's name in help, shown as `<value>`.
    ///   - help: What the option does.
    ///   - allowedValues: The values accepted, if only a few are.
    /// - Returns: The option.
    public static func option(
        _ names: String...,
        value: String,
        help: String,
        allowedValues: [String]? = nil
    ) -> OptionDefinition {
        OptionDefinition(names: names, valueName: value, help: help, allowedValues: allowedValues)
    }

    /// The name the option is looked up by: the first one given.
    public var canonicalName: String { names[0] }

    /// The option's entry in help: its names, short first, and value (`-o, --output <path>`),
    /// then its help and the values accepted (`(values: ndjson, json)`).
    public var helpEntry: HelpEntry {
        var label = names.reversed().joined(separator: ", ")
        if let valueName { label += " <\(valueName)>" }
        var description = help
        if let allowedValues {
            description += " (values: " + allowedValues.joined(separator: ", ") + ")"
        }
        return HelpEntry(label, description)
    }
}
