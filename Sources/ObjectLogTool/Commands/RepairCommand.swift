import ObjectLog
import ObjectLogStore

/// `objectlog repair PATH`: replaces a damaged store with its salvaged state, in place.
struct RepairCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        name: "repair",
        abstract: "Repair a damaged store in place, keeping every intact transaction, and say "
            + "what was lost.",
        discussion: """
            Keeps what 'objectlog recover' would: every intact committed transaction, each \
            damaged one dropped whole. Crash-safe: the repaired store is written beside the \
            store and synced, the damaged original is kept as <path>.damaged, and only then \
            does the repaired store replace it. Refused while another process writes the store, \
            or when <path>.damaged exists. A store that is not damaged is left alone.
            """,
        usage: "<path>",
        arguments: [ArgumentDefinition(name: "path", help: "The damaged store file.")]
    )

    var path: String

    init(_ arguments: ParsedArguments, context: CommandContext) {
        path = arguments.positionals[0]
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        let result: SalvageResult
        do {
            // Records of earlier model versions are copied in the current version's layout.
            result = try LogStore.repair(
                path: path,
                upgrade: { try ModelHistory.read(from: $0)?.upgrade(store: $0) },
                merge: { try ModelHistory.read(from: $0)?.patchMerge(store: $0) }
            )
        } catch let error as StoreError where error.code == .invalidArgument {
            throw ToolError(.cannotCreate, ToolError.describe(error))
        }
        let output = context.output
        guard let copy = result.damagedCopyPath else {
            output.writeLine("\(path): not damaged; nothing to repair")
            return .success
        }
        output.writeLine(
            "repaired \(path): \(result.objects) live object(s) kept; the damaged original is "
                + "\(copy)"
        )
        let names = EntityNames(path: path, metadata: try StoreAccess.openReadOnly(path).metadata)
        RecoverCommand.printLosses(result, path: path, names: names, output: output)
        return .success
    }
}
