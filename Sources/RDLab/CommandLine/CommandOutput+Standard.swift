extension CommandOutput {
    /// Lines to the process's standard output and standard error, which remember a failed
    /// write rather than trap (see ``RDLab/main(arguments:)``).
    public static let standard = CommandOutput(
        print: { line in StandardStream.output.write(line + "\n") },
        printError: { line in StandardStream.error.write(line + "\n") }
    )
}
