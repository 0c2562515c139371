import CommandLineKit

/// `rdlab undelete NAME`: restores a deleted configuration, with the snapshots deleted with it,
/// their states and its thumbnail, from the store's persistent history.
///
/// `rdlab list --deleted` lists what it can restore: the configurations deleted in the
/// transactions the store keeps (those of the last 30 days), with the blob files that history
/// names.
public struct UndeleteCommand: Command {
    /// `undelete`.
    public static let name = "undelete"

    /// The command's help page.
    public static let help = HelpPage(
        overview: "Restore a deleted configuration with its snapshots and thumbnail.",
        usage: "rdlab undelete <name> [--store <path|uri>]",
        arguments: [
            ArgumentDefinition(
                name: "name",
                help:
                    "The deleted configuration, as 'rdlab list --deleted' shows it\n(the last one deleted under that name)."
            )
        ],
        options: [.store]
    )

    /// The configuration to restore.
    public var configurationName: String
    /// The store path from `--store`, if given.
    public var storePath: String?

    /// Parses the name.
    public init(parsing arguments: inout ArgumentScanner) throws(CommandError) {
        let names: [String]
        (names, storePath) = try arguments.positionalsAndStore()
        configurationName = try arguments.configurationName(among: names)
    }

    /// Restores and saves.
    public func run(output: CommandOutput) throws(CommandError) {
        let store = try LabStore(path: LabStore.path(option: storePath), access: .write)
        let name = configurationName
        if try store.configuration(named: name) != nil {
            throw CommandError(
                "a configuration named '\(name)' exists again; rename it ('rdlab rename \(name) "
                    + "NEW') or delete it, then undelete '\(name)'",
                exitCode: .dataError
            )
        }
        guard let deleted = try store.deletedConfigurations().first(where: { $0.name == name })
        else {
            throw CommandError(
                "no deleted configuration named '\(name)' in the history the store '\(store.path)' "
                    + "keeps (\(LabStore.historyKept)); see 'rdlab list --deleted'",
                exitCode: .noInput
            )
        }
        let configuration = try store.restore(deleted)
        store.settings.lastOpened = configuration.name
        try store.save()
        let saved = try store.currentTransaction()
        try store.close()
        let count = deleted.snapshots.count
        output.print(
            "undeleted '\(name)' and its \(count) snapshot\(count == 1 ? "" : "s") (deleted in "
                + "transaction #\(deleted.transaction), restored in #\(saved))"
        )
    }
}
