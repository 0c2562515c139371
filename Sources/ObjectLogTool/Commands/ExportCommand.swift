import CommandLineKit
import Foundation
import ObjectLog
import ObjectLogPostgreSQL
import ObjectLogStore

/// `objectlog export PATH URI`: copies a whole store file into an empty PostgreSQL database.
struct ExportCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        name: "export",
        abstract: "Copy a whole store file into an empty PostgreSQL database.",
        discussion: """
            Copies every object with its key, its relationships and external data, the \
            metadata and the model versions into the database URI names \
            (postgresql://USER@HOST/DATABASE, or postgresql://USER@/DATABASE?host=/socket/dir), \
            which must hold no ObjectLog store (exit 73 otherwise). Give the password in \
            PGPASSWORD or a password file (~/.pgpass, PGPASSFILE) rather than in the URI; no \
            message shows it either way. The copy is one transaction: if it fails, the \
            database is left as empty as it was. Records that older model versions wrote are \
            copied in the current version's layout, and every version is recorded. The store \
            file is only read: an app may keep it open. A damaged store is refused with exit 65 \
            (salvage it with 'objectlog recover'); a server that cannot be reached is exit 74, \
            naming the host, the database and the reason. A progress bar shows on a terminal \
            when the copy takes over a second.
            """,
        usage: "<path> <uri> [--json]",
        arguments: [
            ArgumentDefinition(name: "path", help: "The store file."),
            ArgumentDefinition(name: "uri", help: "The database: a postgresql:// URI."),
        ],
        options: [.flag("--json", help: "Print the report as one JSON object.")]
    )

    var path: String
    var url: String
    var json: Bool

    init(_ arguments: ParsedArguments, context: CommandContext) throws(CommandError) {
        path = arguments.positionals[0]
        url = arguments.positionals[1]
        json = arguments.flag("--json")
        guard StoreLocation.isDatabase(url) else {
            throw CommandError.usage(
                "the destination must be a postgresql:// URI ('objectlog backup' copies a store "
                    + "into a file)",
                command: context.commandName
            )
        }
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        // Opened first: it fails cleanly on a missing file, a file that is no store, or a
        // damaged one.
        let source = try StoreAccess.openReadOnly(path)
        defer { try? source.close() }
        let target = StoreLocation.displayName(url)
        let bar = ProgressBar(
            output: context.output,
            isTerminal: !json && context.output.isTerminal,
            delay: CompactCommand.progressDelay
        )
        let report: StoreTransfer.Report
        do {
            report = try DatabaseTransfer.export(source, to: url) { bar.update($0) }
            bar.finish()
        } catch {
            bar.finish()
            throw error
        }
        TransferReporting.print(
            report,
            verb: "exported",
            from: path,
            to: target,
            json: json,
            output: context.output
        )
        return .success
    }
}
