import CommandLineKit

/// `rdlab rename OLD NEW`: renames a configuration; renaming `autosave` keeps the last run.
public struct RenameCommand: Command {
    /// `rename`.
    public static let name = "rename"

    /// The command's help page.
    public static let help = HelpPage(
        overview: "Rename a configuration (rename 'autosave' to keep the last run).",
        usage: "rdlab rename <old> <new> [--store <path|uri>]",
        arguments: [
            ArgumentDefinition(name: "old", help: "The configuration's name."),
            ArgumentDefinition(
                name: "new",
                help: "Its new name, not used by another configuration."
            ),
        ],
        options: [.store]
    )

    /// The current name.
    public var oldName: String
    /// The new name.
    public var newName: String
    /// The store path from `--store`, if given.
    public var storePath: String?

    /// Parses the two names.
    public init(parsing arguments: inout ArgumentScanner) throws(CommandError) {
        let names: [String]
        (names, storePath) = try arguments.positionalsAndStore()
        guard names.count >= 2 else {
            throw .usage("rename needs the old and the new name: rdlab rename <old> <new>")
        }
        guard names.count == 2 else {
            throw .usage("unexpected argument '\(names[2])'; see '\(arguments.command) --help'")
        }
        oldName = names[0]
        newName = names[1]
        try LabStore.checkNewName(newName)
    }

    /// Renames and saves.
    public func run(output: CommandOutput) throws(CommandError) {
        let store = try LabStore(path: LabStore.path(option: storePath), access: .write)
        let configuration = try store.requireConfiguration(named: oldName)
        guard oldName != newName else {
            output.print("'\(oldName)' already has that name")
            return
        }
        if try store.configuration(named: newName) != nil {
            throw CommandError(
                "a configuration named '\(newName)' already exists; delete it first or choose "
                    + "another name",
                exitCode: .dataError
            )
        }
        configuration.name = newName
        configuration.autoSaved = false
        if store.settings.lastOpened == oldName || oldName == LabStore.autosaveName {
            store.settings.lastOpened = newName
        }
        try store.save()
        try store.close()
        output.print("renamed '\(oldName)' to '\(newName)'")
    }
}
