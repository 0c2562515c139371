import CommandLineKit

/// The `rdlab` tool: its commands, as a library so tests and later commands can reuse them.
///
/// `Sources/rdlab/main.swift` only calls ``main(arguments:)``.
public enum RDLab {
    /// The tool's version, printed by `rdlab --version` as `rdlab <version>`; the package's
    /// version (`objectlog --version` prints the same number).
    public static let version = "0.1.0"

    /// The tool and its subcommands.
    public static var tool: CommandGroup {
        CommandGroup(
            name: "rdlab",
            help: HelpPage(
                overview:
                    "A reaction-diffusion lab: Gray-Scott, FitzHugh-Nagumo and Belousov-Zhabotinsky.",
                usage: "rdlab <subcommand>",
                options: [.flag("--version", help: "Print 'rdlab \(version)' and exit.")]
            ),
            version: version,
            subcommands: [
                RunCommand.self, ResumeCommand.self, ListCommand.self, ShowCommand.self,
                EditCommand.self, HistoryCommand.self, RevertCommand.self, RenameCommand.self,
                DeleteCommand.self, UndeleteCommand.self, PresetsCommand.self, BrowseCommand.self,
                SettingsCommand.self, DemoCommand.self,
            ]
        )
    }

    /// Runs `rdlab` with `arguments` (program name excluded) and returns its exit status.
    ///
    /// A command whose standard output or error cannot be written finishes its work (a run
    /// still saves) and then exits 74 with one line on standard error (if that can be written).
    /// SIGPIPE is ignored, so a closed pipe is such a failure (EPIPE) rather than the end of the
    /// process.
    public static func main(arguments: [String]) -> Int32 {
        StandardStreams.ignoreBrokenPipeSignal()
        let status = tool.main(arguments: arguments, output: .standard)
        return StandardStreams.lab.exitStatus(after: ExitCode(rawValue: status)).rawValue
    }
}
