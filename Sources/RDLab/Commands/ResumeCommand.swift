import CommandLineKit
import Foundation
import ReactionDiffusion

/// `rdlab resume [NAME] [--steps N] [--save NEW]`: continues a configuration from its latest
/// snapshot, exactly as if the run had never stopped.
///
/// The stored state is the solver's whole state (bytes k for k/255 in `unorm8`, the exact floats
/// in `float32`), so resuming for N steps gives bit for bit the state an uninterrupted run of
/// all the steps reaches. Without `--save` the new state is added to the configuration as
/// another snapshot; with it, a new configuration holds it.
public struct ResumeCommand: Command {
    /// `resume`.
    public static let name = "resume"

    /// The command's help page.
    public static let help = HelpPage(
        overview: "Continue a saved configuration from its latest snapshot.",
        usage: """
            rdlab resume [<name>] [--steps <n>] [--threads <t>] [--save <new> [--replace]] \
            [--npy <out.npy>] [--png <out.png>] [--store <path|uri>]
            """,
        arguments: [
            ArgumentDefinition(
                name: "name",
                help: "The configuration (default: 'autosave', the last run)."
            )
        ],
        options: [
            .option("--steps", value: "n", help: "The number of further steps (default: 1000)."),
            .option("--threads", value: "t", help: "Threads to step with (default: all cores)."),
            .option(
                "--save",
                value: "new",
                help:
                    "Save the result as a new configuration instead of adding\na snapshot to <name>."
            ),
            .flag("--replace", help: "With --save: overwrite a configuration of that name."),
            .option(
                "--npy",
                value: "out.npy",
                help: "Write the final state as a float32 .npy file."
            ),
            .option("--png", value: "out.png", help: "Write the final state as a picture."),
            .store,
        ]
    )

    /// The configuration to continue.
    public var configurationName: String
    /// The number of further steps.
    public var steps = 1_000
    /// The number of threads.
    public var threads = ProcessInfo.processInfo.activeProcessorCount
    /// The new configuration's name, if any.
    public var saveName: String?
    /// Whether `--replace` was given.
    public var replace = false
    /// Where to write the final state as `.npy`, if anywhere.
    public var numPyPath: String?
    /// Where to write the final state as a picture, if anywhere.
    public var pngPath: String?
    /// The store path from `--store`, if given.
    public var storePath: String?

    /// Parses the optional name and the options.
    public init(parsing arguments: inout ArgumentScanner) throws(CommandError) {
        var names: [String] = []
        while let option = try arguments.nextOption(collectingPositionals: &names) {
            switch option {
            case "--steps": steps = try arguments.integer(for: option, in: 0...1_000_000_000)
            case "--threads": threads = try arguments.integer(for: option, in: 1...256)
            case "--save": saveName = try arguments.value(for: option)
            case "--replace": replace = true
            case "--npy": numPyPath = try arguments.value(for: option)
            case "--png": pngPath = try arguments.value(for: option)
            case "--store": storePath = try arguments.value(for: option)
            default: throw arguments.unknownOption(option)
            }
        }
        configurationName =
            names.isEmpty
            ? LabStore.autosaveName : try arguments.configurationName(among: names)
        if let saveName {
            try LabStore.checkNewName(saveName)
            if saveName == configurationName {
                throw .usage(
                    "'--save \(saveName)' names the configuration being resumed; leave --save out "
                        + "to add the new state to it"
                )
            }
        } else if replace {
            throw .usage("'--replace' goes with '--save <new>'")
        }
    }

