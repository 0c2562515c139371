/// Walks a command's arguments: options (`--steps 10`, `--steps=10`, flags), positional
/// arguments, and a lone `--` after which everything is positional.
///
/// A command's parser loops over ``nextOption()`` (or ``nextOption(collectingPositionals:)``
/// when it takes positional arguments) and reads values as it recognises names, so errors come
/// in the order the arguments were given:
///
/// ```swift
/// var scanner = ArgumentScanner(
///     ["--steps", "10", "--no-save"],
///     command: "rdlab run",
///     conventions: ArgumentScanner.Conventions(
///         negativeNumbersAreValues: false,
///         valuesMayStartWithSingleDash: true
///     )
/// )
/// while let option = try scanner.nextOption() {
///     switch option {
///     case "--steps": steps = try scanner.integer(for: option, in: 0...1_000_000)
///     case "--no-save": noSave = true
///     default: throw scanner.unknownOption(option)
///     }
/// }
/// ```
///
/// The value readers (``value(for:)``, ``integer(for:in:)``, ``choice(for:from:)``) throw
/// ``CommandError``s worded by the kit; a parser with wording of its own reads values with
/// ``nextValue()`` and checks ``pendingInlineValue`` itself.
public struct ArgumentScanner: Sendable {
    /// One command-line argument: an option's name or a positional value.
    public enum Argument: Hashable, Sendable {
        /// An option such as `--steps` (its value, if any, is read with ``value(for:)``).
        case option(String)
        /// A positional argument such as a file's path.
        case positional(String)
    }

    private var arguments: [String]
    private var index = 0
    /// The name of the option returned last.
    private var currentOption = ""
    /// Whether a lone `--` has been passed.
    private var afterSeparator = false
    /// The command as typed, such as `rdlab run`, for messages.
    public let command: String
    /// What counts as an option and as a value.
    public let conventions: Conventions
    /// The value given after `=` in the option returned last (`--steps=10`), while it has not
    /// been read.
    public private(set) var pendingInlineValue: String?

    /// Creates a scanner over `arguments`, which exclude the program's and the command's names.
    ///
    /// - Parameters:
    ///   - arguments: The arguments after the command's name.
    ///   - command: The command as typed, such as `rdlab run`, for messages.
    ///   - conventions: What counts as an option and as a value.
    public init(_ arguments: [String], command: String, conventions: Conventions) {
        self.arguments = arguments
        self.command = command
        self.conventions = conventions
    }

    /// Whether every argument has been consumed.
    public var isAtEnd: Bool { index >= arguments.count }

    /// Returns the next option's name (such as `--steps`), or `nil` at the end.
    ///
    /// - Throws: ``CommandError`` (usage) for a positional argument, which the caller does not
    ///   take, or when the previous option's `=value` was not read.
    public mutating func nextOption() throws(CommandError) -> String? {
        switch try next() {
        case nil: return nil
        case .option(let name): return name
        case .positional(let argument):
            throw .usage("unexpected argument '\(argument)'", command: command)
        }
    }

    /// Returns the next option's name, adding the positional arguments before it to
    /// `positionals`, or `nil` at the end.
    ///
    /// For a command that takes positional arguments among its options:
    ///
    /// ```swift
    /// var names: [String] = []
    /// while let option = try scanner.nextOption(collectingPositionals: &names) {
    ///     switch option {
    ///     case "--json": json = true
    ///     default: throw scanner.unknownOption(option)
    ///     }
    /// }
    /// ```
    ///
    /// - Throws: ``CommandError`` (usage) when the previous option's `=value` was not read.
    public mutating func nextOption(
        collectingPositionals positionals: inout [String]
    ) throws(CommandError) -> String? {
        while let argument = try next() {
            switch argument {
            case .positional(let word): positionals.append(word)
            case .option(let name): return name
            }
        }
        return nil
    }

    /// Returns the next argument, option or positional, or `nil` at the end.
    ///
    /// Everything after a lone `--` is positional, so that values starting with `-` can be
    /// given; so is a lone `-` (standard input, by convention).
    ///
    /// - Throws: ``CommandError`` (usage) when the previous option's `=value` was not read: the
    ///   option takes no value.
    public mutating func next() throws(CommandError) -> Argument? {
        if let value = pendingInlineValue {
            throw .usage("'\(currentOption)' takes no value (got '\(value)')")
        }
        guard index < arguments.count else { return nil }
        let argument = arguments[index]
        index += 1
        if argument == "--" && !afterSeparator {
            afterSeparator = true
            return try next()
        }
        guard !afterSeparator, looksLikeOption(argument) else {
            return .positional(argument)
        }
        if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
            pendingInlineValue = String(argument[argument.index(after: equals)...])
            currentOption = String(argument[..<equals])
        } else {
            currentOption = argument
        }
        return .option(currentOption)
    }

    /// Reads the value of the option returned last: the text after `=`, or else the next
    /// argument if it can be a value (see ``Conventions``).
    ///
    /// - Returns: The value, or `nil` when none follows.
    public mutating func nextValue() -> String? {
        if let value = pendingInlineValue {
            pendingInlineValue = nil
            return value
        }
        guard index < arguments.count, canBeValue(arguments[index]) else { return nil }
        defer { index += 1 }
        return arguments[index]
    }

    /// The error for an option the command does not know:
    /// `unknown option '<option>'; see '<command> --help'`.
    public func unknownOption(_ option: String) -> CommandError {
        .usage("unknown option '\(option)'", command: command)
    }

    /// Whether `argument` is an option's name rather than a value.
    private func looksLikeOption(_ argument: String) -> Bool {
        guard argument.hasPrefix("-"), argument != "-" else { return false }
        if conventions.negativeNumbersAreValues, let second = argument.dropFirst().first,
            second.isNumber || second == "."
        {
            return false
        }
        return true
    }

    /// Whether `argument`, following an option, is that option's value.
    private func canBeValue(_ argument: String) -> Bool {
        conventions.valuesMayStartWithSingleDash
            ? !argument.hasPrefix("--") : !looksLikeOption(argument)
    }
}
