import CommandLineKit
import Foundation
import ObjectLog
import ObjectLogStore

/// `objectlog compact PATH`: rewrites the store with only its live state, crash-safely.
struct CompactCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        name: "compact",
        abstract: "Compact a store in place, crash-safely, and print what was reclaimed.",
        discussion: """
            The live objects and the latest metadata are written to a new file beside the store, \
            synced and renamed over it, so a crash leaves either the old or the new store. \
            External blobs that no live object refers to are removed. A store another process \
            has open for writing is refused. A store whose objects are stored as patches \
            (partial values) and that records no model to merge them with is refused with exit \
            65, as 'objectlog dump' refuses to show them. A progress bar shows on a terminal \
            when compaction takes over a second.
            """,
        usage: "<path> [--json] [--discard-torn-tail]",
        arguments: [ArgumentDefinition(name: "path", help: "The store file.")],
        options: [
            .flag("--json", help: "Print the report as one JSON object."),
            .flag(
                "--discard-torn-tail",
                help: "Compact even if the store ends in a torn tail (an interrupted save), "
                    + "dropping it; without this flag such a store is refused."
            ),
        ]
    )

    var path: String
    var json: Bool
    var discardingTornTail: Bool

    /// How long compaction runs before the progress bar appears: one second, or the
    /// milliseconds in `OBJECTLOG_PROGRESS_DELAY_MS` (so tests can see the bar on a small store).
    static var progressDelay: Duration {
        let environment = ProcessInfo.processInfo.environment
        guard let text = environment["OBJECTLOG_PROGRESS_DELAY_MS"], let milliseconds = Int(text),
            milliseconds >= 0
        else { return .seconds(1) }
        return .milliseconds(milliseconds)
    }

    init(_ arguments: ParsedArguments, context: CommandContext) {
        path = arguments.positionals[0]
        json = arguments.flag("--json")
        discardingTornTail = arguments.flag("--discard-torn-tail")
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        let store = try StoreAccess.openForWriting(
            path,
            discardingTornTail: discardingTornTail,
            checking: { store in
                // A patched object is written as a put of its merged value: refused, before
                // anything is written, when nothing can merge it.
                try EntityNames(store: store).requireMerge(
                    in: store,
                    path: path,
                    remedy: "compact the store with the program that wrote it, which merges "
                        + "patches (LogStore.installPatchMerge)"
                )
            }
        )
        let generationBefore = store.generation
        // Records of earlier model versions are rewritten in the current version's layout.
        _ = EntityNames(store: store)
        let schemaRecords = store.liveCount(entity: ModelHistory.schemaEntityTag)
        let bar = ProgressBar(
            output: context.output,
            isTerminal: !json && context.output.isTerminal,
            delay: Self.progressDelay
        )
        let report: CompactionReport
        do {
            report = try store.compact { fraction in bar.update(fraction) }
            bar.finish()
            try store.close()
        } catch {
            bar.finish()
            try? store.close()
            throw error
        }
        let reclaimed =
            report.bytesBefore > report.bytesAfter
            ? report.bytesBefore - report.bytesAfter : 0
        let share = report.bytesBefore == 0 ? 0 : Double(reclaimed) / Double(report.bytesBefore)
        if json {
            let value = JSONValue.object([
                ("path", .string(path)),
                ("generation", .unsigned(report.generation)),
                ("bytesBefore", .unsigned(report.bytesBefore)),
                ("bytesAfter", .unsigned(report.bytesAfter)),
                ("reclaimedBytes", .unsigned(reclaimed)),
                ("objects", .number(report.objects - schemaRecords)),
                ("blobsRemoved", .number(report.blobsRemoved)),
                ("blobBytesRemoved", .unsigned(report.blobBytesRemoved)),
            ])
            context.output.writeLine(value.rendered(pretty: true))
        } else {
            let output = context.output
            func line(_ label: String, _ value: String) {
                output.writeLine(Formatting.field(label, value))
            }
            output.writeLine(
                "compacted \(path) (generation \(generationBefore) -> \(report.generation))"
            )
            line("bytes before", Formatting.bytes(report.bytesBefore))
            line("bytes after", Formatting.bytes(report.bytesAfter))
            line("reclaimed", Formatting.bytes(reclaimed) + " (\(Formatting.percentage(share)))")
            line("live objects", String(report.objects - schemaRecords))
            line(
                "blobs removed",
                "\(report.blobsRemoved) (\(Formatting.bytes(report.blobBytesRemoved)))"
            )
        }
        return .success
    }
}
