import CommandLineKit
import Foundation
import ReactionDiffusion

/// `rdlab edit NAME [--set NAME=VALUE …] [--notes TEXT] [--tag TAG …] [--untag TAG …]`:
/// changes a saved configuration's parameters, notes and tags.
///
/// The snapshots stay: resuming continues from the latest state with the new parameters, as
/// changing a slider in the original editor did.
public struct EditCommand: Command {
    /// `edit`.
    public static let name = "edit"

    /// The command's help page.
    public static let help = HelpPage(
        overview: "Change a saved configuration's parameters, notes or tags.",
        usage: """
            rdlab edit <name> [--set <name=value> ...] [--notes <text>] [--tag <tag> ...] \
            [--untag <tag> ...] [--force] [--store <path|uri>]
            """,
        arguments: [ArgumentDefinition(name: "name", help: "The configuration.")],
        options: [
            .option(
                "--set",
                value: "name=value",
                help: "Set one parameter, such as f=0.05; may be repeated."
            ),
            .option(
                "--notes",
                value: "text",
                help: "Replace the notes (free text; '' clears them)."
            ),
            .option(
                "--tag",
                value: "tag",
                help: "Add a tag (one word: no spaces or commas); may be repeated."
            ),
            .option(
                "--untag",
                value: "tag",
                help: "Remove a tag (ignoring case); may be repeated."
            ),
            .flag("--force", help: "Accept parameters outside the stable range."),
            .store,
        ]
    )

    /// The configuration to change.
    public var configurationName: String
    /// The assignments, in order.
    public var assignments: [(String, Float)] = []
    /// The new notes, if given.
    public var notes: String?
    /// The tags to add.
    public var addedTags: [String] = []
    /// The tags to remove.
    public var removedTags: [String] = []
    /// Whether `--force` was given.
    public var force = false
    /// The store path from `--store`, if given.
    public var storePath: String?

    /// The longest tag accepted.
    static let longestTag = 64

    /// Parses the name and the changes.
    public init(parsing arguments: inout ArgumentScanner) throws(CommandError) {
        var names: [String] = []
        while let option = try arguments.nextOption(collectingPositionals: &names) {
            switch option {
            case "--set":
                assignments.append(try RunCommand.assignment(try arguments.value(for: option)))
            case "--notes":
                guard notes == nil else { throw .usage("'--notes' is given more than once") }
                notes = try arguments.value(for: option)
            case "--tag": addedTags.append(try Self.tag(arguments.value(for: option)))
            case "--untag": removedTags.append(try arguments.value(for: option))
            case "--force": force = true
            case "--store": storePath = try arguments.value(for: option)
            default: throw arguments.unknownOption(option)
            }
        }
        configurationName = try arguments.configurationName(among: names)
        guard !assignments.isEmpty || notes != nil || !addedTags.isEmpty || !removedTags.isEmpty
        else {
            throw .usage(
                "nothing to change; give '--set <name=value>', '--notes <text>', '--tag <tag>' "
                    + "or '--untag <tag>'"
            )
        }
        for tag in addedTags
        where removedTags.contains(where: { $0.lowercased() == tag.lowercased() }) {
            throw .usage("'\(tag)' is both added (--tag) and removed (--untag); give one")
        }
    }

    /// Checks a tag given with `--tag`.
    static func tag(_ text: String) throws(CommandError) -> String {
        guard !text.isEmpty else { throw .usage("a tag cannot be empty") }
        guard
            !text.unicodeScalars.contains(where: {
                CharacterSet.whitespacesAndNewlines.contains($0)
                    || CharacterSet.controlCharacters.contains($0) || $0 == ","
            })
        else {
            throw .usage("a tag is one word, without spaces or commas, not '\(text)'")
        }
        guard text.count <= longestTag else {
            throw .usage("a tag has at most \(longestTag) characters")
        }
        return text
    }

    /// Applies the changes and saves.
    public func run(output: CommandOutput) throws(CommandError) {
        let store = try LabStore(path: LabStore.path(option: storePath), access: .write)
        let configuration = try store.requireConfiguration(named: configurationName)
        var parameters = configuration.parameters
        let before = configuration.parameters
        if !assignments.isEmpty {
            if let model = configuration.modelValue {
                try RunCommand.apply(assignments, to: &parameters, model: model)
                // Only the values being changed are checked: a value stored earlier with --force
                // is reported as such, not blamed on this edit.
                let stored = Set(before.stabilityProblems(for: model))
                let problems = parameters.stabilityProblems(for: model)
                let introduced = problems.filter { !stored.contains($0) }
                if !introduced.isEmpty && !force {
                    throw .usage(
                        "\(introduced.joined(separator: "; ")); pass --force to accept them"
                    )
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
        }
        var changes = Parameters.names.compactMap { name -> String? in
            let old = before.value(forName: name)!
            let new = parameters.value(forName: name)!
            return old == new ? nil : "\(name) \(old) → \(new)"
        }
        if let notes, notes != configuration.notes {
            configuration.notes = notes
            changes.append(notes.isEmpty ? "notes cleared" : "notes set")
        }
        var tags = configuration.tags
        for tag in removedTags {
            guard let index = tags.firstIndex(where: { $0.lowercased() == tag.lowercased() }) else {
                output.printError("warning: '\(configurationName)' has no tag '\(tag)'")
                continue
            }
            changes.append("-\(tags.remove(at: index))")
        }
        for tag in addedTags where !tags.contains(where: { $0.lowercased() == tag.lowercased() }) {
            tags.append(tag)
            changes.append("+\(tag)")
        }
        if tags != configuration.tags {
            configuration.tags = tags
        }
        store.settings.lastOpened = configuration.name
        try store.save()
        try store.close()
        output.print(
            "edited '\(configurationName)': "
                + (changes.isEmpty ? "no values changed" : changes.joined(separator: ", "))
        )
    }
}
