import CommandLineKit

/// A command of the tool, in the swift-argument-parser style: a static configuration, an
/// initializer that validates the parsed command line, and `run`.
protocol ToolCommand: Sendable {
    /// The command's name, help text, arguments, options and subcommands.
    static var configuration: CommandConfiguration { get }

    /// Creates the command from its parsed command line, checking what the parser cannot.
    ///
    /// - Throws: ``CommandError`` (usually exit code 64) for an invalid combination of arguments.
    init(_ arguments: ParsedArguments, context: CommandContext) throws(CommandError)

    /// Does the work, writing results to the context's output.
    ///
    /// - Returns: The exit code (success unless the command reports a finding such as damage).
    /// - Throws: ``CommandError``, ``ObjectLogStore/StoreError`` or an I/O error; the tool prints
    ///   it as one `error: …` line and exits with its code.
    func run(_ context: CommandContext) throws -> ExitCode
}

/// Where a command writes, and what it knows about its surroundings.
final class CommandContext {
    /// Standard output: the command's results.
    let output: TextOutput
    /// Standard error: `error: …` and `warning: …` lines.
    let errorOutput: TextOutput
    /// The command as typed so far (`objectlog info`), for messages.
    var commandName: String

    init(output: TextOutput, errorOutput: TextOutput, commandName: String) {
        self.output = output
        self.errorOutput = errorOutput
        self.commandName = commandName
    }

    /// Writes a `warning: …` line to standard error.
    func warn(_ message: String) {
        output.flush()
        errorOutput.writeLine("warning: " + Redaction.passwords(in: message))
        errorOutput.flush()
    }
}
