/// Rebuilds a store's live state (its keydir, counts and latest metadata offset) from the log as
/// a ``LogScanner`` reads it: the replay half of opening a store.
///
/// Records are applied as soon as the scanner has checked them, not held until their commit
/// arrives. A bulk save's transaction holds a record for every object it saved, and a list of
/// them kept until the commit (grown by copying, into fresh memory each time) would fault in
/// more pages than the keydir itself. When the scan ends in damage instead of a commit,
/// ``rollBack()`` undoes what the unfinished transaction changed, so only committed
/// transactions are ever seen by the store.
///
/// Undoing needs little: a location older than the transaction lies before the transaction's
/// first record, so the first change of each key that had such a location saves it, and the
/// keys the transaction created are the live ones whose location lies at or after its start.
/// A bulk insert therefore saves nothing.
///
/// Records whose keys jump around are applied in batches of 16, the home slots of a batch's
/// keys read before any is updated: a compacted log lists the objects updated since in random
/// key order, and updating them one after another waited for memory on almost every one.
/// Records with ascending keys, the common case, are applied at once.
package struct LogReplay: LogScanVisitor {
    /// The live keys and their latest committed locations.
    package private(set) var live: KeyDirectory
    /// Live objects per entity (exact between transactions: a run of changes is added at the
    /// commit).
    package private(set) var entityCounts: EntityCounter
    /// Bytes of the live objects' latest records.
    package private(set) var liveRecordBytes: UInt64
    /// Offset of the latest metadata record, or 0 when the header's dictionary is the latest.
    package private(set) var metadataOffset: UInt64
    /// The first key never handed out.
    package private(set) var nextKey: ObjectKey
    /// The number of the last user transaction.
    package private(set) var lastNumber: UInt64
    /// The stored CRC of the last commit record replayed.
    package private(set) var lastCommitChecksum: UInt32?

    /// Offset of the first record of the transaction being replayed.
    private var transactionStart: UInt64
    /// Whether records were applied since the last commit.
    private var hasUncommitted = false
    /// Locations, from before the current transaction, of the keys it changed.
    private var saved: [(key: ObjectKey, location: RecordLocation)] = []
    private var committedCounts: EntityCounter
    /// An entity whose count changes by `runDelta` not yet added to `entityCounts`: records
    /// come in runs of one entity, and one addition per run is cheaper than one per record.
    private var runEntity: EntityTag = 0
    private var runDelta = 0
    /// The key of the last record visited.
    private var previousKey: ObjectKey = 0
    /// Records visited but not applied yet (at most `batchSize`).
    private var batch: [ScannedRecord] = []
    /// What the reads ahead of each batch found, combined (see ``KeyDirectory/keyAtHome(of:)``).
    private var slotReads: ObjectKey = 0
    private var committedRecordBytes: UInt64
    private var committedMetadataOffset: UInt64

    /// Starts from the state as of `start`, a transaction boundary where the scan begins.
    package init(
        live: KeyDirectory,
        entityCounts: EntityCounter,
        liveRecordBytes: UInt64,
        metadataOffset: UInt64,
        nextKey: ObjectKey,
        lastNumber: UInt64,
        lastCommitChecksum: UInt32?,
        start: UInt64
    ) {
        self.live = live
        self.entityCounts = entityCounts
        self.liveRecordBytes = liveRecordBytes
        self.metadataOffset = metadataOffset
        self.nextKey = nextKey
        self.lastNumber = lastNumber
        self.lastCommitChecksum = lastCommitChecksum
        transactionStart = start
        committedCounts = entityCounts
        committedRecordBytes = liveRecordBytes
        committedMetadataOffset = metadataOffset
        batch.reserveCapacity(Self.batchSize)
    }

    /// Makes room in the keydir for `count` keys in all, so a large replay does not grow it
    /// (and copy it) step by step.
    package mutating func reserveCapacity(_ count: Int) {
        live.reserveCapacity(count)
    }

    @inline(__always)
    package mutating func visit(_ record: ScannedRecord, payload: UnsafeRawBufferPointer) {
        hasUncommitted = true
        // A key just above the previous one is most likely in a cache line the previous update
        // loaded (the keydir keeps runs of 64 consecutive keys together): no need to batch.
        let isNearPrevious = record.key &- previousKey < 64
        previousKey = record.key
        if isNearPrevious && batch.isEmpty {
            apply(record)
        } else {
            batch.append(record)
            if batch.count == Self.batchSize { applyBatch() }
        }
    }

    /// Applies a patch once the records before it are: its key's record must be its base, a put
    /// (FORMAT.md, section 4); anything else is damage of its transaction.
    package mutating func visitPatch(
        _ record: ScannedRecord,
        payload: UnsafeRawBufferPointer
    ) -> String? {
        hasUncommitted = true
        if !batch.isEmpty { applyBatch() }
        previousKey = record.key
        if let problem = Self.patchProblem(record, current: live[record.key]) { return problem }
        apply(record)
        return nil
    }

    /// What makes the patch `record` damage when its key's record is `current`, or nil: the
    /// key must be live, and its record the put the patch names (FORMAT.md, section 4).
    package static func patchProblem(_ record: ScannedRecord, current: RecordLocation?) -> String? {
        guard let current else { return "patch of key \(record.key), which is not live" }
        guard !current.isPatch, current.offset == record.baseOffset,
            current.length == record.baseLength, current.entity == record.entity
        else {
            return "patch of key \(record.key) names a base (offset \(record.baseOffset), "
                + "\(record.baseLength) bytes) that is not the key's record"
        }
        return nil
    }

    /// Records applied together: their home slots are read first, all at once.
    private static let batchSize = 16

    /// Applies the records of `batch`, in order.
    @inline(never)
    private mutating func applyBatch() {
        // Reading the home slots of the whole batch first puts their cache misses in flight
        // together; combining what was read into `slotReads` keeps the reads from being
        // optimized away.
        var read: ObjectKey = 0
        for record in batch { read ^= live.keyAtHome(of: record.key) }
        slotReads ^= read
        for record in batch { apply(record) }
        batch.removeAll(keepingCapacity: true)
    }

    @inline(__always)
    private mutating func apply(_ record: ScannedRecord) {
        switch record.type {
        case .put, .patch:
            let location = RecordLocation(
                entity: record.entity,
                offset: record.offset,
                length: record.length,
                isPatch: record.type == .patch
            )
            if let old = live.updateValue(location, forKey: record.key) {
                if old.offset < transactionStart { saved.append((record.key, old)) }
                count(old.entity, -1)
                liveRecordBytes -= UInt64(old.length)
            }
            count(record.entity, 1)
            liveRecordBytes += record.totalLength
        case .delete:
            if let old = live.removeValue(forKey: record.key) {
                if old.offset < transactionStart { saved.append((record.key, old)) }
                count(old.entity, -1)
                liveRecordBytes -= UInt64(old.length)
            }
        case .metadata:
            metadataOffset = record.offset
        case .commit, .padding:
            break
        }
    }

    /// Changes `entity`'s live count by `delta`.
    @inline(__always)
    private mutating func count(_ entity: EntityTag, _ delta: Int) {
        if entity != runEntity {
            addRun()
            runEntity = entity
        }
        runDelta += delta
    }

    /// Adds the pending run of count changes to `entityCounts`.
    private mutating func addRun() {
        if runDelta != 0 { entityCounts.add(runEntity, runDelta) }
        runDelta = 0
    }

    package mutating func commit(_ commit: ScannedCommit) {
        applyBatch()
        if commit.isCompaction {
            metadataOffset = 0
        } else {
            lastNumber = commit.number
        }
        nextKey = max(nextKey, commit.commit.nextKey)
        lastCommitChecksum = commit.commitChecksum
        transactionStart = commit.endOffset
        if hasUncommitted {
            hasUncommitted = false
            addRun()
            saved.removeAll(keepingCapacity: true)
            committedCounts = entityCounts
            committedRecordBytes = liveRecordBytes
        }
        committedMetadataOffset = metadataOffset
    }

    /// Undoes the damaged transaction's records and goes on at `offset`, where a salvage
    /// resumes: the next transaction's records are new there.
    package mutating func skip(to offset: UInt64, nextKey lostNextKey: ObjectKey) {
        rollBack()
        transactionStart = offset
        nextKey = max(nextKey, lostNextKey)
    }

    /// Undoes the records applied since the last commit, leaving the state as of that commit.
    package mutating func rollBack() {
        // Records not applied yet need no undoing.
        batch.removeAll()
        guard hasUncommitted else { return }
        var created: [ObjectKey] = []
        live.forEachEntry { key, location in
            if location.offset >= transactionStart { created.append(key) }
        }
        for key in created { live.removeValue(forKey: key) }
        for (key, location) in saved { live.updateValue(location, forKey: key) }
        saved.removeAll()
        runDelta = 0
        entityCounts = committedCounts
        liveRecordBytes = committedRecordBytes
        metadataOffset = committedMetadataOffset
        hasUncommitted = false
    }
}
