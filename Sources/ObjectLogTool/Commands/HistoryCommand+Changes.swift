import CommandLineKit
import Foundation
import ObjectLog
import ObjectLogStore

extension HistoryCommand {
    /// `--changes`: each transaction after `since` with its objects' changes.
    func runChanges(_ context: CommandContext) throws -> ExitCode {
        guard FileManager.default.fileExists(atPath: path) else {
            throw CommandError("\(path): no such store", exitCode: .noInput)
        }
        let inspector = try StoreInspector(path: path)
        defer { try? inspector.close() }
        let found = Result { () throws(ObjectLogError) -> [HistoryTransaction] in
            try inspector.history(
                after: HistoryToken(transaction: since),
                entities: entity.map { [$0] }
            )
        }
        let transactions: [HistoryTransaction]
        switch found {
        case .success(let read):
            transactions = read
        case .failure(let error) where error.code == .historyExpired:
            throw CommandError("\(path): \(error.message)", exitCode: .dataError)
        case .failure(let error) where error.code == .entityNotInModel:
            throw CommandError("\(path): \(error.message)", exitCode: .usage)
        case .failure(let error):
            throw error
        }
        if json {
            let value = JSONValue.object([
                ("path", .string(path)),
                ("transactions", .array(transactions.map(Self.json))),
            ])
            context.output.writeLine(value.rendered(pretty: true))
            return .success
        }
        for transaction in transactions {
            var title = "\(transaction.token)  \(Formatting.date(transaction.date))"
            if let author = transaction.author { title += "  by \(author)" }
            if let name = transaction.contextName { title += "  (context \(name))" }
            if transaction.changesModel { title += "  model version recorded" }
            context.output.writeLine(title)
            for change in transaction.changes {
                context.output.writeLine("  " + Self.line(change))
            }
        }
        if transactions.isEmpty { context.output.writeLine("(no transactions)") }
        return .success
    }

    /// One change on one line: `update Configuration 5: feed 0.035 → 0.04`.
    static func line(_ change: HistoryChange) -> String {
        let object = "\(change.objectID.entityName) \(change.objectID.key)"
        let values: [String]
        switch change.kind {
        case .insert:
            values = change.changedProperties.map { "\($0) \(change.newValues[$0] ?? .null)" }
        case .update:
            values = change.changedProperties.map {
                "\($0) \(change.oldValues[$0] ?? .null) → \(change.newValues[$0] ?? .null)"
            }
        case .delete:
            values = change.oldValues.keys.sorted().map { "\($0) \(change.oldValues[$0]!)" }
        }
        return "\(change.kind.rawValue) \(object)"
            + (values.isEmpty ? "" : ": " + values.joined(separator: ", "))
    }

    private static func json(_ transaction: HistoryTransaction) -> JSONValue {
        .object([
            ("number", .unsigned(transaction.token.transaction)),
            ("date", .string(Formatting.date(transaction.date))),
            ("author", transaction.author.map(JSONValue.string) ?? .null),
            ("context", transaction.contextName.map(JSONValue.string) ?? .null),
            ("modelVersionRecorded", .bool(transaction.changesModel)),
            (
                "changes",
                .array(
                    transaction.changes.map { change in
                        .object([
                            ("entity", .string(change.objectID.entityName)),
                            ("id", .unsigned(change.objectID.key)),
                            ("kind", .string(change.kind.rawValue)),
                            ("changed", .array(change.changedProperties.map { .string($0) })),
                            ("old", values(change.oldValues)),
                            ("new", values(change.newValues)),
                        ])
                    }
                )
            ),
        ])
    }

    private static func values(_ values: [String: StoredValue]) -> JSONValue {
        .object(values.keys.sorted().map { ($0, .string(values[$0]!.description)) })
    }
}
