import CommandLineKit

/// `rdlab browse [--html gallery.html] [--sheet sheet.png]`: the saved configurations as a
/// self-contained HTML gallery and a contact-sheet PNG of their thumbnails.
public struct BrowseCommand: Command {
    /// `browse`.
    public static let name = "browse"

    /// The command's help page.
    public static let help = HelpPage(
        overview: "Write an HTML gallery and a contact sheet of the saved configurations.",
        usage: "rdlab browse [--html <gallery.html>] [--sheet <sheet.png>] [--store <path|uri>]",
        options: [
            .option(
                "--html",
                value: "path",
                help:
                    "Write the gallery (thumbnails inline, name, model, parameters,\nsteps, date)."
            ),
            .option(
                "--sheet",
                value: "path",
                help: "Write the contact sheet of thumbnails as a PNG."
            ),
            .store,
        ]
    )

    /// Where to write the gallery, if anywhere.
    public var htmlPath: String?
    /// Where to write the contact sheet, if anywhere.
    public var sheetPath: String?
    /// The store path from `--store`, if given.
    public var storePath: String?

    /// Parses the options; with neither `--html` nor `--sheet`, writes `gallery.html` and
    /// `sheet.png`.
    public init(parsing arguments: inout ArgumentScanner) throws(CommandError) {
        while let option = try arguments.nextOption() {
            switch option {
            case "--html": htmlPath = try arguments.value(for: option)
            case "--sheet": sheetPath = try arguments.value(for: option)
            case "--store": storePath = try arguments.value(for: option)
            default: throw arguments.unknownOption(option)
            }
        }
        if htmlPath == nil && sheetPath == nil {
            htmlPath = "gallery.html"
            sheetPath = "sheet.png"
        }
    }

    /// Writes the files.
    public func run(output: CommandOutput) throws(CommandError) {
        let store = try LabStore(path: LabStore.path(option: storePath), access: .read)
        let configurations = try store.configurations()
        guard !configurations.isEmpty else {
            throw CommandError(
                "the store '\(store.path)' has no configurations yet; save one with "
                    + "'rdlab run … --save NAME'",
                exitCode: .noInput
            )
        }
        try Gallery.write(
            configurations,
            store: store.path,
            author: store.settings.author,
            htmlPath: htmlPath,
            sheetPath: sheetPath,
            output: output
        )
    }
}
