/// Walks a command's arguments: options with values (`--steps 10` or `--steps=10`), flags, and
/// positional arguments, refusing what a command does not know.
///
/// A command's parser loops over ``nextOption()`` and asks for values as it recognises names:
///
/// ```swift
/// var scanner = ArgumentScanner(["--steps", "10", "--no-save"], command: "rdlab run")
/// while let option = try scanner.nextOption() {
///     switch option {
///     case "--steps": steps = try scanner.integer(for: option, in: 0...1_000_000)
///     case "--no-save": noSave = true
///     default: throw scanner.unknownOption(option)
///     }
/// }
/// ```
public struct ArgumentScanner: Sendable {
    private var arguments: [String]
    private var index = 0
    /// The value given after `=` in the option just returned, if any.
    private var inlineValue: String?
    /// The name of the option just returned.
    private var currentOption = ""
    /// Whether a lone `--` has been passed.
    private var afterSeparator = false
    /// The command's full name for messages, such as `rdlab run`.
    public let command: String

    /// Creates a scanner over `arguments`, which exclude the program and command names.
    public init(_ arguments: [String], command: String) {
        self.arguments = arguments
        self.command = command
    }

    /// Whether every argument has been consumed.
    public var isAtEnd: Bool { index >= arguments.count }

    /// One command-line argument: an option's name or a positional value.
    public enum Argument: Hashable, Sendable {
        /// An option such as `--steps` (its value, if any, is read with ``value(for:)``).
        case option(String)
        /// A positional argument such as a configuration's name.
        case positional(String)
    }

    /// Returns the next option's name (such as `--steps`), or `nil` at the end.
    ///
    /// - Throws: ``CommandError`` (usage) for a positional argument, which these commands do not
    ///   take, or when the previous option's `=value` was not consumed.
    public mutating func nextOption() throws(CommandError) -> String? {
        switch try next() {
        case nil: return nil
        case .option(let name): return name
        case .positional(let argument):
            throw .usage("unexpected argument '\(argument)'; see '\(command) --help'")
        }
    }

    /// Returns the next argument, option or positional, or `nil` at the end.
    ///
    /// Everything after a lone `--` is positional, so names that start with `-` can be given.
    ///
    /// - Throws: ``CommandError`` (usage) when the previous option's `=value` was not consumed.
    public mutating func next() throws(CommandError) -> Argument? {
        if let value = inlineValue {
            throw .usage("'\(currentOption)' takes no value (got '\(value)')")
        }
        guard index < arguments.count else { return nil }
        let argument = arguments[index]
        index += 1
        if argument == "--" && !afterSeparator {
            afterSeparator = true
            return try next()
        }
        guard !afterSeparator, argument.hasPrefix("-"), argument != "-" else {
            return .positional(argument)
        }
        if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
            inlineValue = String(argument[argument.index(after: equals)...])
            currentOption = String(argument[..<equals])
        } else {
            currentOption = argument
        }
        return .option(currentOption)
    }

    /// Returns the value of `option`: the text after `=`, or else the next argument.
    ///
    /// - Throws: ``CommandError`` (usage) when no value follows.
    public mutating func value(for option: String) throws(CommandError) -> String {
        if let value = inlineValue {
            inlineValue = nil
            return value
        }
        guard index < arguments.count, !arguments[index].hasPrefix("--") else {
            throw .usage("missing value for '\(option)'")
        }
        defer { index += 1 }
        return arguments[index]
    }

    /// Returns the value of `option` as an integer within `range`.
    ///
    /// - Throws: ``CommandError`` (usage) when the value is missing, not an integer or out of range.
    public mutating func integer(
        for option: String,
        in range: ClosedRange<Int>
    ) throws(CommandError) -> Int {
        let text = try value(for: option)
        guard let number = Int(text) else {
            throw .usage("'\(option)' needs an integer, not '\(text)'")
        }
        guard range.contains(number) else {
            throw .usage(
                "'\(option)' must be between \(range.lowerBound) and \(range.upperBound), not \(number)"
            )
        }
        return number
    }

    /// Returns the value of `option` when it is one of `choices`.
    ///
    /// - Throws: ``CommandError`` (usage) naming the accepted values otherwise.
    public mutating func choice<Choice>(
        for option: String,
        from choices: [(String, Choice)]
    ) throws(CommandError) -> Choice {
        let text = try value(for: option)
        if let match = choices.first(where: { $0.0 == text.lowercased() }) {
            return match.1
        }
        let names = choices.map(\.0)
        let list = names.dropLast().joined(separator: ", ") + " or " + names.last!
        throw .usage(
            "unknown value '\(text)' for '\(option)'\(Suggestion.didYouMean(text, among: names)); "
                + "use \(list)"
        )
    }

    /// Reads the rest of the command line of a command that takes positional arguments and
    /// `--store PATH` only.
    ///
    /// - Returns: The positional arguments in order, and the store path if given.
    /// - Throws: ``CommandError`` (usage) for any other option or a missing store path.
    public mutating func positionalsAndStore() throws(CommandError) -> (
        positionals: [String], storePath: String?
    ) {
        var positionals: [String] = []
        var storePath: String?
        while let argument = try next() {
            switch argument {
            case .positional(let word): positionals.append(word)
            case .option("--store"): storePath = try value(for: "--store")
            case .option(let option): throw unknownOption(option)
            }
        }
        return (positionals, storePath)
    }

    /// The error for an option the command does not know.
    public func unknownOption(_ option: String) -> CommandError {
        .usage("unknown option '\(option)'; see '\(command) --help'")
    }
}
