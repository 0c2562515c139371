/// A command's help, in the swift-argument-parser layout: OVERVIEW, an optional discussion,
/// USAGE, then the ARGUMENTS, OPTIONS and SUBCOMMANDS sections.
///
/// Every page's OPTIONS end with `-h, --help`; a section with no entries is left out.
///
/// ```swift
/// let page = HelpPage(
///     overview: "List the models' presets.",
///     usage: "rdlab presets [--model <model>]",
///     options: [.option("--model", value: "model", help: "Only this model's presets.")]
/// )
/// print(page.text(layout: HelpLayout(labelColumn: .fitted(maximumWidth: 28))), terminator: "")
/// ```
public struct HelpPage: Sendable {
    /// What the command does, in a sentence or two.
    public var overview: String
    /// Further paragraphs after the overview, one a line; a line starting with two spaces (an
    /// example) is printed as written.
    public var discussion: String
    /// The synopsis after `USAGE: `, starting with the command's full name.
    public var usage: String
    /// The positional arguments, in order.
    public var arguments: [ArgumentDefinition]
    /// The options, in the order help lists them (`-h, --help` follows them).
    public var options: [OptionDefinition]
    /// The subcommands and what each does.
    public var subcommands: [HelpEntry]
    /// A line printed last, after a blank line, such as where to find a subcommand's help.
    public var closingNote: String?

    /// Creates a help page.
    public init(
        overview: String,
        discussion: String = "",
        usage: String,
        arguments: [ArgumentDefinition] = [],
        options: [OptionDefinition] = [],
        subcommands: [HelpEntry] = [],
        closingNote: String? = nil
    ) {
        self.overview = overview
        self.discussion = discussion
        self.usage = usage
        self.arguments = arguments
        self.options = options
        self.subcommands = subcommands
        self.closingNote = closingNote
    }

    /// The page as `--help` prints it, laid out as `layout` says, ending with a newline.
    public func text(layout: HelpLayout) -> String {
        var lines = layout.paragraph("OVERVIEW: " + overview)
        if !discussion.isEmpty {
            lines.append("")
            for paragraph in discussion.split(separator: "\n", omittingEmptySubsequences: false) {
                if paragraph.hasPrefix("  ") {
                    lines.append(String(paragraph))
                } else {
                    lines += layout.paragraph(String(paragraph))
                }
            }
        }
        lines += ["", "USAGE: " + usage]
        func section(_ title: String, _ entries: [HelpEntry]) {
            guard !entries.isEmpty else { return }
            lines += ["", title + ":"]
            lines += layout.lines(of: entries)
        }
        section("ARGUMENTS", arguments.map(\.helpEntry))
        section(
            "OPTIONS",
            options.map(\.helpEntry) + [HelpEntry("-h, --help", "Show help information.")]
        )
        section("SUBCOMMANDS", subcommands)
        if let closingNote {
            lines += ["", closingNote]
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
