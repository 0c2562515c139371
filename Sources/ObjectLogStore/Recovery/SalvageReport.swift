/// What a salvage of a damaged store dropped: each damaged transaction, and the object
/// versions and metadata it held.
///
/// A salvage (``StoreOptions/salvage``, ``LogStore/salvage(path:to:upgrade:merge:)``, `objectlog recover` and
/// `objectlog repair`) keeps every intact committed transaction and drops each damaged one
/// whole, so the state it gives is the state without those transactions: an object a dropped
/// transaction changed has its version from the last intact transaction before it (or from a
/// later one that changed it again), and an object it inserted is absent.
///
/// ```swift
/// var options = StoreOptions()
/// options.salvage = true
/// let store = try LogStore.open(path: "app.olog", options: options)
/// for loss in store.salvageReport?.losses ?? [] { print(loss.damage) }
/// ```
public struct SalvageReport: Sendable, Equatable {
    /// What became of an object (or the metadata) that a dropped transaction changed.
    public enum Outcome: Sendable, Equatable {
        /// Not in the salvaged store: the dropped transaction inserted it (or a later one
        /// deleted it).
        case absent
        /// The salvaged store has its version from an earlier transaction: this number, or nil
        /// for the state a compaction or the store's creation recorded.
        case earlierVersion(transaction: UInt64?)
        /// A later intact transaction (this number) changed it again: nothing of it is missing.
        case laterVersion(transaction: UInt64)
        /// The record is unreadable, so what it changed is not known.
        case unknown
    }

    /// One record of a dropped transaction.
    public struct LostRecord: Sendable, Equatable {
        /// What the record did.
        public enum Kind: String, Sendable {
            /// A put that inserted the object.
            case insert
            /// A put that replaced the object's value.
            case update
            /// A delete.
            case delete
            /// A new metadata dictionary.
            case metadata
            /// A record whose bytes are damaged.
            case unreadable
        }

        /// What the record did.
        public var kind: Kind
        /// Its offset in the damaged file.
        public var offset: UInt64
        /// The object's key (0 for metadata, and for a damaged record whose frame is unreadable).
        public var key: ObjectKey
        /// The object's entity tag (0 when unknown).
        public var entity: EntityTag
        /// What the salvaged store holds instead.
        public var outcome: Outcome
    }

    /// One damaged stretch of the log and the transaction it held.
    public struct Loss: Sendable, Equatable {
        /// The damage found first in it.
        public var damage: StoreDamage
        /// The numbers of the user transactions dropped, when known (a torn tail's is not).
        public var transactions: ClosedRange<UInt64>?
        /// Whether the dropped transaction is a compaction's copy of the live state.
        public var isCompaction: Bool
        /// The bytes dropped: from the transaction's first record to where the log goes on.
        public var byteRange: Range<UInt64>
        /// The records of the dropped transaction that could be read, and the damaged ones.
        public var records: [LostRecord]
        /// Records after the damage that could not even be delimited; nil when every record
        /// was accounted for, or when how many there were is not known.
        public var undelimitedRecords: Int?
    }

    /// Every damaged stretch, in file order; empty when the store is not damaged.
    public var losses: [Loss]

    /// Whether anything was dropped.
    public var isEmpty: Bool { losses.isEmpty }

    /// The numbers of every dropped user transaction, ascending.
    public var lostTransactionNumbers: [UInt64] {
        losses.flatMap { $0.transactions.map(Array.init) ?? [] }
    }
}

