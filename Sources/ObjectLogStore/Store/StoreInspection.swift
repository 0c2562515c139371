import Foundation

/// A read-only examination of a store file: its header, every transaction, the live state,
/// the index checkpoint and the external blobs, with every problem found.
///
/// This is what `objectlog info`, `verify` and `history` are built on. It never writes to, locks
/// or truncates the file, so it is safe on a store another process is writing.
///
/// ```swift
/// let inspection = try StoreInspection(path: "app.olog")
/// for problem in inspection.problems { print(problem) }
/// ```
public struct StoreInspection: Sendable {
    /// One committed transaction.
    public struct TransactionSummary: Sendable, Equatable {
        /// The transaction's number (0 for a compaction's copy of the live state).
        public var number: UInt64
        /// Offset of its first record (of its commit record if it has none).
        public var offset: UInt64
        /// When it was committed.
        public var date: Date
        /// Objects inserted, updated and deleted.
        public var inserted: Int, updated: Int, deleted: Int
        /// Records in the transaction, excluding the commit and any padding.
        public var records: Int
        /// Whether it carried a new metadata dictionary.
        public var changedMetadata: Bool
        /// Whether it is the copy of the live state that a compaction wrote.
        public var isCompaction: Bool
    }

    /// Something wrong with the store.
    public struct Problem: Sendable, Equatable, CustomStringConvertible {
        /// What part of the store the problem is in.
        public enum Area: String, Sendable {
            /// The file header: magic, version, metadata dictionary.
            case header
            /// The records and transactions of the log.
            case log
            /// An incomplete last transaction: a save that never committed.
            case tornTail = "torn tail"
            /// The index file beside the log.
            case index
            /// An external blob file.
            case blob
        }

        /// What part of the store the problem is in.
        public var area: Area
        /// The byte offset in the file concerned, where there is one.
        public var offset: UInt64?
        /// The file concerned (the store, its index or a blob).
        public var path: String
        /// What is wrong.
        public var message: String

        /// One line: area, file, offset and message.
        public var description: String {
            if let offset { return "\(area.rawValue): \(path): offset \(offset): \(message)" }
            return "\(area.rawValue): \(path): \(message)"
        }
    }

    /// The state of the index checkpoint.
    public enum IndexStatus: String, Sendable {
        /// No index file.
        case missing
        /// Valid and covering the whole log.
        case current
        /// Valid but covering only part of the log (an open replays the rest).
        case partial
        /// From another store or generation, or not matching the log: it will be ignored.
        case stale
        /// Damaged (bad checksum or structure): it will be ignored.
        case damaged
    }

    /// The store file's path.
    public var path: String
    /// The format version, `major.minor`.
    public var formatVersion: String
    /// The store's unique identifier.
    public var storeUUID: UUID
    /// The file's generation (1 plus the number of compactions).
    public var generation: UInt64
    /// The latest committed metadata dictionary.
    public var metadata: Metadata
    /// Every committed transaction in the file, in order.
    public var transactions: [TransactionSummary]
    /// Transactions committed over the store's life (including those folded by compaction,
    /// and damaged ones a salvage drops: the number of the last user commit, FORMAT.md
    /// section 5).
    public var transactionCount: UInt64
    /// Transactions folded into the header by earlier compactions.
    public var baseTransactionCount: UInt64
    /// The file's size.
    public var fileBytes: UInt64
    /// Where the valid log ends.
    public var validBytes: UInt64
    /// About what compaction would leave: the header, the live records and one commit.
    public var liveBytes: UInt64
    /// Live objects by entity tag.
    public var liveCounts: [EntityTag: Int]
    /// Every live object's location.
    public var liveObjects: [ObjectKey: RecordLocation]
    /// The external blobs live objects refer to.
    public var referencedBlobs: Set<BlobID>
    /// External blob files present, and their total size.
    public var blobCount: Int, blobBytes: UInt64
    /// The first damage in the log, if any (or the save another process has in flight).
    public var damage: StoreDamage?
    /// Every damaged transaction the inspection stepped over, and what it held: the live state
    /// above is the store without them (see ``SalvageReport``).
    public var salvageReport: SalvageReport
    /// The index checkpoint's state.
    public var indexStatus: IndexStatus
    /// Every problem found, in file order; empty for a clean store.
    public var problems: [Problem]

    /// Whether nothing at all is wrong.
    public var isClean: Bool { problems.isEmpty }

