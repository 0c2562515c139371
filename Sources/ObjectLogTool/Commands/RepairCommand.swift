import CommandLineKit
import ObjectLog
import ObjectLogStore

/// `objectlog repair PATH [--model-from OTHER]`: replaces a damaged store with its salvaged
/// state, in place.
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
            or when <path>.damaged exists. A store that is not damaged is left alone. A lost \
            model version's schema is taken from --model-from, as 'objectlog recover' takes it.
            """,
        usage: "<path> [--model-from <store>]",
        arguments: [ArgumentDefinition(name: "path", help: "The damaged store file.")],
        options: [.option("--model-from", value: "store", help: SalvageModel.optionHelp)]
    )

    var path: String
    var modelSource: String?

    init(_ arguments: ParsedArguments, context: CommandContext) throws(CommandError) {
        path = arguments.positionals[0]
        modelSource = arguments.value("--model-from")
        guard modelSource?.isEmpty != true else {
            throw CommandError.usage("the --model-from path is empty", command: context.commandName)
        }
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        let output = context.output
        // A store that is not damaged is left alone whatever its model (the repair checks
        // again under the writer lock).
        let check = try StoreAccess.openSalvaging(path)
        let isDamaged = check.salvageReport?.isEmpty == false
        try check.close()
        guard isDamaged else {
            output.writeLine("\(path): not damaged; nothing to repair")
            return .success
        }
        let model = try SalvageModel(modelFrom: modelSource)
        let (restoring, restored) = try model.prepare(path)
        let damagedPath = path + LogStore.damagedCopySuffix
        let result: SalvageResult
        do {
            // Records of earlier model versions are copied in the current version's layout.
            result = try LogStore.repair(
                path: path,
                options: StoreOptions(),
                upgrade: model.upgrade,
                merge: model.merge,
                restoring: restoring
            )
        } catch let error as StoreError where error.code == .invalidArgument {
            // The copy of the original cannot be made where it goes; anything else the copy
            // refuses (records it cannot translate) is the data's doing.
            throw CommandError(
                CommandError.describe(error),
                exitCode: error.path == damagedPath ? .cannotCreate : .dataError
            )
        }
        guard let copy = result.damagedCopyPath else {
            output.writeLine("\(path): not damaged; nothing to repair")
            return .success
        }
        let repaired = try StoreAccess.openReadOnly(path)
        let metadata = repaired.metadata
        // The records that hold model versions are not objects.
        let objects = result.objects - repaired.liveCount(entity: ModelHistory.schemaEntityTag)
        try repaired.close()
        output.writeLine(
            "repaired \(path): \(objects) live object(s) kept; the damaged original is \(copy)"
        )
        for line in model.restoredLines(restored) { output.writeLine(line) }
        let names = EntityNames(path: path, metadata: metadata)
        RecoverCommand.printLosses(result, path: path, names: names, output: output)
        return .success
    }
}
