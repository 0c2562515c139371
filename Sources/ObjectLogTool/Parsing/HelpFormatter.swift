/// Renders a command's help in the swift-argument-parser layout: OVERVIEW, USAGE, ARGUMENTS,
/// OPTIONS and SUBCOMMANDS.
enum HelpFormatter {
    /// The column where descriptions start.
    private static let descriptionColumn = 26
    /// The width help text is wrapped to.
    private static let width = 80

    /// The help text of `command`, reached as `path` (such as `["objectlog", "info"]`).
    static func help(for command: any ToolCommand.Type, path: [String]) -> String {
        let configuration = command.configuration
        let commandPath = path.joined(separator: " ")
        var lines: [String] = []
        lines.append(contentsOf: wrap("OVERVIEW: " + configuration.abstract, indent: 0))
        if !configuration.discussion.isEmpty {
            lines.append("")
            for paragraph in configuration.discussion.components(separatedBy: "\n") {
                if paragraph.hasPrefix("  ") {
                    lines.append(paragraph)
                } else {
                    lines.append(contentsOf: wrap(paragraph, indent: 0))
                }
            }
        }
        lines.append("")
        lines.append("USAGE: \(commandPath) \(configuration.usage)")

        if !configuration.arguments.isEmpty {
            lines.append("")
            lines.append("ARGUMENTS:")
            for argument in configuration.arguments {
                lines.append(contentsOf: entry("<\(argument.name)>", argument.help))
            }
        }

        lines.append("")
        lines.append("OPTIONS:")
        for option in configuration.options {
            var label = option.names.reversed().joined(separator: ", ")
            if let valueName = option.valueName { label += " <\(valueName)>" }
            var help = option.help
            if let allowed = option.allowedValues {
                help += " (values: " + allowed.joined(separator: ", ") + ")"
            }
            lines.append(contentsOf: entry(label, help))
        }
        lines.append(contentsOf: entry("-h, --help", "Show help information."))

        if !configuration.subcommands.isEmpty {
            lines.append("")
            lines.append("SUBCOMMANDS:")
            for sub in configuration.subcommands {
                lines.append(contentsOf: entry(sub.configuration.name, sub.configuration.abstract))
            }
            lines.append("")
            lines.append("  See '\(commandPath) help <subcommand>' for detailed help.")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// One `label  description` entry, the description wrapped at ``descriptionColumn``.
    private static func entry(_ label: String, _ description: String) -> [String] {
        let start = "  " + label
        var wrapped = wrap(description, indent: descriptionColumn)
        if start.count + 2 <= descriptionColumn {
            let first = wrapped.removeFirst().dropFirst(descriptionColumn)
            let padding = String(repeating: " ", count: descriptionColumn - start.count)
            return [start + padding + first] + wrapped
        }
        return [start] + wrapped
    }

    /// `text` broken into lines of at most ``width`` characters, each indented by `indent`.
    private static func wrap(_ text: String, indent: Int) -> [String] {
        let prefix = String(repeating: " ", count: indent)
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            if !line.isEmpty && prefix.count + line.count + 1 + word.count > width {
                lines.append(prefix + line)
                line = ""
            }
            line += line.isEmpty ? String(word) : " " + word
        }
        lines.append(prefix + line)
        return lines
    }
}
