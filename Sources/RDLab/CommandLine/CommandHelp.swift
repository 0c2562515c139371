/// A command's help page, laid out as OVERVIEW, USAGE, ARGUMENTS, OPTIONS and SUBCOMMANDS.
///
/// ```swift
/// let help = CommandHelp(
///     overview: "Lists the presets.",
///     usage: "rdlab presets [--model <model>]",
///     options: [.init("--model <model>", "Only this model's presets.")]
/// )
/// print(help.text)
/// ```
public struct CommandHelp: Sendable {
    /// One entry of a help section: a name column and its description.
    public struct Entry: Sendable {
        /// The left column, such as `--steps <n>`.
        public var name: String
        /// The description, which may span several lines.
        public var description: String

        /// Creates an entry.
        public init(_ name: String, _ description: String) {
            self.name = name
            self.description = description
        }
    }

    /// What the command does, in a sentence or two.
    public var overview: String
    /// The synopsis, starting with the command's full name.
    public var usage: String
    /// Positional arguments.
    public var arguments: [Entry]
    /// Options and flags; `-h, --help` is added at the end.
    public var options: [Entry]
    /// Subcommands and what they do.
    public var subcommands: [Entry]

    /// Creates a help page.
    public init(
        overview: String,
        usage: String,
        arguments: [Entry] = [],
        options: [Entry] = [],
        subcommands: [Entry] = []
    ) {
        self.overview = overview
        self.usage = usage
        self.arguments = arguments
        self.options = options
        self.subcommands = subcommands
    }

    /// The page as printed by `--help`, ending with a newline.
    public var text: String {
        var lines = ["OVERVIEW: \(overview)", "", "USAGE: \(usage)"]
        func section(_ title: String, _ entries: [Entry]) {
            guard !entries.isEmpty else { return }
            lines += ["", "\(title):"]
            let width = min(28, entries.map(\.name.count).max()! + 2)
            for entry in entries {
                let descriptionLines = entry.description.split(
                    separator: "\n",
                    omittingEmptySubsequences: false
                )
                let pad = String(repeating: " ", count: 2 + width)
                if entry.name.count + 2 > width {
                    lines.append("  \(entry.name)")
                    lines += descriptionLines.map { pad + $0 }
                } else {
                    let name = entry.name.padding(toLength: width, withPad: " ", startingAt: 0)
                    lines.append("  \(name)\(descriptionLines[0])")
                    lines += descriptionLines.dropFirst().map { pad + $0 }
                }
            }
        }
        section("ARGUMENTS", arguments)
        section("OPTIONS", options + [Entry("-h, --help", "Show help information.")])
        section("SUBCOMMANDS", subcommands)
        return lines.joined(separator: "\n") + "\n"
    }
}
