/// One record found by a ``LogScanner``.
///
/// Kept small (40 bytes): a scan holds one for every record of a transaction until its commit,
/// and a bulk save's transaction has a million.
package struct ScannedRecord: Sendable {
    /// Offset of the record in the file.
    package var offset: UInt64
    /// The object key (object records) or 0.
    package var key: UInt64
    /// The entity tag (object records) or 0.
    package var entity: EntityTag
    /// Bytes of the whole record.
    package var length: UInt32
    package var type: RecordType
    package var flags: UInt8
    /// A patch's base: the length and offset of the put it changes (0 for other types).
    package var baseLength: UInt32
    package var baseOffset: UInt64

    package init(frame: RecordFrame, offset: UInt64) {
        self.offset = offset
        key = frame.key
        entity = frame.entity
        length = UInt32(frame.totalLength)
        type = frame.type
        flags = frame.flags
        baseLength = frame.baseLength
        baseOffset = frame.baseOffset
    }

    package var totalLength: UInt64 { UInt64(length) }

    /// Where the record is, for the key directory (a put's or a patch's).
    package var location: RecordLocation {
        RecordLocation(entity: entity, offset: offset, length: length, isPatch: type == .patch)
    }

    /// A patch's base record.
    package var base: RecordLocation {
        RecordLocation(entity: entity, offset: baseOffset, length: baseLength)
    }
}

/// One committed transaction found by a ``LogScanner``.
package struct ScannedTransaction: Sendable {
    /// The transaction's number (1 for a store's first), or 0 for a compaction's commit.
    package var number: UInt64
    package var commit: CommitPayload
    /// Offset of the commit record.
    package var commitOffset: UInt64
    /// The commit record's stored CRC (the index checkpoint names its last covered commit by it).
    package var commitChecksum: UInt32
    package var records: [ScannedRecord]
    package var isCompaction: Bool

    /// Offset just past the commit record.
    package var endOffset: UInt64

    package init(_ commit: ScannedCommit, records: [ScannedRecord]) {
        number = commit.number
        self.commit = commit.commit
        commitOffset = commit.commitOffset
        commitChecksum = commit.commitChecksum
        self.records = records
        isCompaction = commit.isCompaction
        endOffset = commit.endOffset
    }
}

/// What a ``LogScanner`` reports while it scans, record by record.
///
/// The scanner calls ``visit(_:payload:)`` for each record as soon as it is checked, before its
/// transaction is known to be committed, and ``commit(_:)`` when that transaction's commit
/// record proves valid. A visitor that applies records eagerly must therefore be able to undo
/// the records visited since the last commit when the scan ends in damage (see
/// ``LogScanner/Outcome/damage``).
package protocol LogScanVisitor {
    /// A record (not a commit or a patch) whose frame, checksum and structure are valid;
    /// `payload` is valid only during the call.
    mutating func visit(_ record: ScannedRecord, payload: UnsafeRawBufferPointer) throws
    /// A patch record whose frame, checksum and structure are valid; returns what is wrong with
    /// it where the visitor knows the state it applies to (its key not live, or its record not
    /// the patch's base), which makes it damage, or nil. `payload` is valid only during the
    /// call.
    mutating func visitPatch(
        _ record: ScannedRecord,
        payload: UnsafeRawBufferPointer
    ) throws
        -> String?
    /// The records visited since the previous commit form a committed transaction.
    mutating func commit(_ commit: ScannedCommit) throws
    /// The records visited since the previous commit belong to a damaged transaction: forget
    /// them, for a salvage goes on at `offset`, the start of an intact transaction (see
    /// ``LogScanner/salvage(from:lastNumber:visitor:)``). `nextKey` is the lost transaction's
    /// own next key when its commit survived, else 0.
    mutating func skip(to offset: UInt64, nextKey: ObjectKey)
}

extension LogScanVisitor {
    /// A visitor that keeps no state to check a patch against takes it as any other record.
    package mutating func visitPatch(
        _ record: ScannedRecord,
        payload: UnsafeRawBufferPointer
    ) throws -> String? {
        try visit(record, payload: payload)
        return nil
    }
}

