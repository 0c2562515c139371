import CommandLineKit

/// `objectlog`: the tool itself, whose subcommands do the work.
struct RootCommand: ToolCommand {
    /// The tool's version, printed by `--version`.
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        name: "objectlog",
        abstract:
            "Inspect, verify, dump, compact, back up, export, import and edit the metadata of "
            + "ObjectLog stores.",
        discussion: """
            Read-only subcommands (info, verify, dump, history, schema, meta print and get) never change \
            the store, not even its modification time. info and dump also read the store a \
            PostgreSQL database holds (a postgresql:// URI); export and import copy a whole store \
            between a file and a database. Exit codes: 0 success, 1 absent metadata \
            key, 64 usage error, 65 damaged data, not a store, or a store that cannot be read \
            without a model it does not record (objects stored as patches, or a model version \
            whose schema the damage lost), 66 missing file, or a database without a store, 73 \
            cannot create the output (a destination that exists, or a database that holds a \
            store already), 74 I/O error, a store locked by another writer, or a database \
            server that cannot be reached.
            """,
        usage: "<subcommand>",
        options: [.flag("--version", help: "Show the version.")],
        subcommands: [
            InfoCommand.self, VerifyCommand.self, DumpCommand.self, HistoryCommand.self,
            CompactCommand.self, MetaCommand.self, RecoverCommand.self, RepairCommand.self,
            SchemaCommand.self, BackupCommand.self, ExportCommand.self, ImportCommand.self,
        ]
    )

    var showsVersion: Bool

    init(_ arguments: ParsedArguments, context: CommandContext) throws(CommandError) {
        showsVersion = arguments.flag("--version")
        guard showsVersion else {
            throw CommandError.usage("missing subcommand", command: context.commandName)
        }
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        context.output.writeLine(Self.version)
        return .success
    }
}
