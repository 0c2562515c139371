import CommandLineKit
import Foundation
import ReactionDiffusion

/// `rdlab show NAME [--json] [--png OUT.png] [--npy OUT.npy]`: one configuration in full, and
/// its latest state as files.
///
/// It only reads: the store is opened read-only (no lock, nothing written, not even the
/// last-opened setting), so it works on a read-only store and while another process writes.
public struct ShowCommand: Command {
    /// `show`.
    public static let name = "show"

    /// The command's help page.
    public static let help = HelpPage(
        overview:
            "Show a configuration: its settings, its model's parameters, tags, notes and snapshots.",
        usage:
            "rdlab show <name> [--json] [--png <out.png>] [--npy <out.npy>] [--store <path|uri>]",
        arguments: [
            ArgumentDefinition(
                name: "name",
                help: "The configuration ('autosave' is the last run)."
            )
        ],
        options: [
            .flag("--json", help: "Print JSON instead of text."),
            .option(
                "--png",
                value: "out.png",
                help: "Write the latest state as a picture, one pixel per cell."
            ),
            .option(
                "--npy",
                value: "out.npy",
                help: "Write the latest state as a float32 .npy file."
            ),
            .store,
        ]
    )

    /// The configuration's name.
    public var configurationName: String
    /// Whether to print JSON.
    public var json = false
    /// Where to write the latest state as a picture, if anywhere.
    public var pngPath: String?
    /// Where to write the latest state as `.npy`, if anywhere.
    public var numPyPath: String?
    /// The store path from `--store`, if given.
    public var storePath: String?

    /// Parses the name and options.
    public init(parsing arguments: inout ArgumentScanner) throws(CommandError) {
        var names: [String] = []
        while let option = try arguments.nextOption(collectingPositionals: &names) {
            switch option {
            case "--json": json = true
            case "--png": pngPath = try arguments.value(for: option)
            case "--npy": numPyPath = try arguments.value(for: option)
            case "--store": storePath = try arguments.value(for: option)
            default: throw arguments.unknownOption(option)
            }
        }
        configurationName = try arguments.configurationName(among: names)
    }

    /// Prints the configuration and writes the files.
    public func run(output: CommandOutput) throws(CommandError) {
        try RunCommand.checkOutputPaths(numPyPath, pngPath)
        let store = try LabStore(
            path: LabStore.path(option: storePath),
            access: .read,
            warn: output.printError
        )
        let configuration = try store.requireConfiguration(named: configurationName)
        if pngPath != nil || numPyPath != nil {
            guard let snapshot = configuration.latestSnapshot, let model = configuration.modelValue
            else {
                throw CommandError(
                    "'\(configurationName)' has no saved state to write",
                    exitCode: .dataError
                )
            }
            try RunCommand.writeFiles(
                try snapshot.field(),
                model: model,
                numPyPath: numPyPath,
                pngPath: pngPath,
                output: json
                    ? CommandOutput(print: { _ in }, printError: output.printError) : output
            )
        }
        if json {
            output.print(LabFormat.json(configuration, snapshots: true).labText)
        } else {
            printText(configuration, output: output)
        }
        try store.close()
    }

    private func printText(_ configuration: Configuration, output: CommandOutput) {
        let model = configuration.modelValue
        let preset = configuration.preset.map { " (preset \($0))" } ?? ""
        output.print(
            "name:        \(configuration.name)\(configuration.autoSaved ? " (last run)" : "")"
        )
        output.print("model:       \(model?.displayName ?? configuration.model)\(preset)")
        output.print(
            "grid:        \(configuration.width) × \(configuration.height), "
                + "\(configuration.precision), \(configuration.boundary) boundary"
        )
        output.print("parameters:  \(LabFormat.parameters(configuration.parameters, model: model))")
        output.print(
            "tags:        \(configuration.tags.isEmpty ? "(none)" : configuration.tags.joined(separator: ", "))"
        )
        let notes = configuration.notes.split(separator: "\n", omittingEmptySubsequences: false)
        if configuration.notes.isEmpty {
            output.print("notes:       (none)")
        } else {
            output.print("notes:       \(notes[0])")
            for line in notes.dropFirst() {
                output.print("             \(line)")
            }
        }
        output.print("created:     \(LabFormat.date(configuration.created))")
        output.print("modified:    \(LabFormat.date(configuration.modified))")
        output.print("thumbnail:   \(configuration.thumbnail?.count ?? 0) bytes of PNG")
        let snapshots = configuration.snapshots.sorted { $0.step < $1.step }
        output.print("snapshots:   \(snapshots.count)")
        for snapshot in snapshots {
            output.print(
                "  step \(snapshot.step)  \(LabFormat.date(snapshot.savedAt))  "
                    + "\(snapshot.state.count) bytes of state"
                    + (snapshot.precision == Precision.unorm8.rawValue
                        ? ", unorm8 rule \(snapshot.unorm8Rule)" : "")
            )
        }
    }
}
