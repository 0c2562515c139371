import CommandLineKit
import ObjectLog
import ReactionDiffusion

/// `rdlab revert NAME --to N`: gives a configuration back the parameters, tags and notes it
/// had after transaction N, as a new save.
///
/// The history is kept: the revert is a transaction of its own, which `rdlab history` lists,
/// and can itself be reverted. Its name, snapshots and thumbnail stay as they are.
public struct RevertCommand: Command {
    /// `revert`.
    public static let name = "revert"

    /// The command's help page.
    public static let help = HelpPage(
        overview:
            "Restore a configuration's parameters, tags and notes as of an earlier transaction.",
        usage: "rdlab revert <name> --to <transaction> [--store <path|uri>]",
        arguments: [ArgumentDefinition(name: "name", help: "The configuration.")],
        options: [
            .option(
                "--to",
                value: "transaction",
                help:
                    "The transaction's number, as 'rdlab history' shows it\n(#12 or 12). The revert is saved as a new transaction."
            ),
            .store,
        ]
    )

    /// The configuration to revert.
    public var configurationName: String
    /// The transaction whose values to restore.
    public var transaction: UInt64
    /// The store path from `--store`, if given.
    public var storePath: String?

    /// Parses the name and `--to`.
    public init(parsing arguments: inout ArgumentScanner) throws(CommandError) {
        var names: [String] = []
        var transaction: UInt64?
        while let option = try arguments.nextOption(collectingPositionals: &names) {
            switch option {
            case "--to":
                guard transaction == nil else { throw .usage("'--to' is given more than once") }
                let text = try arguments.value(for: option)
                guard let number = UInt64(text.hasPrefix("#") ? String(text.dropFirst()) : text)
                else {
                    throw .usage(
                        "'--to' needs a transaction number as 'rdlab history' shows it, such as "
                            + "12, not '\(text)'"
                    )
                }
                transaction = number
            case "--store": storePath = try arguments.value(for: option)
            default: throw arguments.unknownOption(option)
            }
        }
        configurationName = try arguments.configurationName(among: names)
        guard let transaction else {
            throw .usage(
                "missing '--to <transaction>'; 'rdlab history \(configurationName)' lists the "
                    + "transactions"
            )
        }
        self.transaction = transaction
    }

    /// Restores the values and saves.
    public func run(output: CommandOutput) throws(CommandError) {
        let store = try LabStore(path: LabStore.path(option: storePath), access: .write)
        let configuration = try store.requireConfigurationWithHistory(named: configurationName)
        let name = configurationName
        let latest = try store.currentTransaction()
        guard transaction <= latest else {
            throw .usage(
                "transaction #\(transaction) is in the future: the store's latest is #\(latest); "
                    + "'rdlab history \(name)' lists the ones to revert to"
            )
        }
        guard let transactions = try store.history(after: transaction) else {
            let earliest = try store.earliestKeptTransaction()
            throw CommandError(
                "the store's history goes back to transaction #\(earliest) (it keeps its history "
                    + "\(LabStore.historyKept)), so '\(name)' cannot go back to #\(transaction); "
                    + "revert to #\(earliest) or later ('rdlab history \(name)' lists them)",
                exitCode: .dataError
            )
        }
        let (inserted, values) = LabStore.valuesBefore(transactions, of: configuration.objectID)
        if let inserted {
            throw .usage(
                "'\(name)' did not exist yet in transaction #\(transaction): it was saved in "
                    + "#\(inserted); revert to #\(inserted) or later ('rdlab history \(name)' "
                    + "lists them)"
            )
        }
        var changes: [String] = []
        var parameters = configuration.parameters
        for parameter in Parameters.names {
            guard let old = values[parameter]?.floatValue,
                let current = parameters.value(forName: parameter), old != current
            else { continue }
            try? parameters.setValue(old, forName: parameter)
            changes.append("\(parameter) \(current) → \(old)")
        }
        if !changes.isEmpty { configuration.parameters = parameters }
        if let tags = values["tags"]?.stringsValue, tags != configuration.tags {
            changes.append(
                "tags [\(configuration.tags.joined(separator: ", "))] → "
                    + "[\(tags.joined(separator: ", "))]"
            )
            configuration.tags = tags
        }
        if let notes = values["notes"]?.stringValue, notes != configuration.notes {
            changes.append(
                "notes \(StoredValue.string(configuration.notes).labText) → "
                    + StoredValue.string(notes).labText
            )
            configuration.notes = notes
        }
        guard !changes.isEmpty else {
            try store.close()
            output.print(
                "'\(name)' already has the parameters, tags and notes it had after "
                    + "transaction #\(transaction); nothing to save"
            )
            return
        }
        store.settings.lastOpened = configuration.name
        try store.save()
        let saved = try store.currentTransaction()
        try store.close()
        output.print(
            "reverted '\(name)' to transaction #\(transaction) in transaction #\(saved): "
                + changes.joined(separator: "; ")
        )
    }
}
