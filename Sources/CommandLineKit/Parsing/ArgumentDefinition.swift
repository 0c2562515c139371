/// A positional argument a command takes, with its help.
///
/// ```swift
/// let path = ArgumentDefinition(name: "path", help: "The store file.")
/// path.helpEntry.label  // "<path>"
/// ```
public struct ArgumentDefinition: Sendable {
    /// The name shown in help, such as `path` (printed as `<path>`).
    public var name: String
    /// What the argument is.
    public var help: String
    /// Whether it may be left out.
    public var isOptional: Bool

    /// Creates an argument.
    public init(name: String, help: String, isOptional: Bool = false) {
        self.name = name
        self.help = help
        self.isOptional = isOptional
    }

    /// The argument's entry in help: `<name>` and its help.
    public var helpEntry: HelpEntry { HelpEntry("<\(name)>", help) }
}
