import CommandLineKit
import Foundation
import Testing

@testable import ObjectLogTool

@Suite("Parser and progress bar")
struct InProcessTests {
    @Test("Options take values with a space or '=', '--' ends options, negative numbers are values")
    func parser() throws {
        let outcome = try ArgumentParser.parse(
            ["meta", "s.olog", "set", "k", "-5", "--type=int"],
            root: RootCommand.self
        )
        guard case .run(let command, let path, let parsed) = outcome else {
            Issue.record("expected a command to run")
            return
        }
        #expect(command.configuration.name == MetaCommand.configuration.name)
        #expect(path == ["objectlog", "meta"])
        #expect(parsed.positionals == ["s.olog", "set", "k", "-5"])
        #expect(parsed.value("--type") == "int")

        let ended = try ArgumentParser.parse(
            ["meta", "s.olog", "set", "k", "--type", "string", "--", "--json"],
            root: RootCommand.self
        )
        guard case .run(_, _, let endedParsed) = ended else {
            Issue.record("expected a command to run")
            return
        }
        #expect(endedParsed.positionals == ["s.olog", "set", "k", "--json"])
        #expect(!endedParsed.flag("--json"))

        let alias = try ArgumentParser.parse(["recover", "a", "-o", "b"], root: RootCommand.self)
        guard case .run(_, _, let aliasParsed) = alias else {
            Issue.record("expected a command to run")
            return
        }
        #expect(aliasParsed.value("--output") == "b")
    }

    @Test("The progress bar draws only on a terminal, and only after the delay")
    func progressBar() {
        let start = ContinuousClock.now
        let pipe = TextOutput.memory()
        let notTerminal = ProgressBar(output: pipe, isTerminal: false, start: start)
        notTerminal.update(0.5, now: start + .seconds(5))
        notTerminal.finish()
        #expect(pipe.capturedText.isEmpty)

        let terminal = TextOutput.memory()
        let bar = ProgressBar(output: terminal, isTerminal: true, start: start, width: 10)
        bar.update(0.2, now: start + .milliseconds(500))
        #expect(terminal.capturedText.isEmpty, "nothing before one second")
        bar.update(0.5, now: start + .milliseconds(1500))
        #expect(terminal.capturedText == "\r[#####.....]  50%")
        #expect(bar.isShowing)
        bar.finish()
        #expect(terminal.capturedText.hasSuffix("\r" + String(repeating: " ", count: 17) + "\r"))
        #expect(!bar.isShowing)
    }

    @Test("The library entry point reports errors the same way as the executable")
    func libraryEntryPoint() {
        let output = TextOutput.memory()
        let errors = TextOutput.memory()
        let status = ObjectLogTool.run(
            ["info", "/nonexistent/x.olog"],
            output: output,
            errorOutput: errors
        )
        #expect(status == .noInput)
        #expect(output.capturedText.isEmpty)
        #expect(errors.capturedText == "error: /nonexistent/x.olog: no store file at this path\n")
    }
}
