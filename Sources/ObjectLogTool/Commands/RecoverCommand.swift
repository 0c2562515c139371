import CommandLineKit
import ObjectLog
import ObjectLogStore

/// `objectlog recover PATH [--output NEW] [--model-from OTHER]`: salvages a damaged store into
/// a new one.
struct RecoverCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        name: "recover",
        abstract: "Salvage every intact transaction of a damaged store into a new store and say "
            + "what was lost.",
        discussion: """
            The damaged store is only read. The new store holds the live objects and metadata \
            of every intact committed transaction: each damaged transaction is dropped whole, \
            so an object it changed has its version from the transaction before (or a later \
            one), and one it inserted is absent. Each dropped transaction is listed with the \
            objects and metadata it changed. External blobs the objects refer to are copied. \
            When the damage lost the record of a model version's schema, the objects that \
            version wrote cannot be read without it: --model-from names a store that records \
            that version, whose schema the new store then holds again; without one the store \
            is refused (exit 65), as is a store whose objects are stored as patches and that \
            records no model to merge them with. The output must not exist yet. To repair a \
            store in place, use 'objectlog repair'.
            """,
        usage: "<path> [--output <new-path>] [--model-from <store>]",
        arguments: [ArgumentDefinition(name: "path", help: "The damaged store file.")],
        options: [
            .option(
                "--output",
                "-o",
                value: "new-path",
                help: "Where to write the recovered store (default: <path>.recovered)."
            ),
            .option("--model-from", value: "store", help: SalvageModel.optionHelp),
        ]
    )

    var path: String
    var outputPath: String
    var modelSource: String?

    init(_ arguments: ParsedArguments, context: CommandContext) throws(CommandError) {
        path = arguments.positionals[0]
        outputPath = arguments.value("--output") ?? path + ".recovered"
        guard !outputPath.isEmpty else {
            throw CommandError.usage("the output path is empty", command: context.commandName)
        }
        modelSource = arguments.value("--model-from")
        guard modelSource?.isEmpty != true else {
            throw CommandError.usage("the --model-from path is empty", command: context.commandName)
        }
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        // Opened first: it fails cleanly on a file that is no store.
        try StoreAccess.openSalvaging(path).close()
        if FileStatus.exists(outputPath) {
            throw CommandError(
                "\(outputPath): already exists; choose a new path with --output",
                exitCode: .cannotCreate
            )
        }
        let model = try SalvageModel(modelFrom: modelSource)
        let (restoring, restored) = try model.prepare(path)
        let result: SalvageResult
        do {
            // Records of earlier model versions are copied in the current version's layout.
            result = try LogStore.salvage(
                path: path,
                to: outputPath,
                options: StoreOptions(),
                upgrade: model.upgrade,
                merge: model.merge,
                restoring: restoring
            )
        } catch let error as StoreError where error.path == outputPath {
            throw CommandError(CommandError.describe(error), exitCode: .cannotCreate)
        } catch let error as StoreError where error.code == .invalidArgument {
            // What the copy refuses (records it cannot translate) is the data's doing.
            throw CommandError(CommandError.describe(error), exitCode: .dataError)
        }
        let output = context.output
        let recovered = try StoreAccess.openReadOnly(outputPath)
        let metadata = recovered.metadata
        // The records that hold model versions are not objects.
        let objects = result.objects - recovered.liveCount(entity: ModelHistory.schemaEntityTag)
        try recovered.close()
        output.writeLine(
            "recovered \(objects) live object(s) from \(path) into \(outputPath)"
        )
        for line in model.restoredLines(restored) { output.writeLine(line) }
        let names = EntityNames(path: outputPath, metadata: metadata)
        Self.printLosses(result, path: path, names: names, output: output)
        return .success
    }

    /// Prints what a salvage dropped, one `lost:` line per transaction and an indented line per
    /// record, or that nothing was.
    static func printLosses(
        _ result: SalvageResult,
        path: String,
        names: EntityNames,
        output: TextOutput
    ) {
        var lines = DamageRendering.lossLines(result.report, names: names).map {
            $0.hasPrefix(" ") ? $0 : "lost: " + $0
        }
        for id in result.missingBlobs {
            lines.append(
                "lost: external blob \(path)\(LogFormat.blobsSuffix)/\(id.hex): referenced by a "
                    + "live object, but missing or damaged"
            )
        }
        if lines.isEmpty {
            output.writeLine("nothing was lost: the store is not damaged")
        } else {
            for line in lines { output.writeLine(line) }
        }
    }
}
