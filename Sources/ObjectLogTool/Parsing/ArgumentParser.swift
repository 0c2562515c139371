/// What the command line asked for: to run a command with its arguments, or to print help.
enum ParseOutcome {
    /// Run `command` with `arguments`; `path` is the command's names from the root.
    case run(command: any ToolCommand.Type, path: [String], arguments: ParsedArguments)
    /// Print the help of `command`.
    case help(command: any ToolCommand.Type, path: [String])
}

/// Splits a command line into a command and its ``ParsedArguments``, following the commands'
/// ``CommandConfiguration``s.
///
/// The conventions are swift-argument-parser's: `--name value` or `--name=value`, `--` ends the
/// options, `-h`/`--help` anywhere asks for help, and a token that looks like a negative number
/// (`-5`, `-0.5`) is a positional argument, not an option.
enum ArgumentParser {
    /// Parses `arguments` (without the program name) for `root` and its subcommands.
    ///
    /// - Throws: ``ToolError`` with exit code 64 naming the unknown subcommand or option, the
    ///   missing value or argument, or the unexpected argument.
    static func parse(
        _ arguments: [String],
        root: any ToolCommand.Type
    ) throws(ToolError) -> ParseOutcome {
        var command = root
        var path = [root.configuration.name]
        var remaining = arguments[...]

        // `objectlog help [subcommand…]` is help, like `objectlog subcommand --help`.
        if remaining.first == "help" {
            remaining = remaining.dropFirst()
            for name in remaining {
                guard let sub = subcommand(named: name, of: command) else {
                    throw ToolError.usage(
                        "unknown subcommand '\(name)'",
                        command: path.joined(separator: " ")
                    )
                }
                command = sub
                path.append(name)
            }
            return .help(command: command, path: path)
        }

        while !command.configuration.subcommands.isEmpty, let first = remaining.first,
            !first.hasPrefix("-")
        {
            guard let sub = subcommand(named: first, of: command) else {
                throw ToolError.usage(
                    "unknown subcommand '\(first)'",
                    command: path.joined(separator: " ")
                )
            }
            command = sub
            path.append(first)
            remaining = remaining.dropFirst()
        }
        if remaining.prefix(while: { $0 != "--" }).contains(where: { $0 == "-h" || $0 == "--help" })
        {
            return .help(command: command, path: path)
        }
        let parsed = try parseOptions(Array(remaining), for: command, path: path)
        return .run(command: command, path: path, arguments: parsed)
    }

    private static func subcommand(
        named name: String,
        of command: any ToolCommand.Type
    ) -> (any ToolCommand.Type)? {
        command.configuration.subcommands.first { $0.configuration.name == name }
    }

    private static func parseOptions(
        _ tokens: [String],
        for command: any ToolCommand.Type,
        path: [String]
    ) throws(ToolError) -> ParsedArguments {
        let configuration = command.configuration
        let commandName = path.joined(separator: " ")
        var parsed = ParsedArguments()
        var index = 0
        var optionsEnded = false
        while index < tokens.count {
            let token = tokens[index]
            index += 1
            if optionsEnded || !isOption(token) {
                parsed.positionals.append(token)
                continue
            }
            if token == "--" {
                optionsEnded = true
                continue
            }
            var name = token
            var inlineValue: String?
            if let equals = token.firstIndex(of: "="), token.hasPrefix("--") {
                name = String(token[..<equals])
                inlineValue = String(token[token.index(after: equals)...])
            }
            guard let option = configuration.options.first(where: { $0.names.contains(name) })
            else {
                throw ToolError.usage("unknown option '\(name)'", command: commandName)
            }
            guard let valueName = option.valueName else {
                if inlineValue != nil {
                    throw ToolError.usage(
                        "option '\(name)' takes no value",
                        command: commandName
                    )
                }
                parsed.flags.insert(option.canonicalName)
                continue
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else if index < tokens.count, !isOption(tokens[index]) {
                value = tokens[index]
                index += 1
            } else {
                throw ToolError.usage(
                    "option '\(name)' needs a value <\(valueName)>",
                    command: commandName
                )
            }
            if let allowed = option.allowedValues, !allowed.contains(value) {
                throw ToolError.usage(
                    "'\(value)' is not a valid value for '\(name)' (expected "
                        + allowed.joined(separator: ", ") + ")",
                    command: commandName
                )
            }
            parsed.values[option.canonicalName] = value
        }

        let required = configuration.arguments.filter { !$0.isOptional }.count
        if parsed.positionals.count < required {
            let missing = configuration.arguments[parsed.positionals.count]
            throw ToolError.usage("missing argument <\(missing.name)>", command: commandName)
        }
        if parsed.positionals.count > configuration.arguments.count {
            let extra = parsed.positionals[configuration.arguments.count]
            let what = configuration.subcommands.isEmpty ? "argument" : "subcommand"
            throw ToolError.usage("unexpected \(what) '\(extra)'", command: commandName)
        }
        return parsed
    }

    /// Whether `token` is an option name rather than a value: it starts with `-`, is not `-`
    /// alone (standard input, by convention) and is not a negative number.
    private static func isOption(_ token: String) -> Bool {
        guard token.hasPrefix("-"), token.count > 1 else { return false }
        let rest = token.dropFirst()
        if let first = rest.first, first.isNumber || first == "." { return false }
        return true
    }
}
