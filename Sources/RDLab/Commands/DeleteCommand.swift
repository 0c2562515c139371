import CommandLineKit

/// `rdlab delete NAME`: deletes a configuration and, with it, all its snapshots.
///
/// The store's history keeps their last values for 30 days, so `rdlab undelete NAME` can
/// restore them until then (`rdlab list --deleted` lists them).
public struct DeleteCommand: Command {
    /// `delete`.
    public static let name = "delete"

    /// The command's help page.
    public static let help = HelpPage(
        overview: "Delete a configuration and all its snapshots (see 'rdlab undelete').",
        usage: "rdlab delete <name> [--store <path|uri>]",
        arguments: [ArgumentDefinition(name: "name", help: "The configuration.")],
        options: [.store]
    )

    /// The configuration to delete.
    public var configurationName: String
    /// The store path from `--store`, if given.
    public var storePath: String?

    /// Parses the name.
    public init(parsing arguments: inout ArgumentScanner) throws(CommandError) {
        let names: [String]
        (names, storePath) = try arguments.positionalsAndStore()
        configurationName = try arguments.configurationName(among: names)
    }

    /// Deletes and saves.
    public func run(output: CommandOutput) throws(CommandError) {
        let store = try LabStore(path: LabStore.path(option: storePath), access: .write)
        let configuration = try store.requireConfiguration(named: configurationName)
        let snapshotCount = configuration.snapshots.count
        store.context.delete(configuration)
        if store.settings.lastOpened == configurationName {
            store.settings.lastOpened = nil
        }
        try store.save()
        try store.close()
        output.print(
            "deleted '\(configurationName)' and its \(snapshotCount) "
                + "snapshot\(snapshotCount == 1 ? "" : "s")"
        )
    }
}
