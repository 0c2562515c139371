import CommandLineKit

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
    /// - Throws: ``CommandError`` with exit code 64 naming the unknown subcommand or option, the
    ///   missing value or argument, or the unexpected argument.
    static func parse(
        _ arguments: [String],
        root: any ToolCommand.Type
    ) throws(CommandError) -> ParseOutcome {
        var command = root
        var path = [root.configuration.name]
        var remaining = arguments[...]

        // `objectlog help [subcommand…]` is help, like `objectlog subcommand --help`.
        if remaining.first == "help" {
            remaining = remaining.dropFirst()
            for name in remaining {
                command = try subcommand(named: name, of: command, path: path)
                path.append(name)
            }
            return .help(command: command, path: path)
        }

        while !command.configuration.subcommands.isEmpty, let first = remaining.first,
            !first.hasPrefix("-")
        {
            command = try subcommand(named: first, of: command, path: path)
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

    /// The subcommand `name` of `command`, reached as `path`.
    ///
    /// - Throws: ``CommandError`` (usage) when `command` has no such subcommand.
    private static func subcommand(
        named name: String,
        of command: any ToolCommand.Type,
        path: [String]
    ) throws(CommandError) -> any ToolCommand.Type {
        guard
            let sub = command.configuration.subcommands.first(where: {
                $0.configuration.name == name
            })
        else {
            throw CommandError.usage(
                "unknown subcommand '\(name)'",
                command: path.joined(separator: " ")
            )
        }
        return sub
    }

    private static func parseOptions(
        _ tokens: [String],
        for command: any ToolCommand.Type,
        path: [String]
    ) throws(CommandError) -> ParsedArguments {
        let configuration = command.configuration
        let commandName = path.joined(separator: " ")
        var parsed = ParsedArguments()
        var scanner = ArgumentScanner(tokens, command: commandName, conventions: .objectLog)
        while let argument = try scanner.next() {
            switch argument {
            case .positional(let token):
                parsed.positionals.append(token)
            case .option(let name):
                guard let option = configuration.options.first(where: { $0.names.contains(name) })
                else {
                    throw scanner.unknownOption(name)
                }
                guard let valueName = option.valueName else {
                    if scanner.pendingInlineValue != nil {
                        throw CommandError.usage(
                            "option '\(name)' takes no value",
                            command: commandName
                        )
                    }
                    parsed.flags.insert(option.canonicalName)
                    continue
                }
                guard let value = scanner.nextValue() else {
                    throw CommandError.usage(
                        "option '\(name)' needs a value <\(valueName)>",
                        command: commandName
                    )
                }
                if let allowed = option.allowedValues, !allowed.contains(value) {
                    throw CommandError.usage(
                        "'\(value)' is not a valid value for '\(name)' (expected "
                            + allowed.joined(separator: ", ") + ")",
                        command: commandName
                    )
                }
                parsed.values[option.canonicalName] = value
            }
        }

        let required = configuration.arguments.filter { !$0.isOptional }.count
        if parsed.positionals.count < required {
            let missing = configuration.arguments[parsed.positionals.count]
            throw CommandError.usage("missing argument <\(missing.name)>", command: commandName)
        }
        if parsed.positionals.count > configuration.arguments.count {
            let extra = parsed.positionals[configuration.arguments.count]
            let what = configuration.subcommands.isEmpty ? "argument" : "subcommand"
            throw CommandError.usage("unexpected \(what) '\(extra)'", command: commandName)
        }
        return parsed
    }
}

extension ArgumentScanner.Conventions {
    /// `objectlog`'s conventions, swift-argument-parser's: `-5` and `-0.5` are values, and with
    /// short options (`-o`) a value after a space never looks like an option, so that a
    /// forgotten value is reported instead of taking the next option's name.
    static let objectLog = ArgumentScanner.Conventions(
        negativeNumbersAreValues: true,
        valuesMayStartWithSingleDash: false
    )
}
