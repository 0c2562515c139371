/// `rdlab list [--json]`: the saved configurations, one line each.
public struct ListCommand: Command {
    /// `list`.
    public static let name = "list"

    /// The command's help page.
    public static let help = CommandHelp(
        overview: "List the saved configurations (the last run's automatic save first).",
        usage: "rdlab list [--json] [--store <path>]",
        options: [
            .init("--json", "Print a JSON array with every setting and parameter."),
            .init("--store <path>", LabStore.storeOptionHelp),
        ]
    )

    /// Whether to print JSON.
    public var json = false
    /// The store path from `--store`, if given.
    public var storePath: String?

    /// Parses `[--json] [--store <path>]`.
    public init(parsing arguments: inout ArgumentScanner) throws(CommandError) {
        while let option = try arguments.nextOption() {
            switch option {
            case "--json": json = true
            case "--store": storePath = try arguments.value(for: option)
            default: throw arguments.unknownOption(option)
            }
        }
    }

    /// Prints the list.
    public func run(output: CommandOutput) throws(CommandError) {
        let store = try LabStore(
            path: LabStore.path(option: storePath),
            access: .read,
            warn: output.printError
        )
        let configurations = try store.configurations()
        Self.print(configurations, json: json, store: store.path, output: output)
    }

    /// Prints `configurations` as a table or JSON.
    static func print(
        _ configurations: [Configuration],
        json: Bool,
        store: String,
        output: CommandOutput
    ) {
        if json {
            output.print(
                JSONValue.array(configurations.map { LabFormat.json($0, snapshots: false) }).text()
            )
        } else if configurations.isEmpty {
            output.print(
                "no configurations in \(store) yet; save one with 'rdlab run … --save NAME'"
            )
        } else {
            for line in LabFormat.table(configurations) {
                output.print(line)
            }
        }
    }
}
