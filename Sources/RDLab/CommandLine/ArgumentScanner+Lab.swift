import CommandLineKit

extension ArgumentScanner.Conventions {
    /// `rdlab`'s conventions: every option is long, so a value after a space may start with a
    /// single dash (`--notes -x`), and `-5` is an option's name (which no command knows).
    static let lab = ArgumentScanner.Conventions(
        negativeNumbersAreValues: false,
        valuesMayStartWithSingleDash: true
    )
}

extension OptionDefinition {
    /// `--store <path|uri>`, which every command that reads or writes the lab's store takes: a
    /// file, or a PostgreSQL database.
    static let store = OptionDefinition.option(
        "--store",
        value: "path|uri",
        help: LabStore.storeOptionHelp
    )
}

extension ArgumentScanner {
    /// Reads the rest of the command line of a command that takes positional arguments and
    /// `--store <path|uri>` only.
    ///
    /// - Returns: The positional arguments in order, and the store path if given.
    /// - Throws: ``CommandError`` (usage) for any other option or a missing store path.
    mutating func positionalsAndStore() throws(CommandError) -> (
        positionals: [String], storePath: String?
    ) {
        var positionals: [String] = []
        var storePath: String?
        while let option = try nextOption(collectingPositionals: &positionals) {
            guard option == "--store" else { throw unknownOption(option) }
            storePath = try value(for: option)
        }
        return (positionals, storePath)
    }

    /// The one configuration name among `names`, the positional arguments of a command that
    /// takes exactly one.
    ///
    /// - Throws: ``CommandError`` (usage) when there is none or more than one.
    func configurationName(among names: [String]) throws(CommandError) -> String {
        guard let name = names.first else {
            throw .usage("missing the configuration's name; see 'rdlab list' for the saved names")
        }
        guard names.count == 1 else {
            throw .usage("unexpected argument '\(names[1])'", command: command)
        }
        return name
    }
}
