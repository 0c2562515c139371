import CommandLineKit
import Foundation
import ReactionDiffusion
import Thumbnails

/// `rdlab run`: runs a model for a number of steps and writes the final state.
///
/// Unless `--no-save` is given, the final state is saved in the store as the automatic save of
/// the last run (`autosave`, which `rdlab resume` continues), and with `--save NAME` also as the
/// configuration NAME, with a snapshot and thumbnails. Ctrl-C stops the run and saves nothing.
public struct RunCommand: Command {
    /// `run`.
    public static let name = "run"

    static let modelChoices = Model.allCases.map { ($0.name, $0) }
    static let modelList = "gray-scott, fitzhugh-nagumo or belousov-zhabotinsky"
    /// The largest width or height accepted, which keeps the state's memory within reason.
    static let largestSide = 8_192

    /// The command's help page.
    public static let help = HelpPage(
        overview: "Run a reaction-diffusion model and write its final state.",
        usage: """
            rdlab run --model <model> [--preset <name>] [--set <name=value> ...] \
            [--size <n> | --width <w> --height <h>] [--steps <n>] [--threads <t>] \
            [--precision <precision>] [--unorm8-rule <1|2>] [--boundary <boundary>] \
            [--init <path.npy>] [--npy <out.npy>] [--png <out.png>] \
            [--save <name> [--replace] | --no-save] [--force] [--store <path|uri>]
            """,
        options: [
            .option("--model", value: "model", help: "\(modelList)."),
            .option(
                "--preset",
                value: "name",
                help:
                    "Start from a preset's parameters (see 'rdlab presets');\nthe model's defaults otherwise."
            ),
            .option(
                "--set",
                value: "name=value",
                help: """
                    Set one parameter, such as f=0.05; may be repeated. Names:
                    \(Parameters.names.prefix(11).joined(separator: " "))
                    \(Parameters.names.dropFirst(11).joined(separator: " ")).
                    """
            ),
            .option("--size", value: "n", help: "A square grid of n × n cells (default: 640)."),
            .option("--width", value: "w", help: "The grid's width, with --height."),
            .option("--height", value: "h", help: "The grid's height, with --width."),
            .option("--steps", value: "n", help: "The number of steps (default: 1000)."),
            .option(
                "--threads",
                value: "t",
                help: "Threads to step with (default: all cores); results do\nnot depend on it."
            ),
            .option(
                "--precision",
                value: "precision",
                help:
                    "unorm8 (default: clamp and round to k/255 after every\nstep, as the original) or float32."
            ),
            .unorm8Rule,
            .option(
                "--boundary",
                value: "boundary",
                help: "zero (default: cells outside read as 0) or periodic."
            ),
            .option(
                "--init",
                value: "path.npy",
                help:
                    "Start from this state instead of the model's seed: float32,\nshape (chemicals, height, width)."
            ),
            .option(
                "--npy",
                value: "out.npy",
                help: "Write the final state as a float32 .npy file."
            ),
            .option(
                "--png",
                value: "out.png",
                help:
                    "Write the final state as a picture, one pixel per cell, drawn as\nthe original drew it (RGB = u, u, v or a, a, b or a, b, c)."
            ),
            .option(
                "--save",
                value: "name",
                help:
                    "Save the configuration, its final state and thumbnails as\n<name> (the last run is always saved as 'autosave')."
            ),
            .flag("--replace", help: "With --save: overwrite a configuration of that name."),
            .flag("--no-save", help: "Save nothing, not even the automatic save."),
            .flag("--force", help: "Run even with parameters outside the stable range."),
            .store,
        ]
    )

    /// The model to run.
    public var model: Model
    /// The preset the parameters started from, if any.
    public var preset: Preset?
    /// The parameters, after the preset and every `--set`.
    public var parameters: Parameters
    /// The grid's width.
    public var width: Int
    /// The grid's height.
    public var height: Int
    /// The number of steps.
    public var steps: Int
    /// The number of threads.
    public var threads: Int
    /// The state's precision.
    public var precision: Precision
    /// The rule `unorm8` steps follow.
    public var unorm8Rule: Unorm8Rule
    /// The boundary rule.
    public var boundary: Boundary
    /// The starting state, from `--init` or the model's seed.
    public var initialState: Field
    /// Where to write the final state as `.npy`, if anywhere.
    public var numPyPath: String?
    /// Where to write the final state as a PNG picture, if anywhere.
    public var pngPath: String?
    /// Whether `--no-save` was given.
    public var noSave: Bool
    /// The name to save the run as (`--save`), if any.
    public var saveName: String?
    /// Whether `--replace` was given.
    public var replace: Bool
    /// The store path from `--store`, if given.
    public var storePath: String?
    /// Warnings about malformed settings this run would have used (printed when it runs).
    var settingWarnings: [String] = []

