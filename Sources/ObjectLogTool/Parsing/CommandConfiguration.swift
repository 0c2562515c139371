import CommandLineKit

/// The static description of a command: its name, what it does, its arguments, options and
/// subcommands, as its help prints it and ``ArgumentParser`` checks it.
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
