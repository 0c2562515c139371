import CommandLineKit
import Testing

@Suite("Option scanning")
struct ArgumentScannerTests {
    /// Long options only: a value may start with one dash, `-5` is an option.
    static let longOnly = ArgumentScanner.Conventions(
        negativeNumbersAreValues: false,
        valuesMayStartWithSingleDash: true
    )
    /// With short options: `-5` is a value, a value never looks like an option.
    static let withShortOptions = ArgumentScanner.Conventions(
        negativeNumbersAreValues: true,
        valuesMayStartWithSingleDash: false
    )

    /// Every argument of `arguments`, with the values of the options named in `valued`.
    static func scan(
        _ arguments: [String],
        valued: Set<String> = [],
        conventions: ArgumentScanner.Conventions = longOnly
    ) throws(CommandError) -> [String] {
        var scanner = ArgumentScanner(arguments, command: "tool run", conventions: conventions)
        var seen: [String] = []
        while let argument = try scanner.next() {
            switch argument {
            case .positional(let word): seen.append("positional " + word)
            case .option(let name) where valued.contains(name):
                seen.append(name + " = " + (try scanner.value(for: name)))
            case .option(let name): seen.append("flag " + name)
            }
        }
        #expect(scanner.isAtEnd)
        return seen
    }

    /// The error of reading the first option's value of `arguments` with `read`, if any.
    static func failure<Value>(
        _ arguments: [String],
        _ read: (inout ArgumentScanner) throws -> Value
    ) -> CommandError? {
        var scanner = ArgumentScanner(arguments, command: "tool run", conventions: longOnly)
        do {
            _ = try scanner.nextOption()
            _ = try read(&scanner)
            return nil
        } catch {
            return error as? CommandError
        }
    }

    @Test("Values follow a space or '='; '--' ends the options once; a lone '-' is positional")
    func values() throws {
        #expect(
            try Self.scan(
                [
                    "a", "--steps", "10", "--model=gray=scott", "--json", "-", "--", "--x", "--",
                    "-y",
                ],
                valued: ["--steps", "--model"]
            ) == [
                "positional a", "--steps = 10", "--model = gray=scott", "flag --json",
                "positional -", "positional --x", "positional --", "positional -y",
            ]
        )
        #expect(try Self.scan(["--notes="], valued: ["--notes"]) == ["--notes = "])
        // '=' splits long options only.
        #expect(try Self.scan(["-o=x"]) == ["flag -o=x"])
    }

    @Test("Negative numbers and dashed values follow the conventions")
    func conventions() throws {
        #expect(try Self.scan(["-5", "-.5"]) == ["flag -5", "flag -.5"])
        #expect(
            try Self.scan(["-5", "-.5", "-x"], conventions: Self.withShortOptions)
                == ["positional -5", "positional -.5", "flag -x"]
        )
        #expect(try Self.scan(["--notes", "-x"], valued: ["--notes"]) == ["--notes = -x"])
        #expect(
            try Self.scan(
                ["--steps", "-5"],
                valued: ["--steps"],
                conventions: Self.withShortOptions
            )
                == ["--steps = -5"]
        )
        #expect(throws: CommandError.usage("missing value for '--notes'")) {
            try Self.scan(
                ["--notes", "-x"],
                valued: ["--notes"],
                conventions: Self.withShortOptions
            )
        }
        for conventions in [Self.longOnly, Self.withShortOptions] {
            #expect(throws: CommandError.usage("missing value for '--notes'")) {
                try Self.scan(["--notes", "--json"], valued: ["--notes"], conventions: conventions)
            }
        }
    }

    @Test("Scanning errors name the option and the command, in the order given")
    func errors() {
        #expect(throws: CommandError.usage("missing value for '--steps'")) {
            try Self.scan(["--steps"], valued: ["--steps"])
        }
        #expect(throws: CommandError.usage("'--json' takes no value (got 'yes')")) {
            try Self.scan(["--json=yes"])
        }
        var scanner = ArgumentScanner(["extra"], command: "tool run", conventions: Self.longOnly)
        #expect(throws: CommandError.usage("unexpected argument 'extra'; see 'tool run --help'")) {
            try scanner.nextOption()
        }
        #expect(
            scanner.unknownOption("--bogus")
                == CommandError.usage("unknown option '--bogus'; see 'tool run --help'")
        )
    }

    @Test("Positional arguments among options are collected in order")
    func collectingPositionals() throws {
        var scanner = ArgumentScanner(
            ["a", "--json", "b", "--store", "s", "c", "--", "--d"],
            command: "tool show",
            conventions: Self.longOnly
        )
        var positionals: [String] = []
        var options: [String] = []
        while let option = try scanner.nextOption(collectingPositionals: &positionals) {
            options.append(option)
            if option == "--store" { options.append(try scanner.value(for: option)) }
        }
        #expect(positionals == ["a", "b", "c", "--d"])
        #expect(options == ["--json", "--store", "s"])
    }

    @Test("A caller with its own wording reads values and inline values itself")
    func ownWording() throws {
        var scanner = ArgumentScanner(
            ["--json=1", "--type", "-x"],
            command: "tool",
            conventions: Self.withShortOptions
        )
        #expect(try scanner.next() == .option("--json"))
        #expect(scanner.pendingInlineValue == "1")
        #expect(scanner.nextValue() == "1")
        #expect(scanner.pendingInlineValue == nil)
        #expect(try scanner.next() == .option("--type"))
        #expect(scanner.nextValue() == nil, "-x is an option, not a value")
        #expect(try scanner.next() == .option("-x"))
        #expect(try scanner.next() == nil)
    }

    @Test("Integers are checked against their range, choices against their names")
    func typedValues() throws {
        var scanner = ArgumentScanner(
            ["--steps", "12", "--model", "GRAY-SCOTT"],
            command: "tool run",
            conventions: Self.longOnly
        )
        #expect(try scanner.nextOption() == "--steps")
        #expect(try scanner.integer(for: "--steps", in: 0...100) == 12)
        #expect(try scanner.nextOption() == "--model")
        let choices = [("gray-scott", 1), ("fitzhugh-nagumo", 2), ("belousov-zhabotinsky", 3)]
        #expect(try scanner.choice(for: "--model", from: choices) == 1)

        #expect(
            Self.failure(["--steps", "x"]) { try $0.integer(for: "--steps", in: 0...100) }
                == .usage("'--steps' needs an integer, not 'x'")
        )
        #expect(
            Self.failure(["--steps=101"]) { try $0.integer(for: "--steps", in: 0...100) }
                == .usage("'--steps' must be between 0 and 100, not 101")
        )
        #expect(
            Self.failure(["--model", "gray-scot"]) { try $0.choice(for: "--model", from: choices) }
                == .usage(
                    "unknown value 'gray-scot' for '--model' (did you mean 'gray-scott'?); "
                        + "use gray-scott, fitzhugh-nagumo or belousov-zhabotinsky"
                )
        )
        #expect(
            Self.failure(["--model", "xyz"]) { try $0.choice(for: "--model", from: choices) }
                == .usage(
                    "unknown value 'xyz' for '--model'; "
                        + "use gray-scott, fitzhugh-nagumo or belousov-zhabotinsky"
                )
        )
    }
}
