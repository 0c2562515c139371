import CommandLineKit
import Foundation
import ObjectLog
import ObjectLogStore

/// `objectlog backup PATH DEST`: a consistent copy of a store, external data included, while
/// an app may be writing to it.
struct BackupCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        name: "backup",
        abstract: "Copy a store, with its external data and an index, consistently, even while "
            + "an app writes to it.",
        discussion: """
            Copying only the store file loses its external data (the files of \
            '.externalStorage' attributes, in PATH-blobs), and copying the files one by one \
            while an app saves may catch a save or a compaction half done. The backup copies \
            the store as of its last committed save (a save still being written is left out), \
            every external-data file, each checked against its content address, and an index \
            for a quick open. If a compaction replaces the store meanwhile, it starts again. \
            DEST appears whole or not at all, and must not exist yet. The store is only read: \
            an app may keep it open for writing. A damaged store is refused with exit 65 \
            (salvage it with 'objectlog recover'). A progress bar shows on a terminal when the \
            copy takes over a second.
            """,
        usage: "<path> <destination> [--json]",
        arguments: [
            ArgumentDefinition(name: "path", help: "The store file."),
            ArgumentDefinition(name: "destination", help: "Where to write the copy."),
        ],
        options: [.flag("--json", help: "Print the report as one JSON object.")]
    )

    var path: String
    var destination: String
    var json: Bool

    init(_ arguments: ParsedArguments, context: CommandContext) throws(CommandError) {
        path = arguments.positionals[0]
        destination = arguments.positionals[1]
        guard !destination.isEmpty else {
            throw CommandError.usage("the destination path is empty", command: context.commandName)
        }
        json = arguments.flag("--json")
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        // Opened first: it fails cleanly on a file that is no store, or a damaged one.
        try StoreAccess.openReadOnly(path).close()
        for suffix in ["", "-blobs", "-index"] where FileStatus.exists(destination + suffix) {
            throw CommandError(
                "\(destination + suffix): already exists; choose a new destination",
                exitCode: .cannotCreate
            )
        }
        let bar = ProgressBar(
            output: context.output,
            isTerminal: !json && context.output.isTerminal,
            delay: CompactCommand.progressDelay
        )
        var options = StoreOptions()
        options.createIfMissing = false
        let report: BackupReport
        do {
            report = try LogStore.backup(path: path, to: destination, options: options) {
                bar.update($0)
            }
            bar.finish()
        } catch {
            bar.finish()
            throw error
        }
        let copy = try StoreAccess.openReadOnly(destination)
        let objects = report.objects - copy.liveCount(entity: ModelHistory.schemaEntityTag)
        try copy.close()
        if json {
            let value = JSONValue.object([
                ("path", .string(path)),
                ("destination", .string(destination)),
                ("transaction", .unsigned(report.transactionNumber)),
                ("bytes", .unsigned(report.logBytes)),
                ("objects", .number(objects)),
                ("blobs", .number(report.blobs)),
                ("blobBytes", .unsigned(report.blobBytes)),
                ("restarts", .number(report.restarts)),
            ])
            context.output.writeLine(value.rendered(pretty: true))
        } else {
            let output = context.output
            func line(_ label: String, _ value: String) {
                output.writeLine(Formatting.field(label, value))
            }
            output.writeLine(
                "backed up \(path) to \(destination) (as of transaction \(report.transactionNumber))"
            )
            line("bytes", Formatting.bytes(report.logBytes))
            line("live objects", String(objects))
            line("blobs", "\(report.blobs) (\(Formatting.bytes(report.blobBytes)))")
            if report.restarts > 0 {
                line("restarts", "\(report.restarts) (the store was compacted meanwhile)")
            }
        }
        return .success
    }
}
