import CommandLineKit
import Testing

@Suite("Help pages")
struct HelpPageTests {
    static let page = HelpPage(
        overview: "Copy a store to a new file and say what was copied, in detail.",
        usage: "tool copy <path> [--output <new-path>] [--format <format>]",
        arguments: [ArgumentDefinition(name: "path", help: "The store file.")],
        options: [
            .option("--output", "-o", value: "new-path", help: "Where to write the copy."),
            .option(
                "--format",
                value: "format",
                help: "How to print what was copied.",
                allowedValues: ["text", "json"]
            ),
            .flag("--verbose", help: "Say more.\nMuch more."),
        ]
    )

    @Test("Labels show short names first and the value; allowed values follow the help")
    func entries() {
        let output = Self.page.options[0].helpEntry
        #expect(output.label == "-o, --output <new-path>")
        #expect(output.description == "Where to write the copy.")
        #expect(
            Self.page.options[1].helpEntry.description
                == "How to print what was copied. (values: text, json)"
        )
        #expect(Self.page.options[2].helpEntry.label == "--verbose")
        #expect(Self.page.options[0].canonicalName == "--output")
        #expect(Self.page.arguments[0].helpEntry == HelpEntry("<path>", "The store file."))
    }

    @Test("A fixed column with wrapping: long labels stand alone, text wraps at the width")
    func fixedAndWrapped() {
        let text = Self.page.text(layout: HelpLayout(labelColumn: .fixed(width: 14), lineWidth: 40))
        #expect(
            text == """
                OVERVIEW: Copy a store to a new file and
                say what was copied, in detail.

                USAGE: tool copy <path> [--output <new-path>] [--format <format>]

                ARGUMENTS:
                  <path>        The store file.

                OPTIONS:
                  -o, --output <new-path>
                                Where to write the copy.
                  --format <format>
                                How to print what was
                                copied. (values: text,
                                json)
                  --verbose     Say more.\nMuch more.
                  -h, --help    Show help information.

                """
        )
    }

    @Test("A fitted column without wrapping: each section lines up on its own labels")
    func fittedAsWritten() {
        var page = Self.page
        page.discussion = "A paragraph.\n  an example, as written"
        page.subcommands = [HelpEntry("all", "Copy everything."), HelpEntry("some", "Copy some.")]
        page.closingNote = "  See 'tool help <subcommand>' for detailed help."
        let text = page.text(layout: HelpLayout(labelColumn: .fitted(maximumWidth: 20)))
        #expect(
            text == """
                OVERVIEW: Copy a store to a new file and say what was copied, in detail.

                A paragraph.
                  an example, as written

                USAGE: tool copy <path> [--output <new-path>] [--format <format>]

                ARGUMENTS:
                  <path>  The store file.

                OPTIONS:
                  -o, --output <new-path>
                                      Where to write the copy.
                  --format <format>   How to print what was copied. (values: text, json)
                  --verbose           Say more.
                                      Much more.
                  -h, --help          Show help information.

                SUBCOMMANDS:
                  all   Copy everything.
                  some  Copy some.

                  See 'tool help <subcommand>' for detailed help.

                """
        )
    }

    @Test("Empty sections are left out; OPTIONS always lists help")
    func minimal() {
        let text = HelpPage(overview: "Say hello.", usage: "tool hello")
            .text(layout: HelpLayout(labelColumn: .fitted(maximumWidth: 28)))
        #expect(
            text == """
                OVERVIEW: Say hello.

                USAGE: tool hello

                OPTIONS:
                  -h, --help  Show help information.

                """
        )
    }
}
