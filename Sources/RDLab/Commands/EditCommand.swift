import ReactionDiffusion

/// `rdlab edit NAME --set NAME=VALUE …`: changes a saved configuration's parameters.
///
/// The snapshots stay: resuming continues from the latest state with the new parameters, as
/// changing a slider in the original editor did.
public struct EditCommand: Command {
    /// `edit`.
    public static let name = "edit"

    /// The command's help page.
    public static let help = CommandHelp(
        overview: "Change a saved configuration's parameters.",
        usage: "rdlab edit <name> --set <name=value> [--set …] [--force] [--store <path>]",
        arguments: [.init("<name>", "The configuration.")],
        options: [
            .init("--set <name=value>", "Set one parameter, such as f=0.05; may be repeated."),
            .init("--force", "Accept parameters outside the stable range."),
            .init("--store <path>", LabStore.storeOptionHelp),
        ]
    )

    /// The configuration to change.
    public var configurationName: String
    /// The assignments, in order.
    public var assignments: [(String, Float)] = []
    /// Whether `--force` was given.
    public var force = false
    /// The store path from `--store`, if given.
    public var storePath: String?

    /// Parses the name and the assignments.
    public init(parsing arguments: inout ArgumentScanner) throws(CommandError) {
        var names: [String] = []
        while let argument = try arguments.next() {
            switch argument {
            case .positional(let name): names.append(name)
            case .option("--set"):
                assignments.append(try RunCommand.assignment(try arguments.value(for: "--set")))
            case .option("--force"): force = true
            case .option("--store"): storePath = try arguments.value(for: "--store")
            case .option(let option): throw arguments.unknownOption(option)
            }
        }
        configurationName = try ShowCommand.single(names, command: arguments.command)
        guard !assignments.isEmpty else {
            throw .usage("nothing to change; give at least one '--set <name=value>'")
        }
    }

    /// Applies the assignments and saves.
    public func run(output: CommandOutput) throws(CommandError) {
        let store = try LabStore(path: LabStore.path(option: storePath), access: .write)
        let configuration = try store.requireConfiguration(named: configurationName)
        var parameters = configuration.parameters
        let before = configuration.parameters
        if let model = configuration.modelValue {
            try RunCommand.apply(assignments, to: &parameters, model: model)
            // Only the values being changed are checked: a value stored earlier with --force is
            // reported as such, not blamed on this edit.
            let stored = Set(before.stabilityProblems(for: model))
            let problems = parameters.stabilityProblems(for: model)
            let introduced = problems.filter { !stored.contains($0) }
            if !introduced.isEmpty && !force {
                throw .usage("\(introduced.joined(separator: "; ")); pass --force to accept them")
            }
            for problem in problems where stored.contains(problem) {
                output.printError("warning: stored value kept: \(problem)")
            }
        } else {
            for (name, value) in assignments {
                do {
                    try parameters.setValue(value, forName: name)
                } catch {
                    throw .usage(error.message)
                }
            }
        }
        configuration.parameters = parameters
        store.settings.lastOpened = configuration.name
        try store.save()
        try store.close()
        let changes = Parameters.names.compactMap { name -> String? in
            let old = before.value(forName: name)!
            let new = parameters.value(forName: name)!
            return old == new ? nil : "\(name) \(old) → \(new)"
        }
        output.print(
            "edited '\(configurationName)': "
                + (changes.isEmpty ? "no values changed" : changes.joined(separator: ", "))
        )
    }
}
