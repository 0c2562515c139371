import CommandLineKit
import ObjectLog
import ReactionDiffusion

/// The lab's per-store settings, kept in the store's metadata dictionary under `rdlab.` keys so
/// that `objectlog meta` shows them.
struct LabSettings: Equatable {
    /// One setting: its command-line name and its metadata key.
    enum Key: String, CaseIterable {
        case author
        case defaultModel = "default-model"
        case defaultSize = "default-size"
        case lastOpened = "last-opened"

        /// The metadata key, such as `rdlab.defaultModel`.
        var metadataKey: String {
            switch self {
            case .author: "rdlab.author"
            case .defaultModel: "rdlab.defaultModel"
            case .defaultSize: "rdlab.defaultSize"
            case .lastOpened: "rdlab.lastOpened"
            }
        }

        /// The names, for messages.
        static let list = allCases.map(\.rawValue).joined(separator: ", ")
    }

    /// Who works in this store; shown in the gallery.
    var author: String?
    /// The model `rdlab run` uses without `--model`.
    var defaultModel: Model?
    /// The square grid side `rdlab run` uses without `--size`.
    var defaultSize: Int?
    /// The configuration last saved, resumed, edited or renamed (commands that only read
    /// leave it alone).
    var lastOpened: String?
    /// The stored values that are not values of their setting (written by another program,
    /// for example with `objectlog meta set rdlab.defaultSize huge`), as text; those settings
    /// act as unset until set again.
    var malformed: [Key: String] = [:]

    /// Settings with nothing set.
    init() {}

    /// Reads the settings from a store's metadata; entries that are not values of their
    /// setting act as unset and are listed in ``malformed``.
    init(metadata: Metadata) {
        for key in Key.allCases {
            guard let value = metadata[key.metadataKey] else { continue }
            switch key {
            case .author:
                author = value.stringValue.flatMap { Self.isOneLine($0) ? $0 : nil }
            case .defaultModel:
                defaultModel = value.stringValue.flatMap(Model.init(name:))
            case .defaultSize:
                defaultSize = value.integerValue.flatMap {
                    (1...Int64(RunCommand.largestSide)).contains($0) ? Int($0) : nil
                }
            case .lastOpened:
                lastOpened = value.stringValue
            }
            if metadataValue(key) == nil {
                malformed[key] = Self.describe(value)
            }
        }
    }

    /// The warning for a malformed setting, naming its key and stored value.
    func warning(_ key: Key) -> String? {
        guard let stored = malformed[key] else { return nil }
        let expected =
            switch key {
            case .author: "one line of text"
            case .defaultModel: "a model name (\(RunCommand.modelList))"
            case .defaultSize: "an integer from 1 to \(RunCommand.largestSide)"
            case .lastOpened: "a configuration's name"
            }
        return "warning: the setting \(key.rawValue) (metadata \(key.metadataKey)) holds "
            + "\(stored), which is not \(expected); it is ignored until set again with "
            + "'rdlab settings set \(key.rawValue) <value>'"
    }

    /// Every malformed setting's warning, in the order of ``Key/allCases``.
    var warnings: [String] { Key.allCases.compactMap(warning) }

    /// A stored metadata value as text for a warning: strings quoted, others with their type.
    private static func describe(_ value: MetadataValue) -> String {
        let text: String
        switch value {
        case .string(let string): text = "\"\(string)\""
        case .integer(let number): text = "the integer \(number)"
        case .double(let number): text = "the number \(number)"
        case .bool(let flag): text = "the Boolean \(flag)"
        default: text = "a value of another type (\(value))"
        }
        return String(text.split(whereSeparator: \.isNewline).joined(separator: " ").prefix(200))
    }

    private static func isOneLine(_ text: String) -> Bool {
        !text.isEmpty && !text.contains(where: \.isNewline)
    }

    /// The metadata value of `key`, or `nil` when unset.
    func metadataValue(_ key: Key) -> MetadataValue? {
        switch key {
        case .author: author.map { .string($0) }
        case .defaultModel: defaultModel.map { .string($0.name) }
        case .defaultSize: defaultSize.map { .integer(Int64($0)) }
        case .lastOpened: lastOpened.map { .string($0) }
        }
    }

    /// The value of `key` as text, or `nil` when unset.
    func text(_ key: Key) -> String? {
        switch key {
        case .author: author
        case .defaultModel: defaultModel?.name
        case .defaultSize: defaultSize.map(String.init)
        case .lastOpened: lastOpened
        }
    }

    /// Sets `key` from text.
    ///
    /// - Throws: ``CommandError`` (usage) for a value the setting cannot take.
    mutating func set(_ key: Key, text: String) throws(CommandError) {
        switch key {
        case .author:
            guard Self.isOneLine(text) else {
                throw .usage("the author must be one non-empty line")
            }
            author = text
        case .defaultModel:
            guard let model = Model(name: text.lowercased()) else {
                throw .usage(
                    "unknown model '\(text)'\(Suggestion.didYouMean(text, among: Model.allCases.map(\.name))); use \(RunCommand.modelList)"
                )
            }
            defaultModel = model
        case .defaultSize:
            guard let size = Int(text), (1...RunCommand.largestSide).contains(size) else {
                throw .usage(
                    "the default size must be an integer from 1 to \(RunCommand.largestSide), not '\(text)'"
                )
            }
            defaultSize = size
        case .lastOpened:
            lastOpened = text
        }
        malformed[key] = nil
    }
}
