import CommandLineKit
import Foundation
import ObjectLog
import ObjectLogPostgreSQL
import ReactionDiffusion

/// `rdlab demo`: runs every preset of the three models into a fresh store, saves each with
/// thumbnails, writes `gallery.html` and `sheet.png`, and prints the list.
///
/// The demo store is `./rdlab-demo.olog` (or `--store`); it is replaced on every run, but only
/// when it is a store an earlier demo made (its metadata says so), never another store. An
/// existing gallery or sheet file is refused before anything runs, unless `--overwrite` is given.
public struct DemoCommand: Command {
    /// `demo`.
    public static let name = "demo"

    /// The demo's own store, kept apart from the lab's `rdlab.olog`.
    static let defaultStorePath = "rdlab-demo.olog"
    /// The metadata key that marks a store made by the demo (so that it may be replaced).
    static let markerKey = "rdlab.demo"

    /// The command's help page.
    public static let help = HelpPage(
        overview: """
            Run every preset of the three models at 256 × 256 into a fresh store, save each with \
            thumbnails, and write gallery.html and sheet.png.
            """,
        usage: """
            rdlab demo [--store <path|uri>] [--size <n>] [--steps <n>] [--threads <t>] \
            [--unorm8-rule <1|2>] [--html <path>] [--sheet <path>] [--overwrite]
            """,
        options: [
            .option(
                "--store",
                value: "path|uri",
                help:
                    "The demo store, a file or a postgresql:// URI (default:\n./\(defaultStorePath)); replaced if an earlier demo made it,\nrefused otherwise."
            ),
            .option("--size", value: "n", help: "The grid's side (default: 256)."),
            .option(
                "--steps",
                value: "n",
                help:
                    "Steps for every preset (default: enough for each model's\npattern: \(defaultSteps.map { "\($0.0.name) \($0.1)" }.joined(separator: ", ")))."
            ),
            .option("--threads", value: "t", help: "Threads to step with (default: all cores)."),
            .unorm8Rule,
            .option("--html", value: "path", help: "The gallery (default: gallery.html)."),
            .option("--sheet", value: "path", help: "The contact sheet (default: sheet.png)."),
            .flag(
                "--overwrite",
                help: "Replace existing gallery and sheet files (refused otherwise)."
            ),
        ]
    )

    /// Steps per model that show each preset's pattern on a 256 × 256 grid.
    static let defaultSteps: [(Model, Int)] = [
        (.grayScott, 20_000), (.fitzHughNagumo, 10_000), (.belousovZhabotinsky, 1_000),
    ]

    /// The demo store.
    public var storePath = defaultStorePath
    /// The grid's side.
    public var size = 256
    /// Steps for every preset, or `nil` for each model's default.
    public var steps: Int?
    /// The number of threads.
    public var threads = ProcessInfo.processInfo.activeProcessorCount
    /// The rule the presets' unorm8 steps follow.
    public var unorm8Rule = Unorm8Rule.current
    /// Where to write the gallery.
    public var htmlPath = "gallery.html"
    /// Where to write the contact sheet.
    public var sheetPath = "sheet.png"
    /// Whether existing gallery and sheet files may be replaced.
    public var overwrite = false

    /// Parses the options.
    public init(parsing arguments: inout ArgumentScanner) throws(CommandError) {
        while let option = try arguments.nextOption() {
            switch option {
            case "--store": storePath = try arguments.value(for: option)
            case "--size": size = try arguments.integer(for: option, in: 8...2_048)
            case "--steps": steps = try arguments.integer(for: option, in: 0...1_000_000)
            case "--threads": threads = try arguments.integer(for: option, in: 1...256)
            case "--unorm8-rule": unorm8Rule = try arguments.unorm8Rule(for: option)
            case "--html": htmlPath = try arguments.value(for: option)
            case "--sheet": sheetPath = try arguments.value(for: option)
            case "--overwrite": overwrite = true
            default: throw arguments.unknownOption(option)
            }
        }
    }

    /// The name a preset's configuration is saved under, short enough for a caption.
    static func configurationName(for preset: Preset) -> String {
        let prefix =
            switch preset.model {
            case .grayScott: "gs"
            case .fitzHughNagumo: "fhn"
            case .belousovZhabotinsky: "bz"
            }
        return "\(prefix)-\(preset.name.lowercased())"
    }

