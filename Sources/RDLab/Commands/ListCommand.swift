import CommandLineKit

/// `rdlab list [--tag TAG …] [--json]`: the saved configurations, one line each.
///
/// It only reads (the store is opened read-only), so it works on a read-only store and while
/// another process writes.
public struct ListCommand: Command {
    /// `list`.
    public static let name = "list"

    /// The command's help page.
    public static let help = HelpPage(
        overview: "List the saved configurations (the last run's automatic save first).",
        usage: "rdlab list [--tag <tag> ...] [--json] [--store <path|uri>]",
        options: [
            .option(
                "--tag",
                value: "tag",
                help:
                    "Only configurations with this tag (ignoring case); may be\nrepeated: all must match."
            ),
            .flag(
                "--json",
                help:
                    "Print a JSON array with each one's settings, its model's\nparameters, notes and tags."
            ),
            .store,
        ]
    )

    /// Whether to print JSON.
    public var json = false
    /// The tags every listed configuration has.
    public var tags: [String] = []
    /// The store path from `--store`, if given.
    public var storePath: String?

    /// Parses `[--json] [--store <path|uri>]`.
    public init(parsing arguments: inout ArgumentScanner) throws(CommandError) {
        while let option = try arguments.nextOption() {
            switch option {
            case "--json": json = true
            case "--tag": tags.append(try arguments.value(for: option))
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
        let configurations = try store.configurations().filter { configuration in
            tags.allSatisfy(configuration.hasTag)
        }
        if !tags.isEmpty && configurations.isEmpty && !json {
            // Each tag once (ignoring case, spelt as first seen), in alphabetical order.
            var seen: [String: String] = [:]
            for tag in try store.configurations().flatMap(\.tags)
            where seen[tag.lowercased()] == nil {
                seen[tag.lowercased()] = tag
            }
            let known = seen.keys.sorted().map { seen[$0]! }
            let tagList = tags.map { "'\($0)'" }.joined(separator: " and ")
            output.print(
                "no configurations in \(store.path) are tagged \(tagList)"
                    + (known.isEmpty
                        ? "; tag one with 'rdlab edit NAME --tag TAG'"
                        : "; its tags are \(known.joined(separator: ", "))")
            )
            return
        }
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
                JSONValue.array(configurations.map { LabFormat.json($0, snapshots: false) }).labText
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
