import CommandLineKit

extension StandardStreams {
    /// The process's standard output and error as `rdlab` writes them: each line at once, so
    /// that results, notes on standard error and the progress line of a run appear in the order
    /// they were written.
    static let lab = StandardStreams(buffering: .none)
}

extension CommandOutput {
    /// Lines to the process's standard output and standard error, which remember a failed
    /// write rather than trap (see ``RDLab/main(arguments:)``).
    public static let standard = CommandOutput(
        print: { line in StandardStreams.lab.output.write(line + "\n") },
        printError: { line in StandardStreams.lab.error.write(line + "\n") }
    )
}
