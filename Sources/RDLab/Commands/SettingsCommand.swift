/// `rdlab settings [get KEY | set KEY VALUE]`: the store's settings, kept in its metadata.
public struct SettingsCommand: Command {
    /// `settings`.
    public static let name = "settings"

    /// The command's help page.
    public static let help = CommandHelp(
        overview: "Print, get or set the store's settings (kept in its metadata).",
        usage: "rdlab settings [get <key> | set <key> <value>] [--store <path>]",
        arguments: [
            .init(
                "<key>",
                "author, default-model, default-size or last-opened\n(metadata keys rdlab.author, …)."
            ),
            .init("<value>", "The new value."),
        ],
        options: [.init("--store <path>", LabStore.storeOptionHelp)]
    )

    /// What to do.
    enum Action {
        case print
        case get(LabSettings.Key)
        case set(LabSettings.Key, String)
    }

    var action: Action
    /// The store path from `--store`, if given.
    public var storePath: String?

    /// Parses the action.
    public init(parsing arguments: inout ArgumentScanner) throws(CommandError) {
        let words: [String]
        (words, storePath) = try arguments.positionalsAndStore()
        func key(_ text: String) throws(CommandError) -> LabSettings.Key {
            guard let key = LabSettings.Key(rawValue: text.lowercased()) else {
                throw .usage("unknown setting '\(text)'; use \(LabSettings.Key.list)")
            }
            return key
        }
        switch words.first {
        case nil:
            action = .print
        case "get":
            guard words.count == 2 else { throw .usage("use 'rdlab settings get <key>'") }
            action = .get(try key(words[1]))
        case "set":
            guard words.count == 3 else { throw .usage("use 'rdlab settings set <key> <value>'") }
            let key = try key(words[1])
            var check = LabSettings()
            try check.set(key, text: words[2])
            action = .set(key, words[2])
        case let word?:
            throw .usage("unknown action '\(word)'; use 'get <key>' or 'set <key> <value>'")
        }
    }

    /// Prints or changes the settings.
    public func run(output: CommandOutput) throws(CommandError) {
        let path = LabStore.path(option: storePath)
        switch action {
        case .print:
            let store = try LabStore(path: path, access: .read)
            for key in LabSettings.Key.allCases {
                output.print("\(key.rawValue) = \(store.settings.text(key) ?? "(not set)")")
            }
        case .get(let key):
            let store = try LabStore(path: path, access: .read)
            guard let value = store.settings.text(key) else {
                throw CommandError(
                    "'\(key.rawValue)' is not set; set it with 'rdlab settings set "
                        + "\(key.rawValue) <value>'",
                    exitCode: .noInput
                )
            }
            output.print(value)
        case .set(let key, let text):
            let store = try LabStore(path: path, access: .create)
            if key == .lastOpened {
                _ = try store.requireConfiguration(named: text)
            }
            try store.settings.set(key, text: text)
            try store.save()
            try store.close()
            output.print("\(key.rawValue) = \(store.settings.text(key) ?? "")")
        }
    }
}
