/// One entry of a help section: a label (an option's names, an argument, a subcommand) and its
/// description.
public struct HelpEntry: Sendable, Hashable {
    /// The left column, such as `--steps <n>`.
    public var label: String
    /// What the entry is; ``HelpLayout`` says how it is broken into lines.
    public var description: String

    /// Creates an entry.
    public init(_ label: String, _ description: String) {
        self.label = label
        self.description = description
    }
}
