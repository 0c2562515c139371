import CommandLineKit

extension HelpLayout {
    /// The layout of `objectlog`'s help: descriptions at column 26, everything wrapped to 80
    /// columns.
    static let objectLog = HelpLayout(labelColumn: .fixed(width: 24), lineWidth: 80)
}

extension CommandConfiguration {
    /// The help text of the command, reached as `path` (such as `["objectlog", "info"]`).
    func helpText(path: [String]) -> String {
        let commandPath = path.joined(separator: " ")
        let page = HelpPage(
            overview: abstract,
            discussion: discussion,
            usage: "\(commandPath) \(usage)",
            arguments: arguments,
            options: options,
            subcommands: subcommands.map {
                HelpEntry($0.configuration.name, $0.configuration.abstract)
            },
            closingNote: subcommands.isEmpty
                ? nil : "  See '\(commandPath) help <subcommand>' for detailed help."
        )
        return page.text(layout: .objectLog)
    }
}
