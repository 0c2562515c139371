import CommandLineKit
import ObjectLogStore

/// `objectlog history PATH [--changes] [--since N] [--entity NAME] [--json]`: the committed
/// transactions in order, or with `--changes` what each changed, old → new.
struct HistoryCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        name: "history",
        abstract: "List the committed transactions in order: number, byte offset, time and "
            + "inserted, updated and deleted counts; with --changes, each object's changed "
            + "properties, old → new.",
        discussion: """
            Transactions folded away by an earlier compaction are gone from the file; the \
            compaction's copy of the live state is listed as 'compaction'. With --changes the \
            values are decoded with the model the engine keeps in the store's metadata: an \
            insert shows its values, an update each changed property's old and new value, a \
            delete the object's last values; --since after a compaction's transactions exits \
            65. The store is not changed.
            """,
        usage: "<path> [--changes] [--since <n>] [--entity <name>] [--json]",
        arguments: [ArgumentDefinition(name: "path", help: "The store file.")],
        options: [
            .flag("--changes", help: "Show what each transaction changed, old → new."),
            .option(
                "--since",
                value: "n",
                help: "Only the transactions after transaction n (a number the list shows)."
            ),
            .option(
                "--entity",
                value: "name",
                help: "With --changes: only changes of this entity and of those that inherit "
                    + "from it."
            ),
            .flag("--json", help: "Print one JSON object instead of a table."),
        ]
    )

    var path: String
    var json: Bool
    var changes: Bool
    var since: UInt64
    var entity: String?

    init(_ arguments: ParsedArguments, context: CommandContext) throws(CommandError) {
        path = arguments.positionals[0]
        json = arguments.flag("--json")
        changes = arguments.flag("--changes")
        entity = arguments.value("--entity")
        if let text = arguments.value("--since") {
            guard let number = UInt64(text) else {
                throw CommandError(
                    "--since takes a transaction number (0 or more), not '\(text)'",
                    exitCode: .usage
                )
            }
            since = number
        } else {
            since = 0
        }
        if entity != nil, !changes {
            throw CommandError("--entity goes with --changes", exitCode: .usage)
        }
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        if changes { return try runChanges(context) }
        let inspection = try StoreAccess.inspect(path, checkBlobs: false)
        let transactions = inspection.transactions.filter { $0.isCompaction || $0.number > since }
        if json {
            let value = JSONValue.object([
                ("path", .string(path)),
                ("baseTransactionCount", .unsigned(inspection.baseTransactionCount)),
                ("transactions", .array(transactions.map(Self.json))),
                ("damage", DamageRendering.json(inspection.damage)),
            ])
            context.output.writeLine(value.rendered(pretty: true))
        } else {
            let output = context.output
            let numberWidth = max(6, String(inspection.transactionCount).count + 1)
            let offsetWidth = max(10, String(inspection.fileBytes).count + 1)
            output.writeLine(
                Formatting.leftPadded("#", numberWidth)
                    + Formatting.leftPadded("OFFSET", offsetWidth)
                    + "  " + Formatting.rightPadded("TIME (UTC)", 24)
                    + "  INSERTED   UPDATED   DELETED  NOTE"
            )
            for transaction in transactions {
                var notes: [String] = []
                if transaction.isCompaction {
                    notes.append(
                        "compaction: transactions up to #\(inspection.baseTransactionCount) "
                            + "folded into their live state"
                    )
                }
                if transaction.changedMetadata { notes.append("metadata changed") }
                output.writeLine(
                    Formatting.leftPadded(
                        transaction.isCompaction ? "-" : String(transaction.number),
                        numberWidth
                    )
                        + Formatting.leftPadded(String(transaction.offset), offsetWidth)
                        + "  " + Formatting.rightPadded(Formatting.date(transaction.date), 24)
                        + Formatting.leftPadded(String(transaction.inserted), 10)
                        + Formatting.leftPadded(String(transaction.updated), 10)
                        + Formatting.leftPadded(String(transaction.deleted), 10)
                        + (notes.isEmpty ? "" : "  " + notes.joined(separator: "; "))
                )
            }
            if transactions.isEmpty { output.writeLine("(no transactions)") }
        }
        return try DamageRendering.finish(inspection.damage, path: path, context: context)
    }

    private static func json(_ transaction: StoreInspection.TransactionSummary) -> JSONValue {
        .object([
            ("number", .unsigned(transaction.number)),
            ("offset", .unsigned(transaction.offset)),
            ("date", .string(Formatting.date(transaction.date))),
            ("inserted", .number(transaction.inserted)),
            ("updated", .number(transaction.updated)),
            ("deleted", .number(transaction.deleted)),
            ("metadataChanged", .bool(transaction.changedMetadata)),
            ("compaction", .bool(transaction.isCompaction)),
        ])
    }
}
