import Foundation

extension CommandOutput {
    /// Lines to the process's standard output and standard error.
    public static let standard = CommandOutput(
        print: { line in
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        },
        printError: { line in
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
    )
}
