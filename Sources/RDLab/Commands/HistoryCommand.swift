import CommandLineKit

/// `rdlab history NAME [--json]`: a configuration's edits over time, from the store's
/// persistent history: when, and which values changed from what to what.
///
/// It only reads (the store is opened read-only). It shows what the store's history keeps:
/// every transaction since the store last compacted.
public struct HistoryCommand: Command {
    /// `history`.
    public static let name = "history"

    /// The command's help page.
    public static let help = HelpPage(
        overview: "List a configuration's edits: when, and its values before and after.",
        usage: "rdlab history <name> [--json] [--store <path|uri>]",
        arguments: [
            ArgumentDefinition(
                name: "name",
                help:
                    "The configuration. Each line starts with its transaction's\nnumber, which 'rdlab revert --to' takes."
            )
        ],
        options: [
            .flag(
                "--json",
                help:
                    "Print a JSON object with each edit's transaction, date,\nchanges (property, old, new) and snapshots added and removed."
            ),
            .store,
        ]
    )

    /// The configuration's name.
    public var configurationName: String
    /// Whether to print JSON.
    public var json = false
    /// The store path from `--store`, if given.
    public var storePath: String?

    /// Parses the name and options.
    public init(parsing arguments: inout ArgumentScanner) throws(CommandError) {
        var names: [String] = []
        while let option = try arguments.nextOption(collectingPositionals: &names) {
            switch option {
            case "--json": json = true
            case "--store": storePath = try arguments.value(for: option)
            default: throw arguments.unknownOption(option)
            }
        }
        configurationName = try arguments.configurationName(among: names)
    }

    /// Prints the edits, oldest first.
    public func run(output: CommandOutput) throws(CommandError) {
        let store = try LabStore(
            path: LabStore.path(option: storePath),
            access: .read,
            warn: output.printError
        )
        let configuration = try store.requireConfigurationWithHistory(named: configurationName)
        let transactions = try store.history(after: nil) ?? []
        let edits = LabStore.edits(of: configuration, in: transactions)
        // Without the transaction that saved it, its earlier edits were folded away.
        let complete = edits.first?.kind == .created
        var keptFrom = try store.currentTransaction() + 1
        if let first = transactions.first { keptFrom = first.token.transaction }
        try store.close()
        if json {
            output.print(
                JSONValue.object([
                    ("name", .string(configuration.name)),
                    ("complete", .bool(complete)),
                    ("keptFromTransaction", .unsigned(keptFrom)),
                    ("edits", .array(edits.map(\.json))),
                ]).labText
            )
            return
        }
        if !complete {
            output.print(
                "(earlier edits are no longer kept: the store keeps its history "
                    + "\(LabStore.historyKept), from transaction #\(keptFrom))"
            )
        }
        let width = edits.map { "#\($0.transaction)".count }.max() ?? 0
        for edit in edits {
            let number = "#\(edit.transaction)".padding(
                toLength: width,
                withPad: " ",
                startingAt: 0
            )
            output.print("\(number)  \(LabFormat.date(edit.date))  \(edit.text)")
        }
    }
}
