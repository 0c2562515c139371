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
    /// The configuration last saved, resumed or shown.
    var lastOpened: String?

    /// Settings with nothing set.
    init() {}

    /// Reads the settings from a store's metadata; unreadable entries count as unset.
    init(metadata: Metadata) {
        author = metadata[Key.author.metadataKey]?.stringValue
        defaultModel = metadata[Key.defaultModel.metadataKey]?.stringValue.flatMap(
            Model.init(name:)
        )
        defaultSize = metadata[Key.defaultSize.metadataKey]?.integerValue.map { Int($0) }
        lastOpened = metadata[Key.lastOpened.metadataKey]?.stringValue
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
            guard !text.isEmpty, !text.contains(where: \.isNewline) else {
                throw .usage("the author must be one non-empty line")
            }
            author = text
        case .defaultModel:
            guard let model = Model(name: text.lowercased()) else {
                throw .usage("unknown model '\(text)'; use \(RunCommand.modelList)")
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
    }
}