/// A valid commit record found by a ``LogScanner``: the end of a committed transaction.
package struct ScannedCommit: Sendable {
    /// The transaction's number (1 for a store's first), or 0 for a compaction's commit.
    package var number: UInt64
    package var commit: CommitPayload
    /// Offset of the commit record.
    package var commitOffset: UInt64
    /// The commit record's stored CRC (the index checkpoint names its last covered commit by it).
    package var commitChecksum: UInt32
    package var isCompaction: Bool
    /// Offset just past the commit record.
    package var endOffset: UInt64
}

/// Damage found where a record should be.
package struct LogDamage: Sendable, Equatable {
    package enum Kind: Sendable, Equatable {
        /// The file ends inside, or is damaged within, the transactions written since the
        /// last flush that completed (no later commit shows the damaged one was
        /// acknowledged), nobody is writing the store and no index checkpoint covers that
        /// transaction: what a crash during unacknowledged saves leaves. Opening for writing
        /// cuts it off.
        case tornTail
        /// As a torn tail, but another process holds the writer lock: its save is in progress.
        case inFlight
        /// Damage with a valid commit after it that shows the damaged transaction was
        /// acknowledged, or in a transaction an index checkpoint covers: committed data is
        /// unreadable.
        case corrupt
    }

    package var kind: Kind
    /// Offset of the first damaged byte range (a record's frame).
    package var offset: UInt64
    /// What is wrong.
    package var reason: String
    /// Where the valid log ends (just past the last good commit before the damage).
    package var validEnd: UInt64
    /// Valid commits found after the damage (0 for a torn tail).
    package var laterCommits: Int
    /// The first few of those commits, in file order: where a salvage can go on.
    package var resumeCandidates: [FoundCommit] = []
}

/// A valid commit record found by its trailer, without a forward scan.
package struct FoundCommit: Sendable, Equatable {
    /// The offset of the first record of its transaction, as the commit records it.
    package var firstRecordOffset: UInt64
    /// Offset just past the commit record.
    package var end: UInt64
    /// The transaction's number, or 0 for a compaction's commit.
    package var number: UInt64
    package var isCompaction: Bool
    package var nextKey: ObjectKey
    /// Records in its transaction before the commit.
    package var recordCount: UInt32
}