    /// Runs the demo.
    public func run(output: CommandOutput) throws(CommandError) {
        let clock = ContinuousClock()
        let start = clock.now
        try RunCommand.checkOutputPaths(htmlPath, sheetPath)
        if !overwrite {
            for (path, option) in [(htmlPath, "--html"), (sheetPath, "--sheet")]
            where FileManager.default.fileExists(atPath: path) {
                throw CommandError(
                    "'\(path)' exists; pass --overwrite to replace it, or choose another path "
                        + "with \(option)",
                    exitCode: .cannotCreate
                )
            }
        }
        try LabStore.checkPath(storePath)
        try removeEarlierDemo()
        let store = try LabStore(path: storePath, access: .create)
        try store.container.setMetadataOrFail(.bool(true), forKey: Self.markerKey, path: store.path)
        store.settings.defaultSize = size
        output.print(
            "rdlab demo: \(Preset.all.count) presets at \(size) × \(size), "
                + (unorm8Rule != .current ? "unorm8 rule \(unorm8Rule.rawValue), " : "")
                + "\(threads) thread\(threads == 1 ? "" : "s"), into \(store.path)"
        )
        for preset in Preset.all {
            let model = preset.model
            let stepCount = steps ?? Self.defaultSteps.first { $0.0 == model }!.1
            let simulation = Simulation(
                model: model,
                parameters: preset.parameters,
                unorm8Rule: unorm8Rule,
                field: InitialState.make(
                    for: model,
                    width: size,
                    height: size,
                    seed: InitialState.defaultSeed
                ),
                threadCount: threads
            )
            let name = Self.configurationName(for: preset)
            let seconds = try SteppingLoop(label: name).run(simulation, steps: stepCount)
            let record = try RunRecord(simulation: simulation, preset: preset.name, step: stepCount)
            try store.saveRun(record, as: name, replace: false, autosave: false)
            output.print(
                "  \(name.padding(toLength: 16, withPad: " ", startingAt: 0)) \(model.name), "
                    + "\(stepCount) steps: " + String(format: "%.2f s", seconds)
            )
        }
        // The gallery and sheet follow the presets' order (each model's in turn).
        let order = Preset.all.map(Self.configurationName(for:))
        let configurations = try store.configurations().sorted {
            (order.firstIndex(of: $0.name) ?? order.count)
                < (order.firstIndex(of: $1.name) ?? order.count)
        }
        try Gallery.write(
            configurations,
            store: store.path,
            author: store.settings.author,
            htmlPath: htmlPath,
            sheetPath: sheetPath,
            output: output
        )
        output.print("")
        ListCommand.print(
            try store.configurations(),
            json: false,
            store: store.path,
            output: output
        )
        try store.close()
        let elapsed = start.duration(to: clock.now)
        output.print(
            "demo finished in "
                + String(
                    format: "%.1f s",
                    Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds)
                        * 1e-18
                )
                + "; try 'rdlab list --store \(shownStore)' or open \(htmlPath)"
        )
    }

    /// `--store`'s value as a shell takes it again, with no password: a URI in quotes.
    private var shownStore: String {
        StoreLocation.isDatabase(storePath)
            ? "'" + Redaction.passwords(in: storePath) + "'" : storePath
    }

    /// Removes the files of an earlier demo's store at `storePath`; refuses any other file.
    private func removeEarlierDemo() throws(CommandError) {
        if StoreLocation.isDatabase(storePath) {
            try removeEarlierDemoFromDatabase()
            return
        }
        let manager = FileManager.default
        guard manager.fileExists(atPath: storePath) else { return }
        let metadata: Metadata
        do {
            metadata = try PersistentContainer.metadataForStore(at: storePath)
        } catch {
            throw notDemo()
        }
        guard metadata[Self.markerKey]?.boolValue == true else { throw notDemo() }
        // Take the store's lock first, so a demo store in use by another process is left alone.
        let check = try LabStore(path: storePath, access: .write)
        try check.close()
        for suffix in ["", "-index", "-indexes", "-blobs", "-history", "-lock"] {
            let path = storePath + suffix
            guard manager.fileExists(atPath: path) else { continue }
            do {
                try manager.removeItem(atPath: path)
            } catch {
                throw CommandError(
                    "cannot remove the earlier demo's '\(path)': \(error.localizedDescription)",
                    exitCode: .cannotCreate
                )
            }
        }
    }

    /// Removes an earlier demo's store from the database `storePath`; refuses any other store.
    private func removeEarlierDemoFromDatabase() throws(CommandError) {
        let target = StoreLocation.displayName(storePath)
        let contents: PostgresStore.DatabaseContents
        do {
            contents = try PostgresStore.contents(ofDatabase: storePath)
        } catch {
            throw LabStore.databaseError(error, store: target)
        }
        guard contents != .empty else { return }
        guard contents == .store else { throw notDemo() }
        let check = try LabStore(path: storePath, access: .read)
        let isDemo = check.container.metadata[Self.markerKey]?.boolValue == true
        try check.close()
        guard isDemo else { throw notDemo() }
        try LabStore.removeDatabaseStore(storePath)
    }

    private func notDemo() -> CommandError {
        CommandError(
            "'\(StoreLocation.displayName(storePath))' exists and was not made by 'rdlab demo'; "
                + "remove it or choose another path with --store",
            exitCode: .cannotCreate
        )
    }
}

extension PersistentContainer {
    /// Sets a metadata value, turning a failure into a ``CommandError``.
    fileprivate func setMetadataOrFail(
        _ value: MetadataValue,
        forKey key: String,
        path: String
    ) throws(CommandError) {
        do {
            try setMetadata(value, forKey: key)
        } catch {
            throw LabStore.commandError(error, path: path, creating: true)
        }
    }
}
