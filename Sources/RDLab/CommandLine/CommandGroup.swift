import CommandLineKit

/// A tool made of subcommands: dispatches to the one named first, prints help, and turns errors
/// into `error: …` lines and exit statuses.
///
/// ```swift
/// let tool = CommandGroup(name: "rdlab", help: ..., subcommands: [RunCommand.self])
/// exit(tool.main(arguments: Array(CommandLine.arguments.dropFirst()), output: .standard))
/// ```
public struct CommandGroup {
    /// The tool's name, such as `rdlab`.
    public var name: String
    /// The tool's help page (its SUBCOMMANDS section is filled in from `subcommands`).
    public var help: HelpPage
    /// The subcommands, in the order help lists them.
    public var subcommands: [any Command.Type]
    /// The version `--version` prints after the tool's name, if the tool has one.
    public var version: String?

    /// Creates a tool.
    public init(
        name: String,
        help: HelpPage,
        version: String? = nil,
        subcommands: [any Command.Type]
    ) {
        self.name = name
        self.help = help
        self.version = version
        self.subcommands = subcommands
    }

    /// The tool's help page, listing its subcommands.
    public var helpText: String {
        var page = help
        page.subcommands = subcommands.map { HelpEntry($0.name, $0.help.overview) }
        return page.text(layout: .lab)
    }

    /// Runs the command named by `arguments` (program name excluded) and returns the exit status.
    public func main(arguments: [String], output: CommandOutput) -> Int32 {
        do {
            try dispatch(arguments, output: output)
            return ExitCode.success.rawValue
        } catch {
            output.printError(Redaction.passwords(in: error.description))
            return error.exitCode.rawValue
        }
    }

    private func dispatch(_ arguments: [String], output: CommandOutput) throws(CommandError) {
        guard let first = arguments.first else {
            output.printPage(helpText)
            return
        }
        if first == "--help" || first == "-h" {
            output.printPage(helpText)
            return
        }
        if first == "--version", let version {
            guard arguments.count == 1 else {
                throw .usage("'--version' takes nothing else; see '\(name) --help'")
            }
            output.print("\(name) \(version)")
            return
        }
        if first == "help" {
            guard arguments.count > 1 else {
                output.printPage(helpText)
                return
            }
            guard let command = subcommand(named: arguments[1]) else {
                throw unknownCommand(arguments[1])
            }
            output.printPage(command.help.text(layout: .lab))
            return
        }
        guard let command = subcommand(named: first) else {
            throw unknownCommand(first)
        }
        let rest = Array(arguments.dropFirst())
        if rest.contains("--help") || rest.contains("-h") {
            output.printPage(command.help.text(layout: .lab))
            return
        }
        var scanner = ArgumentScanner(rest, command: "\(name) \(command.name)", conventions: .lab)
        let parsed = try command.init(parsing: &scanner)
        try parsed.run(output: output)
    }

    private func subcommand(named commandName: String) -> (any Command.Type)? {
        subcommands.first { $0.name == commandName }
    }

    private func unknownCommand(_ commandName: String) -> CommandError {
        let names = subcommands.map { $0.name }
        let known = names.joined(separator: ", ")
        return .usage(
            "unknown command '\(commandName)'\(Suggestion.didYouMean(commandName, among: names)); "
                + "use one of \(known), or see '\(name) --help'"
        )
    }
}

extension CommandOutput {
    /// Writes a page of text that already ends with a newline.
    func printPage(_ text: String) {
        print(text.hasSuffix("\n") ? String(text.dropLast()) : text)
    }
}

extension HelpLayout {
    /// The layout of `rdlab`'s help: each section's descriptions just past its longest label
    /// (at most 28 columns), text as written, its lines broken by hand.
    static let lab = HelpLayout(labelColumn: .fitted(maximumWidth: 28))
}
