import Foundation

/// How much history a store keeps once compactions fold its transactions into the live state,
/// as the engine records it in the store's metadata under ``LogStore/historyRetentionKey``:
/// the log layer's compaction reads it, whoever compacts.
package enum LogHistoryRetention: Sendable, Equatable {
    /// None: a compaction folds every transaction away (the default).
    case none
    /// Every transaction, until purged.
    case all
    /// The last `count` transactions.
    case transactions(UInt64)
    /// The transactions committed within the last `seconds`.
    case seconds(Double)

    /// The retention `metadata` records; ``none`` when it records none (or one this version
    /// cannot read, which keeps less rather than fail a compaction).
    package init(_ metadata: Metadata) {
        self = .none
        switch metadata[LogStore.historyRetentionKey] {
        case .string("all")?:
            self = .all
        case .array(let parts)? where parts.count == 2:
            switch (parts[0], parts[1]) {
            case (.string("transactions"), .integer(let count)) where count >= 0:
                self = .transactions(UInt64(count))
            case (.string("seconds"), .double(let seconds)) where seconds >= 0:
                self = .seconds(seconds)
            default:
                break
            }
        default:
            break
        }
    }

    /// The value to record in the metadata.
    package var metadataValue: MetadataValue? {
        switch self {
        case .none: nil
        case .all: .string("all")
        case .transactions(let count): .array([.string("transactions"), .integer(Int64(count))])
        case .seconds(let seconds): .array([.string("seconds"), .double(seconds)])
        }
    }

    /// The last transaction whose history may go.
    ///
    /// Those up to it are dropped, those after it kept. `latest` is the last committed
    /// transaction; `transactions` gives commit times in microseconds since 1970 (for
    /// ``seconds(_:)``).
    func dropsThrough(
        latest: UInt64,
        now: Date,
        transactions: [(number: UInt64, microseconds: Int64)]
    ) -> UInt64 {
        switch self {
        case .none: return latest
        case .all: return 0
        case .transactions(let count): return latest > count ? latest - count : 0
        case .seconds(let seconds):
            let cutoff = Int64((now.timeIntervalSince1970 - seconds) * 1e6)
            var through: UInt64 = 0
            for transaction in transactions where transaction.microseconds < cutoff {
                through = max(through, transaction.number)
            }
            return through
        }
    }
}

extension LogStore {
    /// The metadata key of how much history the store keeps across compactions (FORMAT.md,
    /// section 11).
    public static let historyRetentionKey = "ObjectLog.historyRetention"
    /// The metadata key of the last transaction whose history was purged: history up to it
    /// is gone, whatever the files still hold.
    public static let historyFloorKey = "ObjectLog.historyFloor"

    /// The purge floor `metadata` records (0 for none).
    package static func historyFloor(_ metadata: Metadata) -> UInt64 {
        guard case .integer(let floor)? = metadata[historyFloorKey], floor > 0 else { return 0 }
        return UInt64(floor)
    }
}