    /// Parses and checks the options, and reads `--init`.
    public init(parsing arguments: inout ArgumentScanner) throws(CommandError) {
        var model: Model?
        var presetName: String?
        var assignments: [(String, Float)] = []
        var size: Int?
        var width: Int?
        var height: Int?
        var steps: Int?
        var threads: Int?
        var precision: Precision?
        var unorm8Rule: Unorm8Rule?
        var boundary: Boundary?
        var initPath: String?
        var numPyPath: String?
        var pngPath: String?
        var noSave = false
        var saveName: String?
        var replace = false
        var storePath: String?
        var force = false
        var seen: Set<String> = []

        while let option = try arguments.nextOption() {
            if option != "--set" && !seen.insert(option).inserted {
                throw .usage("'\(option)' is given more than once")
            }
            switch option {
            case "--model": model = try arguments.choice(for: option, from: Self.modelChoices)
            case "--preset": presetName = try arguments.value(for: option)
            case "--set": assignments.append(try Self.assignment(try arguments.value(for: option)))
            case "--size": size = try arguments.integer(for: option, in: 1...Self.largestSide)
            case "--width": width = try arguments.integer(for: option, in: 1...Self.largestSide)
            case "--height": height = try arguments.integer(for: option, in: 1...Self.largestSide)
            case "--steps": steps = try arguments.integer(for: option, in: 0...1_000_000_000)
            case "--threads": threads = try arguments.integer(for: option, in: 1...256)
            case "--precision":
                precision = try arguments.choice(
                    for: option,
                    from: Precision.allCases.map { ($0.rawValue, $0) }
                )
            case "--unorm8-rule": unorm8Rule = try arguments.unorm8Rule(for: option)
            case "--boundary":
                boundary = try arguments.choice(
                    for: option,
                    from: Boundary.allCases.map { ($0.rawValue, $0) }
                )
            case "--init": initPath = try arguments.value(for: option)
            case "--npy": numPyPath = try arguments.value(for: option)
            case "--png": pngPath = try arguments.value(for: option)
            case "--no-save": noSave = true
            case "--save": saveName = try arguments.value(for: option)
            case "--replace": replace = true
            case "--store": storePath = try arguments.value(for: option)
            case "--force": force = true
            default: throw arguments.unknownOption(option)
            }
        }

        if noSave && saveName != nil {
            throw .usage("'--save' and '--no-save' contradict each other; give one")
        }
        if replace && saveName == nil {
            throw .usage("'--replace' goes with '--save <name>'")
        }
        if let saveName {
            try LabStore.checkNewName(saveName)
        }
        self.saveName = saveName
        self.replace = replace
        self.storePath = storePath
        // Without --model or a grid size, the store's settings may supply them.
        let settings = LabStore.settingsIfReadable(at: LabStore.path(option: storePath))
        if model == nil, let warning = settings.warning(.defaultModel) {
            settingWarnings.append(warning)
        }
        if size == nil && width == nil && initPath == nil,
            let warning = settings.warning(.defaultSize)
        {
            settingWarnings.append(warning)
        }
        guard let model = model ?? settings.defaultModel else {
            throw .usage(
                "missing '--model'; use \(Self.modelList) (or set a default with "
                    + "'rdlab settings set default-model <model>')"
            )
        }
        self.model = model
        if let presetName {
            guard let preset = Preset.named(presetName, for: model) else {
                let names = model.presets.map(\.name).joined(separator: ", ")
                throw .usage(
                    "\(model.name) has no preset '\(presetName)'"
                        + Suggestion.didYouMean(presetName, among: model.presets.map(\.name))
                        + "; its presets are \(names)"
                )
            }
            self.preset = preset
        }
        var parameters = preset?.parameters ?? model.defaultParameters
        try Self.apply(assignments, to: &parameters, model: model)
        let problems = parameters.stabilityProblems(for: model)
        if !problems.isEmpty && !force {
            throw .usage("\(problems.joined(separator: "; ")); pass --force to run anyway")
        }
        self.parameters = parameters

        if size != nil && (width != nil || height != nil) {
            throw .usage("use either '--size' or '--width' and '--height', not both")
        }
        if (width == nil) != (height == nil) {
            throw .usage("'--width' and '--height' go together")
        }
        self.steps = steps ?? 1_000
        self.threads = threads ?? ProcessInfo.processInfo.activeProcessorCount
        self.precision = precision ?? .unorm8
        // A float32 state is never rounded to a level, so a rule given with it would be
        // silently ignored, and the run would not be what was asked for.
        if unorm8Rule != nil && self.precision != .unorm8 {
            throw .usage(
                "'--unorm8-rule' goes with unorm8 precision; a float32 state is not rounded to levels"
            )
        }
        self.unorm8Rule = unorm8Rule ?? .current
        self.boundary = boundary ?? .zero
        self.numPyPath = numPyPath
        self.pngPath = pngPath
        self.noSave = noSave

        if let initPath {
            let field = try Self.readInitialState(initPath, model: model)
            if let side = size, field.width != side || field.height != side {
                throw .usage(
                    "'\(initPath)' is \(field.width) × \(field.height), not the \(side) × \(side) of '--size'"
                )
            }
            if let width, let height, field.width != width || field.height != height {
                throw .usage(
                    "'\(initPath)' is \(field.width) × \(field.height), not the \(width) × \(height) asked for"
                )
            }
            self.initialState = field
            self.width = field.width
            self.height = field.height
        } else {
            let side = settings.defaultSize ?? 640
            self.width = size ?? width ?? side
            self.height = size ?? height ?? side
            self.initialState = InitialState.make(
                for: model,
                width: self.width,
                height: self.height,
                seed: InitialState.defaultSeed
            )
        }
    }

