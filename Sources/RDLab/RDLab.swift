/// The `rdlab` tool: its commands, as a library so tests and later commands can reuse them.
///
/// `Sources/rdlab/main.swift` only calls ``main(arguments:)``.
public enum RDLab {
    /// The tool and its subcommands.
    public static var tool: CommandGroup {
        CommandGroup(
            name: "rdlab",
            help: CommandHelp(
                overview:
                    "A reaction-diffusion lab: Gray-Scott, FitzHugh-Nagumo and Belousov-Zhabotinsky.",
                usage: "rdlab <subcommand>"
            ),
            subcommands: [
                RunCommand.self, ResumeCommand.self, ListCommand.self, ShowCommand.self,
                EditCommand.self, RenameCommand.self, DeleteCommand.self, PresetsCommand.self,
                BrowseCommand.self, SettingsCommand.self, DemoCommand.self,
            ]
        )
    }

    /// Runs `rdlab` with `arguments` (program name excluded) and returns its exit status.
    public static func main(arguments: [String]) -> Int32 {
        tool.main(arguments: arguments, output: .standard)
    }
}
