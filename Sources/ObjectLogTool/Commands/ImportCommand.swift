import CommandLineKit
import Foundation
import ObjectLog
import ObjectLogPostgreSQL
import ObjectLogStore

/// `objectlog import URI PATH`: copies the whole store a PostgreSQL database holds into a new
/// store file.
struct ImportCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        name: "import",
        abstract: "Copy the whole store a PostgreSQL database holds into a new store file.",
        discussion: """
            Copies every object with its key, its relationships and external data (as blob \
            files in PATH-blobs, from 16 KiB), the metadata and the model versions of the store \
            in the database URI names into a new store at PATH, as of one snapshot of the \
            database: other programs may go on writing it. PATH appears whole or not at all \
            (the copy is written as PATH-import, then renamed), and must not exist yet, nor \
            PATH-blobs or PATH-index (exit 73). Give the password in PGPASSWORD or a password \
            file (~/.pgpass, PGPASSFILE) rather than in the URI; no message shows it either \
            way. A database without an ObjectLog store is exit 66; a server that cannot be \
            reached is exit 74, naming the host, the database and the reason. A progress bar \
            shows on a terminal when the copy takes over a second.
            """,
        usage: "<uri> <path> [--json]",
        arguments: [
            ArgumentDefinition(name: "uri", help: "The database: a postgresql:// URI."),
            ArgumentDefinition(name: "path", help: "The new store file."),
        ],
        options: [.flag("--json", help: "Print the report as one JSON object.")]
    )

    var url: String
    var path: String
    var json: Bool

    init(_ arguments: ParsedArguments, context: CommandContext) throws(CommandError) {
        url = arguments.positionals[0]
        path = arguments.positionals[1]
        json = arguments.flag("--json")
        guard StoreLocation.isDatabase(url) else {
            throw CommandError.usage(
                "the source must be a postgresql:// URI ('objectlog backup' copies a store file)",
                command: context.commandName
            )
        }
        guard !path.isEmpty else {
            throw CommandError.usage("the destination path is empty", command: context.commandName)
        }
        guard !StoreLocation.isDatabase(path) else {
            throw CommandError.usage(
                "the destination must be a file path ('objectlog export' copies a store file "
                    + "into a database)",
                command: context.commandName
            )
        }
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        let source = StoreLocation.displayName(url)
        let bar = ProgressBar(
            output: context.output,
            isTerminal: !json && context.output.isTerminal,
            delay: CompactCommand.progressDelay
        )
        let report: StoreTransfer.Report
        do {
            report = try DatabaseTransfer.importStore(from: url, to: path) { bar.update($0) }
            bar.finish()
        } catch let error as StoreError where error.code == .notFound || error.code == .io {
            bar.finish()
            // The store is created here: a missing directory or a failed write is an output
            // that cannot be created.
            throw CommandError(
                "cannot create \(path): \(CommandError.describe(error))",
                exitCode: .cannotCreate
            )
        } catch {
            bar.finish()
            throw error
        }
        TransferReporting.print(
            report,
            verb: "imported",
            from: source,
            to: path,
            json: json,
            output: context.output
        )
        return .success
    }
}