    /// Sets each of `assignments` in `parameters`.
    ///
    /// - Throws: ``CommandError`` (usage) for a parameter `model` does not have, naming its
    ///   parameters: the entity keeps all fifteen fields of the original record, but setting
    ///   another model's would silently do nothing.
    static func apply(
        _ assignments: [(String, Float)],
        to parameters: inout Parameters,
        model: Model
    ) throws(CommandError) {
        for (name, value) in assignments {
            guard model.parameterNames.contains(name.lowercased()) else {
                throw .usage(
                    "\(model.name) has no parameter '\(name)'"
                        + Suggestion.didYouMean(name, among: model.parameterNames)
                        + "; its parameters are "
                        + model.parameterNames.joined(separator: ", ")
                )
            }
            do {
                try parameters.setValue(value, forName: name)
            } catch {
                throw .usage(error.message)
            }
        }
    }

    /// Parses `name=value` for `--set`.
    static func assignment(_ text: String) throws(CommandError) -> (String, Float) {
        guard let equals = text.firstIndex(of: "=") else {
            throw .usage("'--set' needs name=value, not '\(text)'")
        }
        let name = String(text[..<equals])
        let valueText = String(text[text.index(after: equals)...])
        guard Parameters.names.contains(name.lowercased()) else {
            throw .usage(
                "unknown parameter '\(name)'\(Suggestion.didYouMean(name, among: Parameters.names)); "
                    + "known parameters: \(Parameters.names.joined(separator: ", "))"
            )
        }
        guard let value = Float(valueText), value.isFinite else {
            throw .usage("'--set \(name)' needs a finite number, not '\(valueText)'")
        }
        return (name, value)
    }

