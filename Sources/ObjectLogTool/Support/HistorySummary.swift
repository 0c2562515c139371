import CommandLineKit
import Foundation
import ObjectLogStore

/// What `objectlog info` says of a store file's history: how much its retention keeps across
/// compactions, and from which transaction on the history is there (FORMAT.md, section 11).
struct HistorySummary {
    var retention: LogHistoryRetention
    /// The first transaction whose changes the store still has.
    var firstTransaction: UInt64
    /// The transactions the history file beside the store holds.
    var keptInFile: Int

    init(path: String, metadata: Metadata, storeUUID: UUID, base: UInt64) throws {
        retention = LogHistoryRetention(metadata)
        let file = try HistoryFile.read(
            storePath: path,
            storeUUID: storeUUID,
            fileSystem: PosixFileSystem()
        )
        // The file's transactions count only when they reach the log's first one.
        let reaches = file.map { $0.earliest <= base && $0.through >= base } ?? false
        let earliest = reaches ? file!.earliest : base
        firstTransaction = max(earliest, LogStore.historyFloor(metadata)) + 1
        keptInFile = reaches ? file!.entries.filter { $0.number <= base }.count : 0
    }

    private var retentionText: String {
        switch retention {
        case .none: "kept until each compaction"
        case .all: "every transaction kept"
        case .transactions(let count): "the last \(count) transactions kept"
        case .seconds(let seconds): "the transactions of the last \(Self.duration(seconds)) kept"
        }
    }

    private static func duration(_ seconds: Double) -> String {
        let days = seconds / 86_400
        if days >= 1, days == days.rounded() { return "\(Int(days)) days" }
        return "\(Int(seconds)) seconds"
    }

    var text: String {
        "\(retentionText); from transaction #\(firstTransaction)"
            + (keptInFile > 0 ? " (\(keptInFile) in the history file)" : "")
    }

    var json: JSONValue {
        let retention: JSONValue =
            switch self.retention {
            case .none: .string("untilCompaction")
            case .all: .string("all")
            case .transactions(let count): .object([("lastTransactions", .unsigned(count))])
            case .seconds(let seconds): .object([("seconds", .double(seconds))])
            }
        return .object([
            ("retention", retention),
            ("firstTransaction", .unsigned(firstTransaction)),
            ("transactionsInHistoryFile", .number(keptInFile)),
        ])
    }
}