extension SalvageReport {
    /// Accounts for `damages`, found by ``LogScanner/salvage(from:lastNumber:visitor:)`` in
    /// `file`, given where the salvaged state keeps each live key.
    package init(
        damages: [SalvagedDamage],
        file: any StoreFile,
        layout: RecordLayout,
        fileSize: UInt64,
        metadataOffset: UInt64,
        location: (ObjectKey) -> RecordLocation?
    ) throws {
        var numbers = TransactionNumbers(file: file, layout: layout, fileSize: fileSize)
        var losses: [Loss] = []
        for damaged in damages {
            let start = damaged.damage.validEnd
            let end = damaged.resumeOffset ?? fileSize
            var records: [LostRecord] = []
            var offset = start
            var delimited = true
            while offset < end {
                let head = try file.read(at: offset, count: layout.maximumAnyFrameLength)
                guard
                    case .frame(let frame) = head.withUnsafeBytes({
                        RecordFrame.decode($0, layout: layout)
                    }),
                    offset + UInt64(frame.totalLength) <= end
                else {
                    records.append(
                        LostRecord(
                            kind: .unreadable,
                            offset: offset,
                            key: 0,
                            entity: 0,
                            outcome: .unknown
                        )
                    )
                    delimited = false
                    break
                }
                var intact = false
                if case .success = try LogStore.readRecord(
                    at: offset,
                    file: file,
                    path: "",
                    layout: layout
                ) {
                    intact = true
                }
                defer { offset += UInt64(frame.totalLength) }
                if !intact {
                    let isObject =
                        frame.type == .put || frame.type == .patch || frame.type == .delete
                    records.append(
                        LostRecord(
                            kind: .unreadable,
                            offset: offset,
                            key: isObject ? frame.key : 0,
                            entity: isObject ? frame.entity : 0,
                            outcome: .unknown
                        )
                    )
                    continue
                }
                switch frame.type {
                case .put, .patch, .delete:
                    let kind: LostRecord.Kind =
                        frame.type == .delete
                        ? .delete : frame.flags & PutFlags.insert != 0 ? .insert : .update
                    let outcome: Outcome
                    if let now = location(frame.key) {
                        outcome =
                            now.offset >= end
                            ? .laterVersion(
                                transaction: try numbers.number(containing: now.offset) ?? 0
                            )
                            : .earlierVersion(
                                transaction: try numbers.number(containing: now.offset)
                            )
                    } else {
                        outcome = .absent
                    }
                    records.append(
                        LostRecord(
                            kind: kind,
                            offset: offset,
                            key: frame.key,
                            entity: frame.entity,
                            outcome: outcome
                        )
                    )
                case .metadata:
                    let outcome: Outcome =
                        metadataOffset >= end
                        ? .laterVersion(
                            transaction: try numbers.number(containing: metadataOffset) ?? 0
                        )
                        : .earlierVersion(
                            transaction: metadataOffset == 0
                                ? nil : try numbers.number(containing: metadataOffset)
                        )
                    records.append(
                        LostRecord(
                            kind: .metadata,
                            offset: offset,
                            key: 0,
                            entity: 0,
                            outcome: outcome
                        )
                    )
                case .commit, .padding:
                    break
                }
            }
            var undelimited: Int?
            if !delimited, let commit = damaged.lostCommit {
                let counted = records.count - 1
                undelimited =
                    Int(commit.recordCount) > counted ? Int(commit.recordCount) - counted : nil
            }
            losses.append(
                Loss(
                    damage: StoreDamage(damaged.damage),
                    transactions: damaged.lostNumbers,
                    isCompaction: damaged.lostCommit?.isCompaction ?? false,
                    byteRange: start..<end,
                    records: records,
                    undelimitedRecords: undelimited
                )
            )
        }
        self.init(losses: losses)
    }
}

/// Finds the number of the intact transaction a record belongs to, by reading its records
/// forward to their commit.
private struct TransactionNumbers {
    let file: any StoreFile
    let layout: RecordLayout
    let fileSize: UInt64
    /// Commits already found: their transactions' first record offsets and ends, and numbers.
    var known: [(start: UInt64, end: UInt64, number: UInt64)] = []

    init(file: any StoreFile, layout: RecordLayout, fileSize: UInt64) {
        self.file = file
        self.layout = layout
        self.fileSize = fileSize
    }

    /// The number of the transaction holding the record at `offset` (0 for a compaction's),
    /// or nil if no commit follows it.
    mutating func number(containing offset: UInt64) throws -> UInt64? {
        if let found = known.first(where: { $0.start <= offset && offset < $0.end }) {
            return found.number
        }
        var position = offset
        while position < fileSize {
            let head = try file.read(at: position, count: layout.maximumAnyFrameLength)
            guard
                case .frame(let frame) = head.withUnsafeBytes({
                    RecordFrame.decode($0, layout: layout)
                })
            else { return nil }
            let end = position + UInt64(frame.totalLength)
            if frame.type == .commit {
                let payload = try file.read(
                    at: position + UInt64(frame.frameLength),
                    count: LogFormat.commitPayloadLength
                )
                guard let commit = payload.withUnsafeBytes({ CommitPayload($0) }) else {
                    return nil
                }
                known.append((commit.firstRecordOffset, end, frame.key))
                return frame.key
            }
            position = end
        }
        return nil
    }
}
