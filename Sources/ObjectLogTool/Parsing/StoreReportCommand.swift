import CommandLineKit

/// A command that reads one store and reports on it, as text or as JSON: `<path> [--json]`
/// (`info`, `history`, `verify`).
///
/// Conforming commands get their parsing from here and declare only what they report.
protocol StoreReportCommand: ToolCommand {
    /// Creates the command for the store at `path`, printing JSON if `json`.
    init(path: String, json: Bool)
}

extension StoreReportCommand {
    init(_ arguments: ParsedArguments, context: CommandContext) throws(CommandError) {
        self.init(path: arguments.positionals[0], json: arguments.flag("--json"))
    }
}

extension CommandConfiguration {
    /// The configuration of a ``StoreReportCommand``: its one argument, the store (described
    /// by `pathHelp`), and `--json`, described by `jsonHelp`.
    static func storeReport(
        name: String,
        abstract: String,
        discussion: String,
        jsonHelp: String,
        pathHelp: String = "The store file."
    ) -> CommandConfiguration {
        CommandConfiguration(
            name: name,
            abstract: abstract,
            discussion: discussion,
            usage: "<path> [--json]",
            arguments: [ArgumentDefinition(name: "path", help: pathHelp)],
            options: [.flag("--json", help: jsonHelp)]
        )
    }
}
