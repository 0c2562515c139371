/// The static description of a command: its name, what it does, its arguments, options and
/// subcommands, as ``HelpFormatter`` prints it and ``ArgumentParser`` checks it.
struct CommandConfiguration: Sendable {
    /// The subcommand name (`info`), or the tool's name for the root command.
    var name: String
    /// One sentence: what the command does (the OVERVIEW line and the SUBCOMMANDS entry).
    var abstract: String
    /// Further paragraphs printed after the overview.
    var discussion: String = ""
    /// The USAGE line after the command path, such as `<path> [--json]`.
    var usage: String
    /// The positional arguments, in order.
    var arguments: [ArgumentDefinition] = []
    /// The options (besides `-h`/`--help`, which every command has).
    var options: [OptionDefinition] = []
    /// The subcommands, for a command that has them.
    var subcommands: [any ToolCommand.Type] = []
}

/// A positional argument.
struct ArgumentDefinition: Sendable {
    /// The name shown in help, such as `path` (printed as `<path>`).
    var name: String
    /// What the argument is.
    var help: String
    /// Whether it may be left out.
    var isOptional = false
}

/// An option: a flag (`--json`) or an option with a value (`--format json`, `--format=json`).
struct OptionDefinition: Sendable {
    /// The option's names, long first (`["--output", "-o"]`).
    var names: [String]
    /// The value's name in help (`format`), or nil for a flag.
    var valueName: String?
    /// What the option does.
    var help: String
    /// The values accepted, if only a few are.
    var allowedValues: [String]?

    /// A flag without a value.
    static func flag(_ names: String..., help: String) -> OptionDefinition {
        OptionDefinition(names: names, valueName: nil, help: help, allowedValues: nil)
    }

    /// An option that takes a value.
    static func option(
        _ names: String...,
        value: String,
        help: String,
        allowedValues: [String]? = nil
    ) -> OptionDefinition {
        OptionDefinition(names: names, valueName: value, help: help, allowedValues: allowedValues)
    }

    /// The name options are looked up by: the first one given.
    var canonicalName: String { names[0] }
}
