import CommandLineKit
import ReactionDiffusion

/// `rdlab presets [--model <model>]`: lists each model's presets and the parameters they set.
public struct PresetsCommand: Command {
    /// `presets`.
    public static let name = "presets"

    /// The command's help page.
    public static let help = HelpPage(
        overview: "List the models' presets and the parameters each sets.",
        usage: "rdlab presets [--model <model>]",
        options: [
            .option(
                "--model",
                value: "model",
                help: "Only this model's presets: \(RunCommand.modelList)."
            )
        ]
    )

    /// The model whose presets are listed, or `nil` for all.
    public var model: Model?

    /// Parses `[--model <model>]`.
    public init(parsing arguments: inout ArgumentScanner) throws(CommandError) {
        while let option = try arguments.nextOption() {
            switch option {
            case "--model":
                model = try arguments.choice(for: option, from: RunCommand.modelChoices)
            default:
                throw arguments.unknownOption(option)
            }
        }
    }

    /// Prints one block per model: its name, then one line per preset.
    public func run(output: CommandOutput) throws(CommandError) {
        let models = model.map { [$0] } ?? Model.allCases
        for (index, model) in models.enumerated() {
            if index > 0 {
                output.print("")
            }
            output.print("\(model.name) (\(model.chemicalNames.joined(separator: ", ")))")
            let width = model.presets.map(\.name.count).max()! + 2
            for preset in model.presets {
                let values = model.parameterNames.map {
                    "\($0)=\(preset.parameters.value(forName: $0)!)"
                }
                let name = preset.name.padding(toLength: width, withPad: " ", startingAt: 0)
                output.print("  \(name)\(values.joined(separator: " "))")
            }
        }
    }
}
