import CommandLineKit

/// The `objectlog` command-line tool as a library: the executable only calls ``main()``.
///
/// ```swift
/// let output = TextOutput.memory()
/// let errors = TextOutput.memory()
/// let status = ObjectLogTool.run(["info", "app.olog"], output: output, errorOutput: errors)
/// ```
public enum ObjectLogTool {
    /// Runs the tool with the process's arguments on standard output and error.
    ///
    /// Output that cannot be written (a full disk, a closed pipe: SIGPIPE is ignored, so that
    /// is EPIPE) is exit 74 with one line on standard error, once the command has finished.
    ///
    /// - Returns: The status to exit with.
    public static func main() -> Int32 {
        StandardStreams.ignoreBrokenPipeSignal()
        // Buffered: `dump` of many objects then makes few system calls.
        let streams = StandardStreams(buffering: .chunks)
        let status = run(
            Array(CommandLine.arguments.dropFirst()),
            output: streams.output,
            errorOutput: streams.error
        )
        return streams.exitStatus(after: status).rawValue
    }

    /// Runs the tool with `arguments` (without the program name).
    ///
    /// Results go to `output`; help goes to `output` too. Failures print one `error: …` line
    /// to `errorOutput`.
    ///
    /// - Returns: The exit code: 0 success, 1 absent metadata key, 64 usage error, 65 damaged
    ///   data, 66 missing file, 73 cannot create, 74 I/O error or locked store.
    public static func run(
        _ arguments: [String],
        output: TextOutput,
        errorOutput: TextOutput
    ) -> ExitCode {
        let context = CommandContext(
            output: output,
            errorOutput: errorOutput,
            commandName: RootCommand.configuration.name
        )
        do {
            switch try ArgumentParser.parse(arguments, root: RootCommand.self) {
            case .help(let command, let path):
                output.write(command.configuration.helpText(path: path))
                output.flush()
                return .success
            case .run(let command, let path, let parsed):
                context.commandName = path.joined(separator: " ")
                let instance = try command.init(parsed, context: context)
                let status = try instance.run(context)
                output.flush()
                return status
            }
        } catch {
            let failure = CommandError.from(error)
            output.flush()
            errorOutput.writeLine(
                "error: " + Redaction.passwords(in: Formatting.singleLine(failure.message))
            )
            errorOutput.flush()
            return failure.exitCode
        }
    }
}