/// Reads a store's records in order, checking every frame, checksum and commit, and reports the
/// committed transactions and where the valid log ends.
///
/// Records are read through a window of the file (256 KiB by default), so scanning needs little
/// memory whatever the file's size. The window is small enough that the bytes a read copied
/// into it are still in the CPU's cache when the scan checks them: a window larger than the
/// cache has its first bytes evicted by its last, and the scan reads them from memory again
/// (`objectlog-bench store --child open-count PATH rebuild` times a replay; see
/// Benchmarks/README.md).
package struct LogScanner {
    /// The window's memory, allocated once per scanner and refilled in place (a fresh array
    /// per window cost a page fault per page).
    private final class Window {
        let bytes: UnsafeMutableRawBufferPointer

        init(capacity: Int) {
            bytes = .allocate(byteCount: capacity, alignment: 16)
        }

        deinit { bytes.deallocate() }
    }

    private let file: any StoreFile
    private let path: String
    private let fileSize: UInt64
    private let layout: RecordLayout
    /// Whether the file's format may hold patch records (else a patch is damage).
    private let allowsPatches: Bool
    private var window: Window?
    /// File offset of the window's first byte.
    private var windowStart: UInt64 = 0
    /// Bytes of the file in the window.
    private var windowCount = 0
    private let windowSize: Int
    /// Offset just past the last commit an index checkpoint of this file covers: transactions
    /// before it were acknowledged, so damage there is corruption even in the last one.
    package var acknowledgedLength: UInt64 = 0
    /// Whether another process holds the writer lock: an incomplete last transaction is then a
    /// save in flight, not a torn tail.
    package var hasActiveWriter = false

    package init(
        file: any StoreFile,
        path: String,
        fileSize: UInt64,
        layout: RecordLayout,
        allowsPatches: Bool,
        windowSize: Int = 256 << 10
    ) {
        self.file = file
        self.path = path
        self.fileSize = fileSize
        self.layout = layout
        self.allowsPatches = allowsPatches && layout == .compact
        self.windowSize = windowSize
    }

    /// A scanner of the file whose header is `header`.
    package init(
        file: any StoreFile,
        path: String,
        fileSize: UInt64,
        header: StoreHeader,
        windowSize: Int = 256 << 10
    ) {
        self.init(
            file: file,
            path: path,
            fileSize: fileSize,
            layout: header.layout,
            allowsPatches: header.allowsPatches,
            windowSize: windowSize
        )
    }

    /// Makes `[offset, offset + count)` available in the window; returns its start in the window,
    /// or nil if the file ends before it.
    @inline(__always)
    private mutating func ensure(_ offset: UInt64, _ count: Int) throws -> Int? {
        if offset >= windowStart, offset + UInt64(count) <= windowStart + UInt64(windowCount) {
            return Int(offset - windowStart)
        }
        return try refill(offset, count)
    }

    private mutating func refill(_ offset: UInt64, _ count: Int) throws -> Int? {
        guard offset + UInt64(count) <= fileSize else { return nil }
        let length = Int(min(UInt64(max(windowSize, count)), fileSize - offset))
        // A copy of this scanner may share the buffer: refill only one of its own. Never larger
        // than the file: a small store needs no full-size buffer.
        if !isKnownUniquelyReferenced(&window) || window!.bytes.count < length {
            window = nil
            window = Window(capacity: length)
        }
        let bytes = window!.bytes
        var got = 0
        while got < length {
            let read = try file.read(
                into: UnsafeMutableRawBufferPointer(rebasing: bytes[got..<length]),
                at: offset + UInt64(got)
            )
            if read == 0 { break }
            got += read
        }
        windowStart = offset
        windowCount = got
        guard got >= count else { return nil }
        return 0
    }

    /// The outcome of a scan.
    package struct Outcome: Sendable {
        /// Just past the last valid commit (the header's end when there is none).
        package var validEnd: UInt64
        /// Damage after `validEnd`, if any.
        package var damage: LogDamage?
        /// Number of the last user transaction seen.
        package var lastNumber: UInt64
        /// The CRC of the last valid commit record, if any.
        package var lastCommitChecksum: UInt32?
    }

    /// Scans from `start` (a transaction boundary) to the end of the file, collecting each
    /// transaction's records until its commit.
    ///
    /// - Parameters:
    ///   - start: Offset of the first record to read.
    ///   - lastNumber: The number of the last user transaction before `start`.
    ///   - onRecord: Called for every record whose frame and checksum are valid, with its payload
    ///     (valid only during the call), before its transaction is known to be committed.
    ///   - committed: The location of a key as of the last transaction reported, if patches
    ///     are to be checked against it (as a replay does).
    ///   - onTransaction: Called for every committed transaction, in order.
    /// - Returns: Where the valid log ends and any damage after it.
    /// - Throws: `StoreError` `.io`, or what the closures throw.
    package mutating func scan(
        from start: UInt64,
        lastNumber: UInt64,
        onRecord: ((ScannedRecord, UnsafeRawBufferPointer) throws -> Void)? = nil,
        committed: ((ObjectKey) -> RecordLocation?)? = nil,
        onTransaction: (ScannedTransaction) throws -> Void
    ) throws -> Outcome {
        try withoutActuallyEscaping(onTransaction) { onTransaction in
            var collector = TransactionCollector(
                onRecord: onRecord,
                onTransaction: onTransaction,
                committed: committed
            )
            return try scan(from: start, lastNumber: lastNumber, visitor: &collector)
        }
    }

    /// Salvages from `start` like ``salvage(from:lastNumber:visitor:)``, collecting each kept
    /// transaction's records until its commit, as ``scan(from:lastNumber:onRecord:onTransaction:)``
    /// does.
    package mutating func salvage(
        from start: UInt64,
        lastNumber: UInt64,
        onRecord: ((ScannedRecord, UnsafeRawBufferPointer) throws -> Void)? = nil,
        committed: ((ObjectKey) -> RecordLocation?)? = nil,
        onTransaction: (ScannedTransaction) throws -> Void
    ) throws -> SalvageOutcome {
        try withoutActuallyEscaping(onTransaction) { onTransaction in
            var collector = TransactionCollector(
                onRecord: onRecord,
                onTransaction: onTransaction,
                committed: committed
            )
            return try salvage(from: start, lastNumber: lastNumber, visitor: &collector)
        }
    }

    /// Collects each transaction's records for ``scan(from:lastNumber:onRecord:onTransaction:)``.
    ///
    /// With `committed`, the location of a key as of the last transaction collected, it checks
    /// each patch as a replay does, against that and the records of its own transaction before
    /// it.
    private struct TransactionCollector: LogScanVisitor {
        let onRecord: ((ScannedRecord, UnsafeRawBufferPointer) throws -> Void)?
        let onTransaction: (ScannedTransaction) throws -> Void
        let committed: ((ObjectKey) -> RecordLocation?)?
        var pending: [ScannedRecord] = []
        /// The locations the pending records give their keys (nil for a delete).
        var changed: [ObjectKey: RecordLocation?] = [:]

        mutating func visit(_ record: ScannedRecord, payload: UnsafeRawBufferPointer) throws {
            try onRecord?(record, payload)
            pending.append(record)
            guard committed != nil else { return }
            switch record.type {
            case .put: changed[record.key] = .some(record.location)
            case .delete: changed[record.key] = .some(nil)
            case .metadata, .commit, .padding, .patch: break
            }
        }

        mutating func visitPatch(
            _ record: ScannedRecord,
            payload: UnsafeRawBufferPointer
        ) throws -> String? {
            if let committed {
                let current = changed[record.key] ?? committed(record.key)
                if let problem = LogReplay.patchProblem(record, current: current) {
                    return problem
                }
                changed[record.key] = .some(record.location)
            }
            try onRecord?(record, payload)
            pending.append(record)
            return nil
        }

        mutating func commit(_ commit: ScannedCommit) throws {
            try onTransaction(ScannedTransaction(commit, records: pending))
            pending.removeAll(keepingCapacity: true)
            changed.removeAll(keepingCapacity: true)
        }

        mutating func skip(to offset: UInt64, nextKey: ObjectKey) {
            pending.removeAll(keepingCapacity: true)
            changed.removeAll(keepingCapacity: true)
        }
    }

    /// Scans from `start` (a transaction boundary) to the end of the file, reporting every valid
    /// record and commit to `visitor` as it goes.
    ///
    /// When the outcome has damage, `visitor` has seen records after the last commit it was
    /// told of; they belong to no committed transaction.
    ///
    /// - Parameters:
    ///   - start: Offset of the first record to read.
    ///   - lastNumber: The number of the last user transaction before `start`.
    ///   - visitor: Told of each record and each commit, in file order.
    /// - Returns: Where the valid log ends and any damage after it.
    /// - Throws: `StoreError` `.io`, or what the visitor throws.
    package mutating func scan<Visitor: LogScanVisitor>(
        from start: UInt64,
        lastNumber: UInt64,
        visitor: inout Visitor
    ) throws -> Outcome {
        var offset = start
        var transactionStart = start
        var pendingCount = 0
        var outcome = Outcome(
            validEnd: start,
            damage: nil,
            lastNumber: lastNumber,
            lastCommitChecksum: nil
        )

        func damage(_ reason: String, writtenWhole: Bool = false) throws -> Outcome {
            var result = outcome
            result.damage = try classify(
                at: offset,
                transactionStart: transactionStart,
                number: outcome.lastNumber + 1,
                reason: reason,
                writtenWhole: writtenWhole
            )
            return result
        }

        let layout = self.layout
        let fileSize = self.fileSize
        let maximumFrameLength = layout.maximumFrameLength
        let maximumAnyFrameLength = layout.maximumAnyFrameLength
        let tables = CRC32.lookupTables
        while offset < fileSize {
            let available = Int(min(UInt64(maximumAnyFrameLength), fileSize - offset))
            guard let frameAt = try ensure(offset, available) else {
                return try damage("incomplete record frame")
            }
            // Safe: `ensure` has filled the window, so it exists.
            let windowBytes = UnsafeRawBufferPointer(window!.bytes)
            let frameBytes = UnsafeRawBufferPointer(
                start: windowBytes.baseAddress! + frameAt,
                count: available
            )
            let frame: RecordFrame
            // Most records of a log are compact puts: decode them without the general
            // decoder's outcome enum, which says what is wrong when something is.
            if layout == .compact, available >= maximumFrameLength,
                frameBytes[4] == RecordType.put.rawValue,
                let put = RecordFrame.decodeCompactPut(frameBytes)
            {
                frame = put
            } else {
                switch RecordFrame.decode(frameBytes, layout: layout) {
                case .frame(let found): frame = found
                case .incomplete:
                    return try damage(
                        "incomplete record frame (\(fileSize - offset) bytes before the end of the file)"
                    )
                case .invalid(let reason): return try damage(reason)
                }
            }
            let total = frame.totalLength
            guard let recordAt = try ensure(offset, total) else {
                return try damage("record of \(total) bytes runs past the end of the file")
            }
            // Safe: `ensure` has made `total` bytes from `recordAt` available in the window.
            let recordStart = UnsafeRawBufferPointer(window!.bytes).baseAddress! + recordAt
            let computed = CRC32.checksum(
                UnsafeRawBufferPointer(start: recordStart + 4, count: total - 4),
                tables: tables
            )
            guard checksumsMatch(frame.checksum, computed) else {
                return try damage(
                    RecordFrame.checksumMismatch(stored: frame.checksum, computed: computed)
                )
            }
            let payload = UnsafeRawBufferPointer(
                start: recordStart + frame.frameLength,
                count: total - frame.frameLength
            )
            if layout == .compact, frame.type == .put, frame.flags & PutFlags.hasBlobs == 0 {
                // A compact put without a blob list has no structure to check but its key.
                if frame.key == 0 { return try damage("put record with key 0") }
            } else if let problem = Self.structuralProblem(
                frame: frame,
                payload: payload,
                layout: layout
            ) {
                return try damage(problem)
            }
            if frame.type == .commit {
                // Safe: structuralProblem has checked the payload decodes.
                let commit = CommitPayload(payload)!
                let isCompaction = frame.flags & CommitFlags.compaction != 0
                let expected = isCompaction ? 0 : outcome.lastNumber + 1
                guard commit.firstRecordOffset == transactionStart,
                    Int(commit.recordCount) == pendingCount
                else {
                    return try damage("commit record does not match its transaction's records")
                }
                guard frame.key == expected else {
                    return try damage("commit numbered \(frame.key) where \(expected) was expected")
                }
                try visitor.commit(
                    ScannedCommit(
                        number: frame.key,
                        commit: commit,
                        commitOffset: offset,
                        commitChecksum: frame.checksum,
                        isCompaction: isCompaction,
                        endOffset: offset + UInt64(total)
                    )
                )
                if !isCompaction { outcome.lastNumber = frame.key }
                outcome.lastCommitChecksum = frame.checksum
                pendingCount = 0
                offset += UInt64(total)
                transactionStart = offset
                outcome.validEnd = offset
            } else if frame.type == .patch {
                guard allowsPatches else {
                    return try damage("patch record in a file of format version 1 or 2")
                }
                guard frame.baseOffset <= offset,
                    UInt64(frame.baseLength) <= offset - frame.baseOffset
                else {
                    return try damage("patch record whose base does not lie before it")
                }
                let record = ScannedRecord(frame: frame, offset: offset)
                if let problem = try visitor.visitPatch(record, payload: payload) {
                    // The patch record itself is intact: if the rest of its transaction and
                    // its commit are too, the transaction was written whole, and its wrong base
                    // is no torn write.
                    let isWhole = try transactionIsWhole(
                        after: offset + UInt64(total),
                        transactionStart: transactionStart,
                        recordsBefore: pendingCount + 1,
                        number: outcome.lastNumber + 1
                    )
                    return try damage(problem, writtenWhole: isWhole)
                }
                pendingCount += 1
                offset += UInt64(total)
            } else {
                try visitor.visit(ScannedRecord(frame: frame, offset: offset), payload: payload)
                pendingCount += 1
                offset += UInt64(total)
            }
        }
        if pendingCount != 0 {
            return try damage("the last transaction has no commit record")
        }
        return outcome
    }

    /// A structural problem with a record whose checksum is valid, or nil.
    static func structuralProblem(
        frame: RecordFrame,
        payload: UnsafeRawBufferPointer,
        layout: RecordLayout
    ) -> String? {
        switch frame.type {
        case .put:
            guard PutContents(payload, flags: frame.flags, layout: layout) != nil else {
                return "put record too short for the blob list it declares"
            }
            return frame.key == 0 ? "put record with key 0" : nil
        case .delete:
            return frame.payloadLength == 0 && frame.key != 0 ? nil : "malformed delete record"
        case .patch:
            return layout == .compact && frame.key != 0 && frame.baseLength > 0
                ? nil : "malformed patch record"
        case .metadata:
            return nil
        case .commit:
            guard let commit = CommitPayload(payload) else { return "malformed commit record" }
            return commit.nextKey > LogFormat.maximumCounter || frame.key > LogFormat.maximumCounter
                ? "commit record counters out of range" : nil
        case .padding:
            return nil
        }
    }

    /// Whether the records from `offset` (just past an intact record of the transaction that
    /// starts at `transactionStart`, after `recordsBefore` records of it) up to the next commit
    /// record are all intact (frame, bounds, checksum, structure), and that commit is the
    /// transaction's: its first-record offset, record count and number (`number`, or 0 for a
    /// compaction) match.
    private mutating func transactionIsWhole(
        after offset: UInt64,
        transactionStart: UInt64,
        recordsBefore: Int,
        number: UInt64
    ) throws -> Bool {
        var offset = offset
        var count = recordsBefore
        while offset < fileSize {
            let available = Int(min(UInt64(layout.maximumAnyFrameLength), fileSize - offset))
            guard let frameAt = try ensure(offset, available) else { return false }
            // Safe: `ensure` has filled the window, so it exists.
            let frameBytes = UnsafeRawBufferPointer(
                start: UnsafeRawBufferPointer(window!.bytes).baseAddress! + frameAt,
                count: available
            )
            guard case .frame(let frame) = RecordFrame.decode(frameBytes, layout: layout) else {
                return false
            }
            let total = frame.totalLength
            guard let recordAt = try ensure(offset, total) else { return false }
            // Safe: `ensure` has made `total` bytes from `recordAt` available in the window.
            let record = UnsafeRawBufferPointer(
                start: UnsafeRawBufferPointer(window!.bytes).baseAddress! + recordAt,
                count: total
            )
            let payload = UnsafeRawBufferPointer(rebasing: record[frame.frameLength...])
            guard checksumsMatch(frame.checksum, RecordFrame.checksum(of: record)),
                Self.structuralProblem(frame: frame, payload: payload, layout: layout) == nil
            else { return false }
            switch frame.type {
            case .commit:
                // Safe: structuralProblem has checked the payload decodes.
                let commit = CommitPayload(payload)!
                let isCompaction = frame.flags & CommitFlags.compaction != 0
                return commit.firstRecordOffset == transactionStart
                    && Int(commit.recordCount) == count && frame.key == (isCompaction ? 0 : number)
            case .patch:
                guard allowsPatches, frame.baseOffset <= offset,
                    UInt64(frame.baseLength) <= offset - frame.baseOffset
                else { return false }
            case .put, .delete, .metadata, .padding:
                break
            }
            count += 1
            offset += UInt64(total)
        }
        return false
    }

    /// Decides whether damage at `offset` is a torn tail or corruption, by looking for valid
    /// commit records after it that show the damaged transaction was acknowledged.
    ///
    /// Damage in a transaction `writtenWhole` (every record intact and its commit valid: a
    /// patch whose base is wrong) is corruption wherever it lies: a torn write leaves a record
    /// or the commit damaged or missing, so this transaction was written as it is.
    private mutating func classify(
        at offset: UInt64,
        transactionStart: UInt64,
        number: UInt64,
        reason: String,
        writtenWhole: Bool = false
    ) throws -> LogDamage {
        let commits = try validCommits(after: offset)
        // Damage that no later transaction shows was acknowledged is what an interrupted,
        // unacknowledged save leaves: the sectors written since the last completed flush may
        // reach the disk in any order, and those may hold several transactions when saves
        // shared a flush. Unless an index checkpoint covers that transaction: the index is
        // written only after its commit was synced, so the transaction was acknowledged and
        // its damage is corruption.
        var isAcknowledged = false
        for commit in commits {
            if try showsAcknowledged(
                commit,
                damageAt: offset,
                transactionStart: transactionStart,
                number: number
            ) {
                isAcknowledged = true
                break
            }
        }
        let kind: LogDamage.Kind
        var reason = reason
        if isAcknowledged {
            kind = .corrupt
        } else if writtenWhole {
            kind = .corrupt
            reason += " (in a transaction whose every record and commit are intact)"
        } else if transactionStart < acknowledgedLength {
            kind = .corrupt
            reason += " (in a transaction the index checkpoint shows was committed)"
        } else {
            kind = hasActiveWriter ? .inFlight : .tornTail
        }
        return LogDamage(
            kind: kind,
            offset: offset,
            reason: reason,
            validEnd: transactionStart,
            laterCommits: kind == .corrupt ? commits.count : 0,
            resumeCandidates: kind == .corrupt ? Array(commits.prefix(16)) : []
        )
    }

    /// Whether `commit`, valid and after damage at `offset` in the transaction numbered
    /// `number` that starts at `transactionStart`, shows that transaction was acknowledged.
    ///
    /// The damaged transaction's own commit shows nothing. A later transaction shows it when it
    /// was written after the damaged one was durable: it is intact and its note names no
    /// durable mark (every transaction before it was durable when it was written, as every
    /// writer before group commit wrote them), or a mark at `number` or beyond (FORMAT.md,
    /// section 5). A damaged one shows nothing: it may be one of a torn group. A commit of no
    /// transaction a writer could have written there is taken as showing it, as before group
    /// commit every valid commit after the damage was.
    private mutating func showsAcknowledged(
        _ commit: FoundCommit,
        damageAt offset: UInt64,
        transactionStart: UInt64,
        number: UInt64
    ) throws -> Bool {
        if commit.firstRecordOffset == transactionStart { return false }
        let commitStart = commit.end - UInt64(layout.commitRecordLength)
        guard commit.firstRecordOffset > offset, commit.firstRecordOffset <= commitStart else {
            return true
        }
        guard let mark = try durableMark(from: commit.firstRecordOffset, to: commitStart, commit)
        else { return false }
        return mark.map { $0 >= number } ?? true
    }

    /// The durable mark of the transaction whose records run from `start` to its commit at
    /// `end`: `.some(nil)` when it is intact (every record valid and as many as `commit`
    /// counts) and its note names none; nil when it is damaged.
    private mutating func durableMark(
        from start: UInt64,
        to end: UInt64,
        _ commit: FoundCommit
    ) throws -> UInt64?? {
        var offset = start
        var count: UInt32 = 0
        var mark: UInt64?
        while offset < end {
            let available = Int(min(UInt64(layout.maximumAnyFrameLength), end - offset))
            guard let frameAt = try ensure(offset, available) else { return nil }
            // Safe: `ensure` has filled the window, so it exists.
            let frameBytes = UnsafeRawBufferPointer(
                start: UnsafeRawBufferPointer(window!.bytes).baseAddress! + frameAt,
                count: available
            )
            guard case .frame(let frame) = RecordFrame.decode(frameBytes, layout: layout),
                frame.type != .commit, UInt64(frame.totalLength) <= end - offset
            else { return nil }
            let total = frame.totalLength
            guard let recordAt = try ensure(offset, total) else { return nil }
            // Safe: `ensure` has made `total` bytes from `recordAt` available in the window.
            let record = UnsafeRawBufferPointer(
                start: UnsafeRawBufferPointer(window!.bytes).baseAddress! + recordAt,
                count: total
            )
            let payload = UnsafeRawBufferPointer(rebasing: record[frame.frameLength...])
            guard checksumsMatch(frame.checksum, RecordFrame.checksum(of: record)),
                Self.structuralProblem(frame: frame, payload: payload, layout: layout) == nil
            else { return nil }
            // The note is in the padding just before the commit record.
            mark =
                frame.type == .padding && offset + UInt64(total) == end
                ? TransactionNote.durableThrough(padding: payload) : nil
            count += 1
            offset += UInt64(total)
        }
        guard offset == end, count == commit.recordCount else { return nil }
        return .some(mark)
    }

    /// Valid commit records wholly after `offset`, found by their trailer.
    package mutating func validCommits(after offset: UInt64) throws -> [FoundCommit] {
        var found: [FoundCommit] = []
        let trailer = LogFormat.commitTrailer
        var chunkStart = offset
        let chunk = 1 << 20
        while chunkStart < fileSize {
            let length = Int(min(UInt64(chunk + trailer.count), fileSize - chunkStart))
            let bytes = try file.read(at: chunkStart, count: length)
            var index = 0
            while index + trailer.count <= bytes.count {
                if bytes[index] == trailer[0],
                    bytes[index..<(index + trailer.count)].elementsEqual(trailer)
                {
                    let end = chunkStart + UInt64(index + trailer.count)
                    if end >= UInt64(layout.commitRecordLength),
                        end - UInt64(layout.commitRecordLength) > offset,
                        let commit = try commitFrame(endingAt: end)
                    {
                        found.append(
                            FoundCommit(
                                firstRecordOffset: commit.payload.firstRecordOffset,
                                end: end,
                                number: commit.frame.key,
                                isCompaction: commit.frame.flags & CommitFlags.compaction != 0,
                                nextKey: commit.payload.nextKey,
                                recordCount: commit.payload.recordCount
                            )
                        )
                    }
                }
                index += 1
            }
            chunkStart += UInt64(chunk)
        }
        return found
    }

    /// The commit record ending at `end`, if one with a valid checksum is there.
    package func commitRecord(endingAt end: UInt64) throws -> CommitPayload? {
        try commitFrame(endingAt: end)?.payload
    }

    /// The frame and payload of the commit record ending at `end`, if one with a valid
    /// checksum and counters in range is there.
    package func commitFrame(
        endingAt end: UInt64
    ) throws -> (frame: RecordFrame, payload: CommitPayload)? {
        let length = layout.commitRecordLength
        guard end >= UInt64(length), end <= fileSize else { return nil }
        let bytes = try file.read(at: end - UInt64(length), count: length)
        guard bytes.count == length else { return nil }
        return bytes.withUnsafeBytes { buffer -> (RecordFrame, CommitPayload)? in
            guard case .frame(let frame) = RecordFrame.decode(buffer, layout: layout),
                frame.type == .commit, frame.totalLength == length,
                checksumsMatch(frame.checksum, RecordFrame.checksum(of: buffer)),
                let payload = CommitPayload(
                    UnsafeRawBufferPointer(rebasing: buffer[frame.frameLength...])
                ),
                Self.structuralProblem(
                    frame: frame,
                    payload: UnsafeRawBufferPointer(rebasing: buffer[frame.frameLength...]),
                    layout: layout
                ) == nil
            else { return nil }
            return (frame, payload)
        }
    }
}
