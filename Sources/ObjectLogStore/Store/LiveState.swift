/// What an open store knows of its log: where every live object's record is, and the
/// counters and positions the next commit continues from.
///
/// A ``LogStore`` holds one `LiveState` and reads or changes it only under its lock. Opening
/// builds it by loading the index checkpoint and replaying the log after it; a commit applies
/// its records to it once they are written (see ``CommitWriter``); a compaction replaces it
/// with the state of the new file. Everything else about a handle (its file, options and
/// statistics) stays in `LogStore` itself.
struct LiveState {
    /// The store's header as of the last open or compaction.
    var header: StoreHeader
    /// The key directory: where each live object's latest record is.
    var live: KeyDirectory
    /// How many live objects each entity has.
    var entityCounts: EntityCounter
    /// The bytes of the live objects' records: what a compaction would copy.
    var liveRecordBytes: UInt64
    /// The metadata dictionary as of the last commit.
    var currentMetadata: Metadata
    /// Where the last metadata record is, or 0 when the header holds the dictionary.
    var metadataOffset: UInt64
    /// The next key ``LogStore/allocateKeys(_:)`` hands out.
    var nextKey: ObjectKey
    /// The number of the last committed transaction.
    var lastNumber: UInt64
    /// The checksum of the last commit record, which the next one chains from.
    var lastCommitChecksum: UInt32?
    /// Where the log's last valid transaction ends, and the next one begins.
    var endOffset: UInt64
    /// The generation and end the index file on disk describes, when it describes the state
    /// as of the last commit: closing then has nothing to write.
    var indexedEnd: (generation: UInt64, end: UInt64)?
    /// Record positions before and after recent compactions (see
    /// ``LogStore/translateOffset(_:from:exact:)``).
    var compactionMaps: [CompactionMap] = []
    /// Whether an earlier flush failed: what this state holds may not be what the file holds.
    var isPoisoned = false
    /// Whether the handle was closed.
    var isClosed = false

    /// The state of a store whose log holds nothing after its header.
    init(header: StoreHeader) {
        self.header = header
        live = KeyDirectory()
        entityCounts = EntityCounter()
        liveRecordBytes = 0
        currentMetadata = header.metadata
        metadataOffset = 0
        nextKey = max(header.nextKey, 1)
        lastNumber = header.baseTransactionCount
        lastCommitChecksum = nil
        endOffset = UInt64(header.length)
    }

    /// Whether the index file on disk describes the state as of the last commit.
    var indexIsCurrent: Bool {
        indexedEnd?.generation == header.generation && indexedEnd?.end == endOffset
    }

    /// The bytes the log would have if it held only its live records: the header, those
    /// records and one commit record.
    var liveLength: UInt64 {
        UInt64(header.length) + liveRecordBytes + UInt64(header.layout.commitRecordLength)
    }

    /// The fields of the index checkpoint that describes this state, without its entries.
    var indexHeader: StoreIndex {
        StoreIndex(
            storeUUID: header.storeUUID,
            generation: header.generation,
            coveredLength: endOffset,
            lastCommitChecksum: lastCommitChecksum ?? 0,
            lastNumber: lastNumber,
            nextKey: nextKey,
            metadataOffset: metadataOffset,
            liveBytes: liveRecordBytes,
            entries: []
        )
    }

    /// The index checkpoint that describes this state.
    var index: StoreIndex {
        var index = indexHeader
        index.entries = live.sortedEntries()
        return index
    }
}