    /// Loads the latest snapshot, steps on and saves.
    ///
    /// The store is read (no lock) to load the snapshot and held for writing only to save, so
    /// other runs, edits and reads go on while this one steps. At save time the configuration is
    /// looked up again: if it was deleted or renamed meanwhile, or `--save NEW` was taken, the
    /// new state is kept as the automatic save and the clash is reported.
    public func run(output: CommandOutput) throws(CommandError) {
        try RunCommand.checkOutputPaths(numPyPath, pngPath)
        let path = LabStore.path(option: storePath)
        let reader = try LabStore(path: path, access: .read)
        let configuration = try reader.requireConfiguration(named: configurationName)
        if let saveName, !replace, try reader.configuration(named: saveName) != nil {
            throw LabStore.nameTaken(saveName)
        }
        guard let model = configuration.modelValue else {
            throw CommandError(
                "'\(configurationName)' uses the unknown model '\(configuration.model)'",
                exitCode: .dataError
            )
        }
        guard let snapshot = configuration.latestSnapshot else {
            throw CommandError(
                "'\(configurationName)' has no saved state to resume from",
                exitCode: .dataError
            )
        }
        let field = try snapshot.field()
        guard field.chemicalCount == model.chemicalCount else {
            throw CommandError(
                "the latest snapshot of '\(configurationName)' has \(field.chemicalCount) "
                    + "chemicals; \(model.name) needs \(model.chemicalCount)",
                exitCode: .dataError
            )
        }
        let rule = try snapshot.rule()
        let startStep = snapshot.step
        let configurationID = configuration.objectID
        let parameters = configuration.parameters
        let preset = configuration.preset
        let simulation = Simulation(
            model: model,
            parameters: parameters,
            precision: configuration.precisionValue,
            // The rule the state was computed with, so that it continues bit for bit.
            unorm8Rule: rule,
            boundary: configuration.boundaryValue,
            field: field,
            threadCount: threads
        )
        try reader.close()

        let seconds = try SteppingLoop(label: configurationName).run(simulation, steps: steps)
        let total = startStep + steps
        // Save before printing or writing files, so that output that fails loses no work.
        let record = try RunRecord(simulation: simulation, preset: preset, step: total)
        LabStore.holdBeforeSaveForTests()
        let store = try LabStore(path: path, access: .write)
        let savedName: String
        if let saveName {
            try store.saveRunKeepingWork(record, as: saveName, replace: replace)
            savedName = saveName
        } else {
            let current = try store.configuration(named: configurationName)
            guard let current, current.objectID == configurationID else {
                try store.replaceAutosave(with: record)
                try store.save()
                try store.close()
                if configurationName == LabStore.autosaveName {
                    // Another run replaced the automatic save meanwhile; the last run to finish
                    // is the automatic save, as always.
                    savedName = LabStore.autosaveName
                    printSummary(model, field, startStep, total, seconds, simulation, output)
                    try writeFiles(simulation, model, output)
                    output.print(
                        "saved '\(savedName)' at step \(total) in \(store.path) (another run "
                            + "saved the automatic save while this one stepped; this run replaced it)"
                    )
                    return
                }
                throw CommandError(
                    "'\(configurationName)' was deleted or renamed while this run stepped; the new "
                        + "state is kept as '\(LabStore.autosaveName)' (keep it with 'rdlab rename "
                        + "\(LabStore.autosaveName) NEW')",
                    exitCode: .dataError
                )
            }
            if current.parameters != parameters {
                output.printError(
                    "warning: '\(configurationName)' was edited while this run stepped; the new "
                        + "snapshot was computed with the parameters it had when the run started"
                )
            }
            store.addSnapshot(of: record, to: current)
            if !current.autoSaved {
                try store.replaceAutosave(with: record)
                store.settings.lastOpened = current.name
            }
            try store.save()
            savedName = configurationName
        }
        try store.close()
        printSummary(model, field, startStep, total, seconds, simulation, output)
        try writeFiles(simulation, model, output)
        output.print("saved '\(savedName)' at step \(total) in \(store.path)")
    }

    private func printSummary(
        _ model: Model,
        _ field: Field,
        _ startStep: Int,
        _ total: Int,
        _ seconds: Double,
        _ simulation: Simulation,
        _ output: CommandOutput
    ) {
        output.print(
            "resumed '\(configurationName)' (\(model.name), \(field.width) × \(field.height)) "
                + "from step \(startStep) to step \(total): "
                + String(format: "%.3f s", seconds)
        )
        RunCommand.printStatistics(of: simulation.field, model: model, output: output)
    }

    private func writeFiles(
        _ simulation: Simulation,
        _ model: Model,
        _ output: CommandOutput
    ) throws(CommandError) {
        try RunCommand.writeFiles(
            simulation.field,
            model: model,
            numPyPath: numPyPath,
            pngPath: pngPath,
            output: output
        )
    }
}
