extension ArgumentScanner {
    /// Returns the value of `option`: the text after `=`, or else the next argument.
    ///
    /// - Throws: ``CommandError`` (usage) when no value follows:
    ///   `missing value for '<option>'`.
    public mutating func value(for option: String) throws(CommandError) -> String {
        guard let value = nextValue() else {
            throw .usage("missing value for '\(option)'")
        }
        return value
    }

    /// Returns the value of `option` as an integer within `range`.
    ///
    /// - Throws: ``CommandError`` (usage) when the value is missing, not an integer or out of
    ///   range.
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

    /// Returns the value of `option` when it names one of `choices`, ignoring case.
    ///
    /// - Parameters:
    ///   - option: The option, for messages.
    ///   - choices: The accepted names, in lowercase, with what each stands for.
    /// - Returns: What the given name stands for.
    /// - Throws: ``CommandError`` (usage) naming the accepted values, with a suggestion when the
    ///   value is close to one (``Suggestion``).
    public mutating func choice<Choice>(
        for option: String,
        from choices: [(String, Choice)]
    ) throws(CommandError) -> Choice {
        let text = try value(for: option)
        if let match = choices.first(where: { $0.0 == text.lowercased() }) {
            return match.1
        }
        let names = choices.map(\.0)
        let list = names.dropLast().joined(separator: ", ") + " or " + (names.last ?? "")
        throw .usage(
            "unknown value '\(text)' for '\(option)'\(Suggestion.didYouMean(text, among: names)); "
                + "use \(list)"
        )
    }
}
