import ObjectLog
import ObjectLogStore

/// `objectlog recover PATH [--output NEW]`: salvages a damaged store into a new one.
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
            The output must not exist yet. To repair a store in place, use 'objectlog repair'.
            """,
        usage: "<path> [--output <new-path>]",
        arguments: [ArgumentDefinition(name: "path", help: "The damaged store file.")],
        options: [
            .option(
                "--output",
                "-o",
                value: "new-path",
                help: "Where to write the recovered store (default: <path>.recovered)."
            )
        ]
    )

    var path: String
    var outputPath: String

    init(_ arguments: ParsedArguments, context: CommandContext) throws(ToolError) {
        path = arguments.positionals[0]
        outputPath = arguments.value("--output") ?? path + ".recovered"
        guard !outputPath.isEmpty else {
            throw ToolError.usage("the output path is empty", command: context.commandName)
        }
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        // Opened first: it fails cleanly on a file that is no store.
        try StoreAccess.openSalvaging(path).close()
        if FileStatus.exists(outputPath) {
            throw ToolError(
                .cannotCreate,
                "\(outputPath): already exists; choose a new path with --output"
            )
        }
        let result: SalvageResult
        do {
            // Records of earlier model versions are copied in the current version's layout.
            result = try LogStore.salvage(
                path: path,
                to: outputPath,
                upgrade: { try ModelHistory.read(from: $0)?.upgrade(store: $0) },
                merge: { try ModelHistory.read(from: $0)?.patchMerge(store: $0) }
            )
        } catch let error as StoreError where error.path == outputPath {
            throw ToolError(.cannotCreate, ToolError.describe(error))
        }
        let output = context.output
        output.writeLine(
            "recovered \(result.objects) live object(s) from \(path) into \(outputPath)"
        )
        let names = EntityNames(
            path: outputPath,
            metadata: try StoreAccess.openReadOnly(outputPath).metadata
        )
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
