import Foundation
import Testing

@Suite("Help and usage errors")
struct HelpAndUsageTests {
    static let subcommands = [
        "info", "verify", "dump", "history", "compact", "meta", "recover", "repair", "export",
    ]

    @Test(
        "The tool's --help lists every subcommand in the OVERVIEW/USAGE/OPTIONS/SUBCOMMANDS layout"
    )
    func rootHelp() throws {
        let run = try runTool("--help")
        #expect(run.status == 0)
        #expect(run.standardError.isEmpty)
        let text = run.standardOutput
        #expect(text.hasPrefix("OVERVIEW: "))
        #expect(text.contains("\nUSAGE: objectlog <subcommand>\n"))
        #expect(text.contains("\nOPTIONS:\n"))
        #expect(text.contains("\nSUBCOMMANDS:\n"))
        for name in Self.subcommands + ["import"] {
            #expect(text.contains("\n  \(name) "), "subcommand \(name) missing from help")
        }
    }

    @Test(
        "Every subcommand's --help has OVERVIEW, USAGE, ARGUMENTS and OPTIONS",
        arguments: subcommands
    )
    func subcommandHelp(_ name: String) throws {
        let run = try runTool(name, "--help")
        #expect(run.status == 0)
        #expect(run.standardError.isEmpty)
        let text = run.standardOutput
        #expect(text.hasPrefix("OVERVIEW: "))
        #expect(text.contains("\nUSAGE: objectlog \(name) <path>"))
        #expect(text.contains("\nARGUMENTS:\n  <path>"))
        #expect(text.contains("\nOPTIONS:\n"))
        #expect(text.contains("  -h, --help "))
        // `objectlog help NAME` is the same text, and -h after other arguments works too.
        #expect(try runTool("help", name).standardOutput == text)
        #expect(try runTool(name, "some.olog", "-h").standardOutput == text)
    }

    @Test("Each subcommand's help documents its own options")
    func optionsInHelp() throws {
        let expectations = [
            "info": ["--json"], "verify": ["--json"],
            "dump": ["--entity <name>", "--format <format>", "--full-blobs", "ndjson, json"],
            "history": ["--json"], "compact": ["--discard-torn-tail"],
            "meta": ["--type <type>", "string, int, double, bool"],
            "recover": ["-o, --output <new-path>"],
            "export": ["<path> <uri> [--json]", "PGPASSWORD", "exit 73", "exit 74"],
            "import": ["<uri> <path> [--json]", "PGPASSWORD", "exit 66", "exit 73", "exit 74"],
        ]
        for (name, fragments) in expectations {
            let text = try runTool(name, "--help").standardOutput
            for fragment in fragments {
                #expect(text.contains(fragment), "\(name) --help lacks \(fragment)")
            }
        }
    }

    @Test("--version prints a version and exits 0")
    func version() throws {
        let run = try runTool("--version")
        #expect(run.status == 0)
        #expect(run.lines.count == 1)
        #expect(run.lines[0].split(separator: ".").count == 3)
    }

    struct UsageCase: Sendable, CustomTestStringConvertible {
        var arguments: [String]
        var message: String
        var testDescription: String { arguments.joined(separator: " ") }
    }

    static let usageCases: [UsageCase] = [
        UsageCase(arguments: [], message: "error: missing subcommand; see 'objectlog --help'"),
        UsageCase(
            arguments: ["frobnicate", "x.olog"],
            message: "error: unknown subcommand 'frobnicate'; see 'objectlog --help'"
        ),
        UsageCase(
            arguments: ["help", "frobnicate"],
            message: "error: unknown subcommand 'frobnicate'; see 'objectlog --help'"
        ),
        UsageCase(
            arguments: ["info", "x.olog", "--jsn"],
            message: "error: unknown option '--jsn'; see 'objectlog info --help'"
        ),
        UsageCase(
            arguments: ["info"],
            message: "error: missing argument <path>; see 'objectlog info --help'"
        ),
        UsageCase(
            arguments: ["verify", "a.olog", "b.olog"],
            message: "error: unexpected argument 'b.olog'; see 'objectlog verify --help'"
        ),
        UsageCase(
            arguments: ["dump", "x.olog", "--format", "xml"],
            message:
                "error: 'xml' is not a valid value for '--format' (expected ndjson, json); "
                + "see 'objectlog dump --help'"
        ),
        UsageCase(
            arguments: ["dump", "x.olog", "--entity"],
            message: "error: option '--entity' needs a value <name>; see 'objectlog dump --help'"
        ),
        UsageCase(
            arguments: ["history", "x.olog", "--json=yes"],
            message: "error: option '--json' takes no value; see 'objectlog history --help'"
        ),
        UsageCase(
            arguments: ["meta", "x.olog", "frob"],
            message:
                "error: unknown meta action 'frob' (expected get, set or delete); "
                + "see 'objectlog meta --help'"
        ),
        UsageCase(
            arguments: ["meta", "x.olog", "set", "key"],
            message: "error: 'set' needs a <key> and a <value>; see 'objectlog meta --help'"
        ),
        UsageCase(
            arguments: ["meta", "x.olog", "get"],
            message: "error: 'get' needs a <key>; see 'objectlog meta --help'"
        ),
        UsageCase(
            arguments: ["meta", "x.olog", "get", "a", "b"],
            message: "error: unexpected argument 'b'; see 'objectlog meta --help'"
        ),
        UsageCase(
            arguments: ["meta", "x.olog", "set", "n", "abc", "--type", "int"],
            message:
                "error: 'abc' is not an integer (--type int takes a whole number from "
                + "-9223372036854775808 to 9223372036854775807); see 'objectlog meta --help'"
        ),
        UsageCase(
            arguments: ["meta", "x.olog", "set", "n", "1.5.2", "--type=double"],
            message:
                "error: '1.5.2' is not a finite number (--type double); see 'objectlog meta --help'"
        ),
        UsageCase(
            arguments: ["meta", "x.olog", "set", "n", "maybe", "--type", "bool"],
            message:
                "error: 'maybe' is not a Boolean (--type bool takes true or false); "
                + "see 'objectlog meta --help'"
        ),
        UsageCase(
            arguments: ["meta", "x.olog", "set", "n", "1", "--type", "float"],
            message:
                "error: 'float' is not a valid value for '--type' (expected string, int, double, "
                + "bool); see 'objectlog meta --help'"
        ),
        UsageCase(
            arguments: ["meta", "x.olog", "get", "n", "--type", "int"],
            message: "error: --type applies only to 'set'; see 'objectlog meta --help'"
        ),
    ]

    @Test(
        "Usage errors print one error line on stderr, nothing on stdout, and exit 64",
        arguments: usageCases
    )
    func usageError(_ usage: UsageCase) throws {
        let run = try runTool(arguments: usage.arguments)
        #expect(run.status == 64)
        #expect(run.standardOutput.isEmpty)
        #expect(run.standardError == usage.message + "\n")
    }
}
