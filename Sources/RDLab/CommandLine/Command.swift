import CommandLineKit

/// One command of a tool: how it is described, parsed and run.
///
/// A command is a value built from its arguments by ``init(parsing:)`` (which checks everything
/// that can be checked without doing the work) and then ``run(output:)``. To add a command,
/// conform a type and list it in its parent's subcommands; the parent handles `--help`.
///
/// ```swift
/// struct HelloCommand: Command {
///     static let name = "hello"
///     static let help = HelpPage(overview: "Says hello.", usage: "rdlab hello")
///     init(parsing arguments: inout ArgumentScanner) throws(CommandError) {
///         if let option = try arguments.nextOption() { throw arguments.unknownOption(option) }
///     }
///     func run(output: CommandOutput) throws(CommandError) { output.print("hello") }
/// }
/// ```
public protocol Command {
    /// The name the command is invoked by, such as `run`.
    static var name: String { get }
    /// The command's help page.
    static var help: HelpPage { get }
    /// Parses and validates the command's arguments.
    ///
    /// - Throws: ``CommandError`` (usually usage, exit 64) for anything wrong with them.
    init(parsing arguments: inout ArgumentScanner) throws(CommandError)
    /// Does the work, writing results to `output`.
    func run(output: CommandOutput) throws(CommandError)
}

/// Where a command writes: standard output for results, standard error for notes and errors.
public struct CommandOutput: Sendable {
    /// Writes one line of results.
    public var print: @Sendable (String) -> Void
    /// Writes one line of diagnostics.
    public var printError: @Sendable (String) -> Void

    /// Creates an output with the given writers.
    public init(
        print: @escaping @Sendable (String) -> Void,
        printError: @escaping @Sendable (String) -> Void
    ) {
        self.print = print
        self.printError = printError
    }
}