    /// Examines the store at `path`.
    ///
    /// - Parameters:
    ///   - path: The store file.
    ///   - checkBlobs: Also read every referenced blob and check its digest.
    /// - Throws: `StoreError` when the file is not a store at all (`.notFound`, `.notAStore`,
    ///   `.unsupportedVersion`) or its header is damaged (`.corrupt`); damage after the header is
    ///   reported in ``problems`` instead.
    public init(path: String, checkBlobs: Bool = true) throws {
        try self.init(path: path, fileSystem: PosixFileSystem(), checkBlobs: checkBlobs)
    }

    package init(path: String, fileSystem: any FileSystem, checkBlobs: Bool = true) throws {
        try requireExistingStoreFile(path, fileSystem: fileSystem)
        let file = try fileSystem.open(path, mode: .read)
        defer { file.close() }
        let size = try file.size()
        let header = try StoreHeader.read(from: file, path: path, fileSize: size)
        self.path = path
        formatVersion = "\(header.majorVersion).\(header.minorVersion)"
        storeUUID = header.storeUUID
        generation = header.generation
        baseTransactionCount = header.baseTransactionCount
        fileBytes = size
        problems = []

        var live: [ObjectKey: RecordLocation] = [:]
        var blobsByKey: [ObjectKey: [BlobID]] = [:]
        var pendingBlobs: [ObjectKey: [BlobID]] = [:]
        var summaries: [TransactionSummary] = []
        var metadataOffset: UInt64 = 0
        var lastNumber = header.baseTransactionCount
        let layout = header.layout
        var scanner = LogScanner(file: file, path: path, fileSize: size, header: header)
        // Classified as every reader does (see LogScanner's classify).
        scanner.acknowledgedLength =
            LogStore.loadIndex(
                path: path,
                fileSystem: fileSystem,
                header: header,
                file: file,
                fileSize: size
            )?.0.coveredLength ?? 0
        scanner.hasActiveWriter = fileSystem.hasActiveWriter(lockPath: path + LogFormat.lockSuffix)
        let outcome = try scanner.salvage(
            from: UInt64(header.length),
            lastNumber: lastNumber,
            onRecord: { record, payload in
                // The scanner has checked the put's blob list before calling.
                guard record.type == .put,
                    let contents = PutContents(payload, flags: record.flags, layout: layout)
                else { return }
                pendingBlobs[record.key] = contents.blobs(in: payload)
            },
            // Patches are checked as the engine's replay checks them.
            committed: { live[$0] },
            onTransaction: { transaction in
                var changedMetadata = false
                for record in transaction.records {
                    switch record.type {
                    case .put:
                        live[record.key] = record.location
                        blobsByKey[record.key] = pendingBlobs[record.key] ?? []
                    case .patch:
                        // A patch keeps its base's blobs.
                        live[record.key] = record.location
                    case .delete:
                        live[record.key] = nil
                        blobsByKey[record.key] = nil
                    case .metadata:
                        metadataOffset = record.offset
                        changedMetadata = true
                    case .commit, .padding:
                        break
                    }
                }
                pendingBlobs.removeAll(keepingCapacity: true)
                if transaction.isCompaction {
                    metadataOffset = 0
                } else {
                    lastNumber = transaction.number
                }
                summaries.append(
                    TransactionSummary(
                        number: transaction.number,
                        offset: transaction.records.first?.offset ?? transaction.commitOffset,
                        date: transaction.commit.date,
                        inserted: Int(transaction.commit.inserted),
                        updated: Int(transaction.commit.updated),
                        deleted: Int(transaction.commit.deleted),
                        records: transaction.records.filter { $0.type != .padding }.count,
                        changedMetadata: changedMetadata,
                        isCompaction: transaction.isCompaction
                    )
                )
            }
        )
        transactions = summaries
        // A dropped transaction whose own commit survived still counts: numbering goes on from
        // that commit (FORMAT.md, section 5), as the salvage and a salvaging open count.
        transactionCount = max(lastNumber, outcome.lastNumber)
        validBytes = outcome.validEnd
        liveObjects = live
        var counts: [EntityTag: Int] = [:]
        var recordBytes: UInt64 = 0
        for location in live.values {
            counts[location.entity, default: 0] += 1
            recordBytes += UInt64(location.length)
        }
        liveCounts = counts
        liveBytes = UInt64(header.length) + recordBytes + UInt64(layout.commitRecordLength)
        damage = outcome.damages.first.map { StoreDamage($0.damage) }
        let damages = outcome.damages.filter { $0.damage.kind != .inFlight }
        salvageReport = try SalvageReport(
            damages: damages,
            file: file,
            layout: layout,
            fileSize: size,
            metadataOffset: metadataOffset,
            location: { live[$0] }
        )
        for damaged in damages {
            let found = damaged.damage
            let note: String
            switch found.kind {
            case .tornTail, .inFlight:
                note =
                    "\(found.reason); the incomplete last transaction (from offset "
                    + "\(found.validEnd)) is dropped on open"
            case .corrupt:
                let lost = damaged.lostNumbers.map { numbers in
                    numbers.count == 1
                        ? "transaction \(numbers.lowerBound)"
                        : "transactions \(numbers.lowerBound)–\(numbers.upperBound)"
                }
                note =
                    "\(found.reason); \(lost ?? "the damaged transaction") cannot be read"
                    + (damaged.resumeOffset.map {
                        " (the log goes on intact at offset \($0); 'objectlog repair' keeps "
                            + "everything else)"
                    } ?? "; nothing after it can be read")
            }
            problems.append(
                Problem(
                    area: found.kind == .corrupt ? .log : .tornTail,
                    offset: found.offset,
                    path: path,
                    message: note
                )
            )
        }

        // The latest metadata.
        metadata = header.metadata
        if metadataOffset != 0 {
            do {
                let (frame, record) = try LogStore.readRecord(
                    at: metadataOffset,
                    file: file,
                    path: path,
                    layout: layout
                ).get()
                metadata = try MetadataCoding.decodeDictionary(Array(record[frame.frameLength...]))
            } catch {
                problems.append(
                    Problem(
                        area: .log,
                        offset: metadataOffset,
                        path: path,
                        message: "the latest metadata record cannot be decoded: \(error)"
                    )
                )
            }
        }

        // The index checkpoint.
        let indexPath = path + LogFormat.indexSuffix
        if fileSystem.kind(of: indexPath) != .regular {
            indexStatus = .missing
        } else {
            let indexFile = try fileSystem.open(indexPath, mode: .read)
            let bytes = try indexFile.read(
                at: 0,
                count: Int(min(try indexFile.size(), UInt64(Int.max)))
            )
            indexFile.close()
            if let index = StoreIndex.decode(bytes) {
                if index.storeUUID != header.storeUUID || index.generation != header.generation
                    || index.coveredLength > outcome.validEnd
                {
                    indexStatus = .stale
                } else if !damages.isEmpty {
                    // The index describes the undamaged log; it cannot agree with a salvage.
                    indexStatus = index.coveredLength == outcome.validEnd ? .current : .partial
                } else if index.coveredLength == outcome.validEnd {
                    var expected: [ObjectKey: RecordLocation] = [:]
                    for (key, location) in index.entries { expected[key] = location }
                    if expected == live {
                        indexStatus = .current
                    } else {
                        indexStatus = .stale
                        problems.append(
                            Problem(
                                area: .index,
                                offset: nil,
                                path: indexPath,
                                message:
                                    "the index disagrees with the log; it will be ignored and rebuilt"
                            )
                        )
                    }
                } else {
                    indexStatus = .partial
                }
            } else {
                indexStatus = .damaged
                problems.append(
                    Problem(
                        area: .index,
                        offset: nil,
                        path: indexPath,
                        message: "the index checkpoint is damaged; it will be ignored and rebuilt"
                    )
                )
            }
        }

        // External blobs.
        var referenced: Set<BlobID> = []
        for blobs in blobsByKey.values { referenced.formUnion(blobs) }
        referencedBlobs = referenced
        let blobDirectory = path + LogFormat.blobsSuffix
        var count = 0
        var bytes: UInt64 = 0
        for name in try fileSystem.contents(ofDirectory: blobDirectory)
        where BlobID(hex: name) != nil {
            let blob = try fileSystem.open(blobDirectory + "/" + name, mode: .read)
            bytes += try blob.size()
            blob.close()
            count += 1
        }
        blobCount = count
        blobBytes = bytes
        for id in referenced.sorted(by: { $0.hex < $1.hex }) {
            let blobPath = blobDirectory + "/" + id.hex
            guard fileSystem.kind(of: blobPath) == .regular else {
                problems.append(
                    Problem(
                        area: .blob,
                        offset: nil,
                        path: blobPath,
                        message: "external blob referenced by a live object is missing"
                    )
                )
                continue
            }
            if checkBlobs {
                let blob = try fileSystem.open(blobPath, mode: .read)
                let content = try blob.read(
                    at: 0,
                    count: Int(min(try blob.size(), UInt64(Int.max)))
                )
                blob.close()
                if BlobID(contentsOf: content) != id {
                    problems.append(
                        Problem(
                            area: .blob,
                            offset: nil,
                            path: blobPath,
                            message: "external blob does not match its SHA-256 name"
                        )
                    )
                }
            }
        }
    }
}