    /// Reads and checks an `--init` file.
    static func readInitialState(_ path: String, model: Model) throws(CommandError) -> Field {
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw CommandError(
                "cannot read '\(path)': no such file or not readable",
                exitCode: .noInput
            )
        }
        let field: Field
        do {
            field = try NumPyFormat.read(contentsOf: path)
        } catch {
            throw CommandError(error.message, exitCode: .dataError)
        }
        guard field.chemicalCount == model.chemicalCount else {
            throw CommandError(
                "'\(path)' has \(field.chemicalCount) chemical(s); \(model.name) needs "
                    + "\(model.chemicalCount) (\(model.chemicalNames.joined(separator: ", ")))",
                exitCode: .dataError
            )
        }
        guard field.width <= largestSide && field.height <= largestSide else {
            throw CommandError(
                "'\(path)' is larger than \(largestSide) × \(largestSide)",
                exitCode: .dataError
            )
        }
        guard let index = field.values.firstIndex(where: { !$0.isFinite }) else {
            return field
        }
        let cell = index % field.cellCount
        throw CommandError(
            "'\(path)' holds a value that is not a finite number (chemical \(index / field.cellCount), "
                + "row \(cell / field.width), column \(cell % field.width))",
            exitCode: .dataError
        )
    }

    /// Runs the simulation, prints a summary, writes the requested files and saves the run.
    public func run(output: CommandOutput) throws(CommandError) {
        // Check the files to write and the store first: a path that cannot be written, a store
        // that cannot be used or a name that is taken should stop the command before the work,
        // not after it. The store is only read here and held for writing only to save, so other
        // runs, edits and reads of it go on while this one steps.
        try Self.checkOutputPaths(numPyPath, pngPath)
        let path = LabStore.path(option: storePath)
        if !noSave {
            try LabStore.checkBeforeRun(path: path, saveName: replace ? nil : saveName)
        }
        for warning in settingWarnings {
            output.printError(warning)
        }
        let simulation = Simulation(
            model: model,
            parameters: parameters,
            precision: precision,
            unorm8Rule: unorm8Rule,
            boundary: boundary,
            field: initialState,
            threadCount: threads
        )
        let seconds = try SteppingLoop(label: model.name).run(simulation, steps: steps)
        let field = simulation.field
        // Save before printing or writing files, so that output that fails loses no work.
        var savedPath: String?
        if !noSave {
            let record = try RunRecord(simulation: simulation, preset: preset?.name, step: steps)
            LabStore.holdBeforeSaveForTests()
            let store = try LabStore(path: path, access: .create)
            try store.saveRunKeepingWork(record, as: saveName, replace: replace)
            try store.close()
            savedPath = store.path
        }

        let presetText = preset.map { " (\($0.name))" } ?? ""
        let rate = seconds > 0 ? Double(width * height * steps) / seconds / 1e6 : 0
        // Only a rule other than the default is named, as the gallery's command names it.
        let ruleText =
            precision == .unorm8 && unorm8Rule != .current ? " rule \(unorm8Rule.rawValue)" : ""
        output.print(
            "\(model.name)\(presetText), \(width) × \(height), \(steps) steps, "
                + "\(precision.rawValue)\(ruleText), "
                + "\(boundary.rawValue) boundary, \(threads) thread\(threads == 1 ? "" : "s"), "
                + "\(simulation.kernel) kernel: "
                + String(format: "%.3f s (%.1f Mcell/s)", seconds, rate)
        )
        Self.printStatistics(of: field, model: model, output: output)
        try Self.writeFiles(
            field,
            model: model,
            numPyPath: numPyPath,
            pngPath: pngPath,
            output: output
        )

        if let savedPath, let saveName {
            output.print("saved '\(saveName)' at step \(steps) in \(savedPath)")
        }
    }

    /// Checks, before any work, that each of `paths` (those given) can be written: its folder
    /// exists and is writable, and the path is not a folder.
    ///
    /// - Throws: ``CommandError`` (exit 73) naming the path and the reason.
    static func checkOutputPaths(_ paths: String?...) throws(CommandError) {
        let files = FileManager.default
        for case let path? in paths {
            var isFolder: ObjCBool = false
            if files.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue {
                throw CommandError(
                    "cannot write '\(path)': it is a directory",
                    exitCode: .cannotCreate
                )
            }
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
            guard files.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue
            else {
                throw CommandError(
                    "cannot write '\(path)': there is no directory '\(folder)'",
                    exitCode: .cannotCreate
                )
            }
            guard files.isWritableFile(atPath: folder) else {
                throw CommandError(
                    "cannot write '\(path)': the directory '\(folder)' is not writable",
                    exitCode: .cannotCreate
                )
            }
        }
    }

    /// Prints each chemical's minimum, mean and maximum.
    static func printStatistics(of field: Field, model: Model, output: CommandOutput) {
        for (chemical, name) in model.chemicalNames.enumerated() {
            let plane = field.plane(chemical)
            let finite = plane.filter(\.isFinite)
            guard !finite.isEmpty else {
                output.print("  \(name): not a number everywhere (the run blew up)")
                continue
            }
            let mean = finite.reduce(0, +) / Float(finite.count)
            var line = String(
                format: "  %@: min %.6g  mean %.6g  max %.6g",
                name,
                finite.min()!,
                mean,
                finite.max()!
            )
            if finite.count < plane.count {
                line += "  (\(plane.count - finite.count) cells not a number)"
            }
            output.print(line)
        }
    }

    /// Writes the `--npy` and `--png` files asked for.
    static func writeFiles(
        _ field: Field,
        model: Model,
        numPyPath: String?,
        pngPath: String?,
        output: CommandOutput
    ) throws(CommandError) {
        if let numPyPath {
            do {
                try NumPyFormat.write(field, to: numPyPath)
            } catch {
                throw CommandError(error.message, exitCode: .cannotCreate)
            }
            output.print("wrote \(numPyPath)")
        }
        if let pngPath {
            try writePicture(field, model: model, to: pngPath)
            output.print("wrote \(pngPath)")
        }
    }

    /// Writes `field` as a PNG, one pixel per cell, in the original's colours.
    static func writePicture(_ field: Field, model: Model, to path: String) throws(CommandError) {
        let image = try StatePicture.image(of: field, model: model)
        let bytes: [UInt8]
        do {
            bytes = try image.pngBytes()
        } catch {
            throw CommandError(
                "cannot draw the picture for '\(path)': \(error)",
                exitCode: .ioError
            )
        }
        try StatePicture.write(Data(bytes), to: path)
    }
}
