import CommandLineKit

/// `rdlab settings [get KEY | set KEY VALUE]`: the store's settings, kept in its metadata.
///
/// `get` of an unset setting prints nothing and exits 1, as `objectlog meta get` does for a
/// missing key. A stored value that is not a value of its setting (one written with
/// `objectlog meta set`, say) is reported as malformed: a warning naming the key and the value,
/// and for `get`, exit 65.
public struct SettingsCommand: Command {
    /// `settings`.
    public static let name = "settings"

    /// The command's help page.
    public static let help = HelpPage(
        overview: """
            Print, get or set the store's settings (kept in its metadata). 'get' of an unset \
            setting exits 1, as 'objectlog meta get' of a missing key; of a malformed one, 65.
            """,
        usage: "rdlab settings [get <key> | set <key> <value>] [--store <path|uri>]",
        arguments: [
            ArgumentDefinition(
                name: "key",
                help:
                    "author, default-model, default-size or last-opened\n(metadata keys rdlab.author, …)."
            ),
            ArgumentDefinition(name: "value", help: "The new value."),
        ],
        options: [.store]
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
                let names = LabSettings.Key.allCases.map(\.rawValue)
                throw .usage(
                    "unknown setting '\(text)'\(Suggestion.didYouMean(text, among: names)); "
                        + "use \(LabSettings.Key.list)"
                )
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
            for warning in store.settings.warnings {
                output.printError(warning)
            }
            for key in LabSettings.Key.allCases {
                let shown =
                    store.settings.text(key)
                    ?? (store.settings.malformed[key] != nil ? "(malformed)" : "(not set)")
                output.print("\(key.rawValue) = \(shown)")
            }
        case .get(let key):
            let store = try LabStore(path: path, access: .read)
            if let warning = store.settings.warning(key) {
                throw CommandError(
                    String(warning.dropFirst("warning: ".count)),
                    exitCode: .dataError
                )
            }
            guard let value = store.settings.text(key) else {
                throw CommandError(
                    "'\(key.rawValue)' is not set; set it with 'rdlab settings set "
                        + "\(key.rawValue) <value>'",
                    exitCode: .failure
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
