import CommandLineKit
import ObjectLogStore

/// `objectlog history PATH [--json]`: the committed transactions, in order.
struct HistoryCommand: StoreReportCommand {
    static let configuration = CommandConfiguration.storeReport(
        name: "history",
        abstract: "List the committed transactions in order: number, byte offset, time and "
            + "inserted, updated and deleted counts.",
        discussion: """
            Transactions folded away by an earlier compaction are gone from the file; the \
            compaction's copy of the live state is listed as 'compaction'. The store is not \
            changed.
            """,
        jsonHelp: "Print one JSON object instead of a table."
    )

    var path: String
    var json: Bool

    func run(_ context: CommandContext) throws -> ExitCode {
        let inspection = try StoreAccess.inspect(path, checkBlobs: false)
        let transactions = inspection.transactions
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
