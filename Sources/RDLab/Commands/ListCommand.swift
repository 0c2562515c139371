import CommandLineKit

/// `rdlab list [--tag TAG …] [--deleted] [--json]`: the saved configurations, one line each, or
/// with `--deleted` those deleted in the history the store keeps, which `rdlab undelete`
/// restores.
///
/// It only reads (the store is opened read-only), so it works on a read-only store and while
/// another process writes.
public struct ListCommand: Command {
    /// `list`.
    public static let name = "list"

    /// The command's help page.
    public static let help = HelpPage(
        overview: "List the saved configurations (the last run's automatic save first).",
        usage: "rdlab list [--tag <tag> ...] [--deleted] [--json] [--store <path|uri>]",
        options: [
            .option(
                "--tag",
                value: "tag",
                help:
                    "Only configurations with this tag (ignoring case); may be\nrepeated: all must match."
            ),
            .flag(
                "--deleted",
                help:
                    "List the deleted configurations 'rdlab undelete' can restore:\nthose in the history the store keeps (\(LabStore.historyKept))."
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
    /// Whether to list the deleted configurations instead.
    public var deleted = false
    /// The tags every listed configuration has.
    public var tags: [String] = []
    /// The store path from `--store`, if given.
    public var storePath: String?

    /// Parses `[--json] [--store <path|uri>]`.
    public init(parsing arguments: inout ArgumentScanner) throws(CommandError) {
        while let option = try arguments.nextOption() {
            switch option {
            case "--json": json = true
            case "--deleted": deleted = true
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
        guard !deleted else {
            let configurations = try store.deletedConfigurations().filter { configuration in
                let stored = configuration.values["tags"]?.stringsValue ?? []
                return tags.allSatisfy { tag in
                    stored.contains { $0.lowercased() == tag.lowercased() }
                }
            }
            try store.close()
            Self.printDeleted(configurations, json: json, store: store.path, output: output)
            return
        }
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

    /// Prints the deleted configurations as a table or JSON.
    static func printDeleted(
        _ configurations: [DeletedConfiguration],
        json: Bool,
        store: String,
        output: CommandOutput
    ) {
        if json {
            output.print(
                JSONValue.array(
                    configurations.map { configuration in
                        .object([
                            ("name", .string(configuration.name)),
                            ("model", configuration.values["model"]?.labJSON ?? .null),
                            ("deleted", .date(configuration.date)),
                            ("transaction", .unsigned(configuration.transaction)),
                            ("snapshotCount", .number(configuration.snapshots.count)),
                            (
                                "tags",
                                .array(
                                    (configuration.values["tags"]?.stringsValue ?? []).map {
                                        .string($0)
                                    }
                                )
                            ),
                        ])
                    }
                ).labText
            )
            return
        }
        guard !configurations.isEmpty else {
            output.print(
                "no deleted configurations in the history \(store) keeps "
                    + "(\(LabStore.historyKept))"
            )
            return
        }
        let header = ["NAME", "MODEL", "SNAPSHOTS", "DELETED", "TRANSACTION"]
        let rows = configurations.map { configuration -> [String] in
            [
                configuration.name,
                configuration.values["model"]?.stringValue ?? "-",
                String(configuration.snapshots.count),
                LabFormat.date(configuration.date),
                "#\(configuration.transaction)",
            ]
        }
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max()! }
        for row in all {
            output.print(
                row.enumerated().map { column, text in
                    column == row.count - 1
                        ? text : text.padding(toLength: widths[column], withPad: " ", startingAt: 0)
                }.joined(separator: "  ")
            )
        }
    }
}
