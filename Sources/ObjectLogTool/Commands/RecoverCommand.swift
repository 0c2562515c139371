import ObjectLog
import ObjectLogStore

/// `objectlog recover PATH [--output NEW]`: salvages a damaged store into a new one.
struct RecoverCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        name: "recover",
        abstract: "Salvage what precedes damage into a new, valid store and say what was lost.",
        discussion: """
            The damaged store is only read. The new store holds the live objects and metadata as \
            of the last valid commit before the damage, with copies of the external blobs they \
            refer to. The output must not exist yet.
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
        // Examined first: it says what will be lost, and fails cleanly on a file that is no store.
        let inspection = try StoreAccess.inspect(path, checkBlobs: true)
        if FileStatus.exists(outputPath) {
            throw ToolError(
                .cannotCreate,
                "\(outputPath): already exists; choose a new path with --output"
            )
        }
        let result: (damage: StoreDamage?, objects: Int)
        do {
            // Records of earlier model versions are copied in the current version's layout.
            result = try LogStore.recover(path: path, to: outputPath) { source in
                try ModelHistory.read(from: source)?.upgrade(store: source)
            }
        } catch let error as StoreError where error.path?.hasPrefix(outputPath) == true {
            throw ToolError(.cannotCreate, ToolError.describe(error))
        }

        let output = context.output
        output.writeLine(
            "recovered \(result.objects) live object(s) from \(path) into \(outputPath)"
        )
        var lost: [String] = []
        if let damage = result.damage {
            lost.append(damage.description)
            let droppedBytes =
                inspection.fileBytes > damage.validEnd
                ? inspection.fileBytes - damage.validEnd : 0
            switch damage.kind {
            case .tornTail:
                lost.append(
                    "the incomplete last transaction (\(droppedBytes) bytes from offset "
                        + "\(damage.validEnd))"
                )
            case .corrupt:
                lost.append(
                    "\(damage.laterCommits) committed transaction(s) from the damage on "
                        + "(\(droppedBytes) bytes from offset \(damage.validEnd) to the end)"
                )
            }
        }
        for problem in inspection.problems where problem.area == .blob {
            lost.append("external blob \(problem.path): \(problem.message)")
        }
        if lost.isEmpty {
            output.writeLine("nothing was lost: the store is not damaged")
        } else {
            for item in lost { output.writeLine("lost: " + Formatting.singleLine(item)) }
        }
        return .success
    }
}
