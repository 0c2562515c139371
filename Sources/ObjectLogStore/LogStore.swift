import Foundation

/// An open ObjectLog store file: a checksummed, append-only log of transactions that begins
/// with a header holding the store's identity and metadata dictionary.
///
/// `LogStore` is the bytes-and-files layer under the object engine. It keeps, for every live
/// object, where its latest value is in the log (a Bitcask-style keydir), appends each
/// ``Transaction`` atomically, and reads values back on demand.
///
/// ```swift
/// let store = try LogStore.open(path: "notes.olog")
/// var transaction = Transaction()
/// let key = store.allocateKeys(1).lowerBound
/// transaction.put(key: key, entity: 1, payload: Array("hello".utf8), isInsert: true)
/// try store.commit(transaction)
/// try store.close()
/// ```
///
/// ## Rules
/// 1. One writer at a time: a second writable open of the same path, in this process or
///    another, fails with ``StoreError/Code/locked``. Read-only opens are always allowed.
/// 2. A commit that returned is durable (with the default options) and atomic; nothing of a
///    transaction is visible before its commit record is.
/// 3. After a failed `fdatasync` the handle is *poisoned*: later commits fail with
///    ``StoreError/Code/poisoned`` until the store is reopened (the kernel may have dropped the
///    dirty pages, so retrying could silently lose data).
/// 4. `LogStore` is thread-safe; calls are serialised internally.
/// 5. A store path that is a symbolic link is resolved when the store is opened; ``path`` is the
///    link's target, and the store's other files live beside it.
public final class LogStore: @unchecked Sendable {
    /// How the in-memory keydir was obtained at open.
    public enum IndexState: String, Sendable {
        /// From a valid index checkpoint, plus the log after it.
        case loaded
        /// By replaying the whole log (no valid index).
        case rebuilt
    }

    // Safe: every mutable property below is read and written only while holding `lock`.
    private let lock = NSLock()
    private let fileSystem: any FileSystem
    private let options: StoreOptions
    private var file: any StoreFile
    private var lockFile: (any StoreFile)?
    private var header: StoreHeader
    private var live: KeyDirectory
    private var entityCounts: EntityCounter
    private var liveRecordBytes: UInt64
    private var currentMetadata: Metadata
    private var metadataOffset: UInt64
    private var nextKey: ObjectKey
    private var lastNumber: UInt64
    private var lastCommitChecksum: UInt32?
    private var endOffset: UInt64
    private var isPoisoned = false
    private var isClosed = false
    private var counters = Statistics()
    /// Bytes that single-object loads read ahead while they went forward through the file.
    private var readAhead = ReadAhead()
    /// Record positions before and after recent compactions (see ``translateOffset(_:from:exact:)``).
    private var compactionMaps: [CompactionMap] = []

    /// The store file's path.
    public let path: String
    /// How the keydir was obtained when the store was opened.
    public let indexState: IndexState
    /// Damage found after the last valid commit when the store was opened (a torn tail that a
    /// writable open has cut off, or, with `salvage`, the corruption it stopped at).
    public private(set) var damageAtOpen: StoreDamage?

    // MARK: - Opening

    /// Opens the store at `path`, creating it if allowed and missing.
    ///
    /// Every record is validated (or, with a valid index checkpoint, every record after it). A
    /// torn tail — an incomplete last transaction, as a crash leaves — is dropped, and a writable
    /// open cuts it off the file before anything new is appended. Damage before a valid commit is
    /// corruption: the open fails with an error naming the byte offset, unless
    /// `options.salvage` asks for a read-only open of what precedes it.
    ///
    /// - Throws: ``StoreError`` — `.notFound`, `.notAStore`, `.unsupportedVersion`, `.corrupt`,
    ///   `.locked` or `.io`.
    public static func open(path: String, options: StoreOptions = StoreOptions()) throws -> LogStore
    {
        try LogStore(path: path, options: options)
    }

    private init(path: String, options: StoreOptions) throws {
        // A store path that is a symbolic link is resolved once, here: the lock, the index,
        // the blobs and a compaction's new file all live beside the link's target, and
        // compaction replaces the target, so the link keeps pointing at the store.
        let path = options.fileSystem.resolvingSymbolicLinks(path)
        self.path = path
        self.options = options
        fileSystem = options.fileSystem
        var options = options
        if options.salvage { options.readOnly = true }

        switch fileSystem.kind(of: path) {
        case .directory:
            throw StoreError(.notAStore, "is a directory, not an ObjectLog store", path: path)
        case .other: throw StoreError(.notAStore, "is not a regular file", path: path)
        case .missing where options.readOnly || !options.createIfMissing:
            throw StoreError(.notFound, "no store file at this path", path: path)
        default: break
        }

        if !options.readOnly {
            let lockFile = try fileSystem.open(
                path + LogFormat.lockSuffix,
                mode: .create(permissions: options.fileMode)
            )
            try lockFile.lockExclusive()
            self.lockFile = lockFile
            try Self.removeLeftovers(path: path, fileSystem: fileSystem)
            if fileSystem.kind(of: path) == .missing {
                try Self.create(path: path, options: options)
            }
        }

        file = try fileSystem.open(path, mode: options.readOnly ? .read : .readWrite)
        let fileSize = try file.size()
        header = try StoreHeader.read(from: file, path: path, fileSize: fileSize)

        live = KeyDirectory()
        entityCounts = EntityCounter()
        liveRecordBytes = 0
        currentMetadata = header.metadata
        metadataOffset = 0
        nextKey = max(header.nextKey, 1)
        lastNumber = header.baseTransactionCount
        lastCommitChecksum = nil
        endOffset = UInt64(header.length)

        var start = UInt64(header.length)
        var state = IndexState.rebuilt
        if options.usesIndex,
            let (index, directory, counts) = Self.loadIndex(
                path: path,
                fileSystem: fileSystem,
                header: header,
                file: file,
                fileSize: fileSize
            )
        {
            live = directory
            entityCounts = counts
            liveRecordBytes = index.liveBytes
            metadataOffset = index.metadataOffset
            nextKey = max(nextKey, index.nextKey)
            lastNumber = index.lastNumber
            lastCommitChecksum = index.lastCommitChecksum
            start = index.coveredLength
            endOffset = start
            state = .loaded
        }
        indexState = state

        var scanner = LogScanner(
            file: file,
            path: path,
            fileSize: fileSize,
            layout: header.layout
        )
        var replay = LogReplay(
            live: live,
            entityCounts: entityCounts,
            liveRecordBytes: liveRecordBytes,
            metadataOffset: metadataOffset,
            nextKey: nextKey,
            lastNumber: lastNumber,
            lastCommitChecksum: lastCommitChecksum,
            start: start
        )
        // Release this instance's references so the replay's keydir is uniquely referenced
        // and is updated in place.
        live = KeyDirectory()
        entityCounts = EntityCounter()
        if let keys = try Self.keyCountHint(
            scanner: scanner,
            fileSize: fileSize,
            start: start,
            liveCount: replay.live.count
        ) {
            replay.reserveCapacity(keys)
        }
        let outcome = try scanner.scan(from: start, lastNumber: lastNumber, visitor: &replay)
        if outcome.damage != nil { replay.rollBack() }
        live = replay.live
        entityCounts = replay.entityCounts
        liveRecordBytes = replay.liveRecordBytes
        metadataOffset = replay.metadataOffset
        nextKey = replay.nextKey
        lastNumber = replay.lastNumber
        lastCommitChecksum = replay.lastCommitChecksum
        var damage: StoreDamage?
        if let found = outcome.damage {
            damage = StoreDamage(found)
            if found.kind == .corrupt && !options.salvage {
                throw StoreError(
                    .corrupt,
                    "\(found.reason); \(found.laterCommits) committed transaction(s) follow the damage "
                        + "(open read-only with salvage, or run `objectlog recover`)",
                    path: path,
                    offset: found.offset
                )
            }
            if !options.readOnly {
                // Cut the torn tail off before anything new is appended after it.
                try file.truncate(to: outcome.validEnd)
                try file.sync()
            }
        }
        damageAtOpen = damage
        endOffset = outcome.validEnd
        if metadataOffset != 0 {
            currentMetadata = try readMetadataRecord(at: metadataOffset)
        }
    }

    private static func create(path: String, options: StoreOptions) throws {
        let fileSystem = options.fileSystem
        var header = StoreHeader(
            storeUUID: UUID(),
            generation: 1,
            nextKey: 1,
            baseTransactionCount: 0,
            metadata: [:]
        )
        let bytes = header.encoded()
        let temporary = path + LogFormat.creationSuffix
        let file = try fileSystem.open(temporary, mode: .create(permissions: options.fileMode))
        do {
            try file.truncate(to: 0)
            try file.write(bytes, at: 0)
            try file.sync()
            file.close()
        } catch {
            file.close()
            try? fileSystem.remove(temporary)
            throw error
        }
        // A new store appears whole or not at all: written aside, synced, renamed into place,
        // and the directory synced so the name survives a power loss.
        try fileSystem.rename(temporary, to: path)
        try fileSystem.syncDirectory(directoryOf(path))
    }

    /// Removes what an interrupted creation, compaction or blob write left behind.
    private static func removeLeftovers(path: String, fileSystem: any FileSystem) throws {
        for suffix in [
            LogFormat.creationSuffix, LogFormat.compactionSuffix,
            LogFormat.indexSuffix + LogFormat.creationSuffix,
        ] {
            try fileSystem.remove(path + suffix)
        }
        let blobs = path + LogFormat.blobsSuffix
        for name in try fileSystem.contents(ofDirectory: blobs) where name.hasSuffix(".tmp") {
            try fileSystem.remove(blobs + "/" + name)
        }
    }

    private static func loadIndex(
        path: String,
        fileSystem: any FileSystem,
        header: StoreHeader,
        file: any StoreFile,
        fileSize: UInt64
    ) -> (StoreIndex, KeyDirectory, EntityCounter)? {
        guard fileSystem.kind(of: path + LogFormat.indexSuffix) == .regular,
            let indexFile = try? fileSystem.open(path + LogFormat.indexSuffix, mode: .read),
            let size = try? indexFile.size(), size <= UInt64(Int.max),
            size >= UInt64(StoreIndex.fixedLength + 4),
            let bytes = try? indexFile.read(at: 0, count: Int(size))
        else { return nil }
        // Entries go straight into the keydir, sized from the count in the file (bounded by the
        // bytes present). The decoder checks keys are strictly ascending, so each is new.
        // Its keys lie below the next key it records, which sizes a dense directory (one that
        // would be too sparse for that many entries starts as a hash table).
        let declared = bytes.withUnsafeBytes { UInt64(littleEndianBytesOf: $0, at: 56) }
        let keysBelow = bytes.withUnsafeBytes { UInt64(littleEndianBytesOf: $0, at: 72) }
        let bounded = min(declared, UInt64(bytes.count / StoreIndex.minimumEntryLength))
        var directory = KeyDirectory(minimumCapacity: Int(bounded), keysBelow: keysBelow)
        var counts = EntityCounter()
        guard
            let index = StoreIndex.decode(
                bytes,
                visit: { key, location in
                    directory.insertUnique(key, location)
                    counts.add(location.entity, 1)
                }
            ),
            index.storeUUID == header.storeUUID, index.generation == header.generation,
            index.coveredLength >= UInt64(header.length), index.coveredLength <= fileSize
        else { return nil }
        if index.coveredLength > UInt64(header.length) {
            // The index names the commit it ends at; the log must still have exactly that commit.
            let layout = header.layout
            let start = index.coveredLength - UInt64(layout.commitRecordLength)
            guard start >= UInt64(header.length),
                let checksumBytes = try? file.read(at: start, count: 4),
                checksumBytes.count == 4,
                checksumBytes.withUnsafeBytes({ UInt32(littleEndianBytesOf: $0, at: 0) })
                    == index.lastCommitChecksum,
                (try? LogScanner(file: file, path: path, fileSize: fileSize, layout: layout)
                    .commitRecord(endingAt: index.coveredLength)) != nil
            else { return nil }
        }
        return (index, directory, counts)
    }

    // MARK: - Replaying the log

    /// How many keys to make room for before replaying from `start`; nil unless the file ends
    /// with a valid commit.
    ///
    /// The keys ever handed out (the last commit's next key, less one) bound the keys the
    /// keydir can hold. That count comes from the file, so it is trusted only as far as the
    /// bytes to replay could hold puts of 32 bytes (an object record's frame is 11): a crafted
    /// file cannot make an open reserve more than about its own size in keydir. A log of
    /// smaller records still replays, growing the keydir as it goes.
    private static func keyCountHint(
        scanner: LogScanner,
        fileSize: UInt64,
        start: UInt64,
        liveCount: Int
    ) throws -> Int? {
        guard fileSize > start, let last = try scanner.commitRecord(endingAt: fileSize) else {
            return nil
        }
        let byRecords = UInt64(liveCount) + (fileSize - start) / 32
        return Int(min(last.nextKey &- 1, byRecords))
    }

    private func readMetadataRecord(at offset: UInt64) throws -> Metadata {
        let (frame, payload) = try readRecord(at: offset, file: file)
        guard frame.type == .metadata else {
            throw StoreError(
                .corrupt,
                "the latest metadata offset does not point at a metadata record",
                path: path,
                offset: offset
            )
        }
        do {
            return try MetadataCoding.decodeDictionary(payload)
        } catch {
            throw StoreError(
                .corrupt,
                "metadata record: \(error.reason)",
                path: path,
                offset: offset + UInt64(frame.frameLength + error.position)
            )
        }
    }

    /// Reads and checks one whole record; returns its frame and payload.
    private func readRecord(at offset: UInt64, file: any StoreFile) throws -> (RecordFrame, [UInt8])
    {
        let (frame, record) = try Self.readRecord(
            at: offset,
            file: file,
            path: path,
            layout: header.layout
        ).get()
        return (frame, Array(record[frame.frameLength...]))
    }

    /// Reads and checks the record at `offset`: its frame, bounds and checksum.
    ///
    /// Returns the frame and the whole record's bytes, or the reason it is damaged.
    package static func readRecord(
        at offset: UInt64,
        file: any StoreFile,
        path: String,
        layout: RecordLayout,
        limit: UInt64? = nil
    ) throws -> Result<(RecordFrame, [UInt8]), StoreError> {
        func damaged(_ reason: String) -> Result<(RecordFrame, [UInt8]), StoreError> {
            .failure(StoreError(.corrupt, reason, path: path, offset: offset))
        }
        let head = try file.read(at: offset, count: layout.maximumFrameLength)
        let frame: RecordFrame
        switch head.withUnsafeBytes({ RecordFrame.decode($0, layout: layout) }) {
        case .frame(let found): frame = found
        case .incomplete: return damaged("record frame runs past the end of the file")
        case .invalid(let reason): return damaged(reason)
        }
        if let limit, offset + UInt64(frame.totalLength) > limit {
            return damaged("record runs past the end of its transaction")
        }
        var record = head
        if record.count >= frame.totalLength {
            record.removeLast(record.count - frame.totalLength)
        } else {
            let rest = try file.read(
                at: offset + UInt64(record.count),
                count: frame.totalLength - record.count
            )
            record += rest
            guard record.count == frame.totalLength else {
                return damaged("record runs past the end of the file")
            }
        }
        let computed = record.withUnsafeBytes { RecordFrame.checksum(of: $0) }
        guard checksumsMatch(frame.checksum, computed) else {
            return damaged(
                "record checksum mismatch (stored \(hex32(frame.checksum)), computed \(hex32(computed)))"
            )
        }
        return .success((frame, record))
    }

    // MARK: - Reading

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// The store's unique identifier, fixed at creation.
    public var storeUUID: UUID { locked { header.storeUUID } }

    /// The store file's generation: 1 at creation, plus one per compaction.
    public var generation: UInt64 { locked { header.generation } }

    /// The format version of the file as opened (`major.minor`).
    public var formatVersion: String { locked { "\(header.majorVersion).\(header.minorVersion)" } }

    /// The latest committed metadata dictionary.
    public var metadata: Metadata { locked { currentMetadata } }

    /// Transactions committed over the store's life, including those folded away by compaction.
    public var transactionCount: UInt64 { locked { lastNumber } }

    /// Transactions committed in earlier generations (folded into the header by compaction).
    public var baseTransactionCount: UInt64 { locked { header.baseTransactionCount } }

    /// The size of the valid log in bytes (the file's size once any torn tail is cut off).
    public var fileBytes: UInt64 { locked { endOffset } }

    /// The log's end and the file's generation, read together.
    package var endAndGeneration: (end: UInt64, generation: UInt64) {
        locked { (endOffset, header.generation) }
    }

    /// Where the live object `key`'s value is, with the file's generation, read together.
    package func locationAndGeneration(
        of key: ObjectKey
    ) -> (location: RecordLocation?, generation: UInt64) {
        locked { (live[key], header.generation) }
    }

    /// The record offset of each live object of `keys` (nil for a key that is not live), with
    /// the file's generation, all read together under one lock.
    ///
    /// The batch form of ``locationAndGeneration(of:)`` for a save's optimistic-locking checks:
    /// one lock round trip for the whole save instead of one per object.
    package func recordOffsetsAndGeneration(
        of keys: [ObjectKey]
    ) -> (offsets: [UInt64?], generation: UInt64) {
        locked {
            let offsets = [UInt64?](unsafeUninitializedCapacity: keys.count) { buffer, count in
                for index in keys.indices { buffer[index] = live[keys[index]]?.offset }
                count = keys.count
            }
            return (offsets, header.generation)
        }
    }

    /// Translates a record offset seen in an earlier generation of the file into the current one.
    ///
    /// Compaction copies the live records in log order, so positions keep their order. With
    /// `exact`, `offset` is a record's offset: the result is where that record is now, or nil
    /// if it was no longer live when the file was compacted. Without `exact`, `offset` is a
    /// bound: records that were before it are before the result, records written after it
    /// (including every record written since the compaction) are at or after the result.
    /// Nil also when the generation is older than the compactions remembered.
    package func translateOffset(_ offset: UInt64, from generation: UInt64, exact: Bool) -> UInt64?
    {
        locked {
            var position = offset
            var current = generation
            while current < header.generation {
                guard let map = compactionMaps.first(where: { $0.fromGeneration == current }) else {
                    return nil
                }
                // The first old position at or after `position`.
                var low = 0
                var high = map.old.count
                while low < high {
                    let middle = (low + high) / 2
                    if map.old[middle] < position { low = middle + 1 } else { high = middle }
                }
                if exact {
                    guard low < map.old.count, map.old[low] == position else { return nil }
                    position = map.new[low]
                } else {
                    position = low < map.old.count ? map.new[low] : map.end
                }
                current += 1
            }
            return current == header.generation ? position : nil
        }
    }

    /// About how many bytes the store would take after compaction: the header, the live objects'
    /// records and one commit record.
    public var liveBytes: UInt64 {
        locked {
            UInt64(header.length) + liveRecordBytes + UInt64(header.layout.commitRecordLength)
        }
    }

    /// Counts of what this handle has done since it was opened.
    ///
    /// `logSyncs / commits` is the number of flushes per save: exactly 1 with durable options.
    public struct Statistics: Sendable, Equatable {
        /// Transactions committed.
        public var commits: UInt64 = 0
        /// `fdatasync` calls on the log file made by commits.
        public var logSyncs: UInt64 = 0
        /// Bytes appended to the log by commits.
        public var bytesWritten: UInt64 = 0
    }

    /// What this handle has done since it was opened.
    public var statistics: Statistics { locked { counters } }

    /// Whether the store was opened read-only.
    public var isReadOnly: Bool { options.readOnly || options.salvage }

    /// Hands out `count` fresh keys, never used before in this store.
    ///
    /// Keys become permanent with the next commit; keys handed out but never committed may be
    /// handed out again after the store is reopened.
    public func allocateKeys(_ count: Int) -> ClosedRange<ObjectKey> {
        precondition(count > 0, "allocateKeys needs a positive count")
        // Safe: a store's next key is at most `LogFormat.maximumCounter` (2^62) when read, so
        // only a count of about 2^62 keys could overflow it.
        precondition(UInt64(count) <= LogFormat.maximumCounter, "allocateKeys count too large")
        return locked {
            let first = nextKey
            nextKey += UInt64(count)
            return first...(first + UInt64(count) - 1)
        }
    }

    /// Where the live object `key`'s value is, or nil if no such object is live.
    public func location(of key: ObjectKey) -> RecordLocation? {
        locked { live[key] }
    }

    /// The keys of the live objects of `entity` (of every entity when nil), in ascending order.
    public func liveKeys(entity: EntityTag?) -> [ObjectKey] {
        // A dense directory lists its keys in order (the last branch, without the sort).
        // Keys are handed out in ascending runs from 1, so those in use mostly fill the range
        // below `nextKey`. Where they fill at least one in 64, each live key sets a bit of a
        // bitmap of that range, which is then read in order: one pass over the directory and
        // one over the bitmap (16 KiB per million keys of range), instead of a radix sort's
        // passes and its second buffer (about half of a million-object fetch's key listing).
        let (bitmap, count): ([UInt64]?, Int) = locked {
            let count = entity.map { entityCounts[$0] } ?? live.count
            let span = nextKey
            guard !live.isDense, count > 0, span / 64 <= UInt64(count) else { return (nil, count) }
            var bitmap = [UInt64](repeating: 0, count: Int(span / 64) + 1)
            var outside = false
            bitmap.withUnsafeMutableBufferPointer { words in
                live.forEachEntry { key, location in
                    guard entity == nil || location.entity == entity else { return }
                    guard key < span else {
                        outside = true
                        return
                    }
                    words[Int(key / 64)] |= 1 << (key % 64)
                }
            }
            return (outside ? nil : bitmap, count)
        }
        if let bitmap {
            var keys: [ObjectKey] = []
            keys.reserveCapacity(count)
            for (index, word) in bitmap.enumerated() {
                var rest = word
                while rest != 0 {
                    keys.append(UInt64(index) * 64 + UInt64(rest.trailingZeroBitCount))
                    rest &= rest - 1
                }
            }
            return keys
        }
        var (keys, inOrder): ([ObjectKey], Bool) = locked {
            var keys: [ObjectKey] = []
            keys.reserveCapacity(entity.map { entityCounts[$0] } ?? live.count)
            live.forEachEntry { key, location in
                if entity == nil || location.entity == entity { keys.append(key) }
            }
            return (keys, live.isDense)
        }
        if !inOrder { RadixSort.sort(&keys) { $0 } }
        return keys
    }

    /// The number of live objects of `entity` (of every entity when nil), without decoding any.
    public func liveCount(entity: EntityTag?) -> Int {
        locked {
            guard let entity else { return live.count }
            return entityCounts[entity]
        }
    }

    /// Live object counts by entity tag.
    public var liveCounts: [EntityTag: Int] { locked { entityCounts.nonZero } }

    /// The latest value of the live object `key`, checked against its checksum; nil if no such
    /// object is live.
    ///
    /// - Throws: ``StoreError`` `.corrupt` (naming the offset) if the record is damaged, `.io`.
    public func readObject(_ key: ObjectKey) throws -> (payload: [UInt8], blobs: [BlobID])? {
        let found: (RecordLocation, any StoreFile, RecordLayout)? = try locked {
            if isClosed { throw StoreError(.closed, "the store is closed", path: path) }
            return live[key].map { ($0, file, header.layout) }
        }
        guard let (location, file, layout) = found else { return nil }
        let (frame, record) = try Self.readRecord(
            at: location.offset,
            file: file,
            path: path,
            layout: layout
        ).get()
        return try record.withUnsafeBytes { record in
            let buffer = UnsafeRawBufferPointer(rebasing: record[frame.frameLength...])
            guard frame.type == .put,
                let contents = PutContents(buffer, flags: frame.flags, layout: layout)
            else {
                throw StoreError(
                    .corrupt,
                    "put record too short for its blobs",
                    path: path,
                    offset: location.offset
                )
            }
            return (Array(buffer[contents.valueStart...]), contents.blobs(in: buffer))
        }
    }

    /// Calls `body` with the value and blobs of the live object `key`, its location and the
    /// file generation that location is in; returns false, without calling it, if no such
    /// object is live.
    ///
    /// The record is read with one read of exactly its length (the keydir knows it) into
    /// temporary memory and checked against its checksum; the value buffer is valid only
    /// during the call. This is the fast path for loading one object. When loads go forward
    /// through the file (each record a little after the one before, as when objects are loaded
    /// one by one in key order), the read takes the next 64 KiB instead, and the loads of the
    /// records in them read those bytes in memory, checked just the same: one system call for
    /// many records instead of one each.
    ///
    /// - Throws: ``StoreError`` `.corrupt` (naming the offset) if the record is damaged, `.io`,
    ///   or what `body` throws.
    // Not generic: an unspecialised generic result cost type-metadata lookups per object.
    public func withObject(
        _ key: ObjectKey,
        _ body: (
            _ value: UnsafeRawBufferPointer, _ blobs: [BlobID], _ location: RecordLocation,
            _ generation: UInt64
        ) throws -> Void
    ) throws -> Bool {
        // One lock round trip finds the record and, when the read-ahead window holds it, takes
        // the window (a reference to its bytes, which never change once read). The state is
        // read into separate locals rather than returned as one optional tuple from a closure:
        // copying that tuple, which holds an existential, cost more than the lookup itself.
        var window: [UInt8] = []
        lock.lock()
        if isClosed {
            lock.unlock()
            throw StoreError(.closed, "the store is closed", path: path)
        }
        guard let location = live[key] else {
            lock.unlock()
            return false
        }
        let layout = header.layout
        let generation = header.generation
        func deliver(_ bytes: UnsafeRawBufferPointer) throws {
            try deliverRecord(
                bytes,
                key: key,
                location: location,
                generation: generation,
                layout: layout,
                body
            )
        }
        func pastTheEnd() -> StoreError {
            StoreError(
                .corrupt,
                "record runs past the end of the file",
                path: path,
                offset: location.offset
            )
        }
        // Bytes below the log's committed end never change within a generation, so a window
        // read earlier in this generation is as good as the file.
        let length = Int(location.length)
        let plan = readAhead.plan(
            location.offset,
            length: length,
            generation: generation,
            window: &window
        )
        if case .served(let from) = plan {
            lock.unlock()
            try window.withUnsafeBytes { window in
                try deliver(UnsafeRawBufferPointer(rebasing: window[from..<(from + length)]))
            }
            return true
        }
        let file = self.file
        let end = endOffset
        lock.unlock()

        // A length from a damaged index must not become a giant allocation. (A window, at most
        // `ReadAhead.size` bytes, never serves such a length.)
        guard length <= layout.maximumFrameLength + LogFormat.maximumPayloadLength else {
            throw StoreError(
                .corrupt,
                "the keydir's record for object \(key) is longer than any record",
                path: path,
                offset: location.offset
            )
        }
        if plan == .readAhead {
            let count = Int(min(UInt64(ReadAhead.size), end - min(end, location.offset)))
            guard count >= length else {
                throw pastTheEnd()
            }
            if window.count != ReadAhead.size {
                window = [UInt8](repeating: 0, count: ReadAhead.size)
            }
            let read = try window.withUnsafeMutableBytes { window in
                try file.read(
                    into: UnsafeMutableRawBufferPointer(rebasing: window[..<count]),
                    at: location.offset
                )
            }
            guard read >= length else {
                throw pastTheEnd()
            }
            locked {
                readAhead.keep(window, count: read, at: location.offset, generation: generation)
            }
            try window.withUnsafeBytes { window in
                try deliver(UnsafeRawBufferPointer(rebasing: window[..<length]))
            }
            return true
        }
        try withUnsafeTemporaryAllocation(byteCount: max(length, 1), alignment: 8) {
            (buffer) throws -> Void in
            let record = UnsafeMutableRawBufferPointer(rebasing: buffer[..<length])
            guard try file.read(into: record, at: location.offset) == length else {
                throw pastTheEnd()
            }
            try deliver(UnsafeRawBufferPointer(record))
        }
        return true
    }

    /// Checks that `bytes` are the put record of `key` that `location` names (its frame, type,
    /// length, key and checksum), then calls `body` with its value and blobs.
    @inline(__always)
    private func deliverRecord(
        _ bytes: UnsafeRawBufferPointer,
        key: ObjectKey,
        location: RecordLocation,
        generation: UInt64,
        layout: RecordLayout,
        _ body: (
            _ value: UnsafeRawBufferPointer, _ blobs: [BlobID], _ location: RecordLocation,
            _ generation: UInt64
        ) throws -> Void
    ) throws {
        let (_, payload, contents) = try checkedPut(
            bytes,
            key: key,
            offset: location.offset,
            layout: layout
        )
        try body(
            UnsafeRawBufferPointer(rebasing: payload[contents.valueStart...]),
            contents.blobCount == 0 ? [] : contents.blobs(in: payload),
            location,
            generation
        )
    }

    /// The frame, payload and blob list of the put record of `key` that `bytes` hold, after
    /// checking its frame (a put, exactly this long, of this key) and its checksum.
    @inline(__always)
    private func checkedPut(
        _ bytes: UnsafeRawBufferPointer,
        key: ObjectKey,
        offset: UInt64,
        layout: RecordLayout
    ) throws -> (frame: RecordFrame, payload: UnsafeRawBufferPointer, contents: PutContents) {
        guard let frame = RecordFrame.decodePut(bytes, layout: layout),
            frame.totalLength == bytes.count, frame.key == key
        else {
            throw StoreError(
                .corrupt,
                "the keydir's record for object \(key) is not a put of its length",
                path: path,
                offset: offset
            )
        }
        let computed = RecordFrame.checksum(of: bytes)
        guard checksumsMatch(frame.checksum, computed) else {
            throw StoreError(
                .corrupt,
                "record checksum mismatch (stored \(hex32(frame.checksum)), computed \(hex32(computed)))",
                path: path,
                offset: offset
            )
        }
        let payload = UnsafeRawBufferPointer(rebasing: bytes[frame.frameLength...])
        guard let contents = PutContents(payload, flags: frame.flags, layout: layout) else {
            throw StoreError(
                .corrupt,
                "put record too short for its blobs",
                path: path,
                offset: offset
            )
        }
        return (frame, payload, contents)
    }

    /// Calls `body` with every live object of `entity` (every entity when nil), reading the
    /// file sequentially in 1 MiB windows and checking every checksum.
    ///
    /// Objects come in window order (log order by 1 MiB window, any order within a window).
    /// The buffer is the object's payload (without its blob list) and is valid only during the
    /// call. This is the fast path for fetching or filtering many objects.
    ///
    /// - Throws: ``StoreError`` `.corrupt` or `.io`, or what `body` throws.
    public func forEachLiveObject(
        entity: EntityTag?,
        _ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        let plan = try liveObjectsPlan(entity: entity)
        try visit(plan.items[...], file: plan.file, end: plan.end, layout: plan.layout, body)
    }

    /// The live objects of `entity` (every entity when nil) as up to `parts` read plans of
    /// about the same number of records, for ``forEachObject(in:_:)`` on as many threads.
    ///
    /// Each record is in exactly one plan. Together the plans read the records in the order
    /// of ``forEachLiveObject(entity:_:)``; a cut falls between windows where one is near the
    /// middle, so that no window is read twice. Plans are snapshots, like
    /// ``readPlan(keys:)``'s, and can be read concurrently.
    package func liveObjectPlans(entity: EntityTag?, parts: Int) throws -> [ReadPlan] {
        let whole = try liveObjectsPlan(entity: entity)
        let items = whole.allItems
        let windowShift = options.bulkReadWindowShift
        var cuts = [0]
        for part in 1..<max(parts, 1) {
            var cut = max(items.count * part / parts, cuts[part - 1])
            // Move the cut forward to the next window, unless that is far away.
            let limit = min(items.count, cut + items.count / (4 * parts))
            if cut > 0, cut < items.count {
                let window = items[cut - 1].offset >> windowShift
                var next = cut
                while next < limit, items[next].offset >> windowShift == window { next += 1 }
                if next < limit { cut = next }
            }
            cuts.append(cut)
        }
        cuts.append(items.count)
        return (0..<max(parts, 1)).compactMap { part in
            let range = cuts[part]..<cuts[part + 1]
            return range.isEmpty
                ? nil
                : ReadPlan(
                    items: items,
                    range: range,
                    file: whole.file,
                    end: whole.end,
                    layout: whole.layout
                )
        }
    }

    /// Every live record of `entity` (every entity when nil), in window order.
    private func liveObjectsPlan(entity: EntityTag?) throws -> ReadPlan {
        let windowShift = options.bulkReadWindowShift
        // A bucket sort by window: a comparison sort of a million offsets cost as much as
        // decoding the objects.
        return try locked {
            if isClosed { throw StoreError(.closed, "the store is closed", path: path) }
            let buckets = Int(endOffset >> windowShift) + 1
            var starts = [Int](repeating: 0, count: buckets + 1)
            var total = 0
            live.forEachEntry { _, location in
                if entity == nil || location.entity == entity {
                    starts[Int(location.offset >> windowShift) + 1] += 1
                    total += 1
                }
            }
            for bucket in 0..<buckets { starts[bucket + 1] += starts[bucket] }
            let items = [Item](unsafeUninitializedCapacity: total) { buffer, initialized in
                live.forEachEntry { key, location in
                    if entity == nil || location.entity == entity {
                        let bucket = Int(location.offset >> windowShift)
                        (buffer.baseAddress! + starts[bucket]).initialize(
                            to: (location.offset, key, location.length, location.entity)
                        )
                        starts[bucket] += 1
                    }
                }
                initialized = total
            }
            return ReadPlan(
                items: items,
                range: items.indices,
                file: self.file,
                end: endOffset,
                layout: header.layout
            )
        }
    }

    /// Calls `body` with each of the live objects `keys` names (keys of no live object are
    /// skipped), reading the file in 1 MiB windows and checking the checksum of just those
    /// records.
    ///
    /// Objects come in window order. Use it to load many, but not most, objects at once.
    ///
    /// - Throws: ``StoreError`` `.corrupt` or `.io`, or what `body` throws.
    public func forEachObject(
        keys: [ObjectKey],
        _ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        try forEachObject(in: readPlan(keys: keys), body)
    }

    /// Where the live objects among `keys` are now: a snapshot that
    /// ``forEachObject(in:_:)`` reads later, even after other commits.
    ///
    /// Records never move within a file, so the snapshot stays readable; it shows the objects
    /// as they were when it was taken.
    package func readPlan(keys: [ObjectKey]) throws -> ReadPlan {
        try locked {
            if isClosed { throw StoreError(.closed, "the store is closed", path: path) }
            var found: [Item] = []
            found.reserveCapacity(keys.count)
            for key in keys {
                if let location = live[key] {
                    found.append((location.offset, key, location.length, location.entity))
                }
            }
            found.sort { $0.offset < $1.offset }
            return ReadPlan(
                items: found,
                range: found.indices,
                file: file,
                end: endOffset,
                layout: header.layout
            )
        }
    }

    /// Records to read, in file order, from one handle (see ``readPlan(keys:)``).
    package struct ReadPlan: @unchecked Sendable {
        // `@unchecked`: the file is only read through, which store files allow from any
        // thread; the rest are values.
        fileprivate let allItems: [Item]
        fileprivate let range: Range<Int>
        fileprivate let file: any StoreFile
        fileprivate let end: UInt64
        fileprivate let layout: RecordLayout

        fileprivate init(
            items: [Item],
            range: Range<Int>,
            file: any StoreFile,
            end: UInt64,
            layout: RecordLayout
        ) {
            self.allItems = items
            self.range = range
            self.file = file
            self.end = end
            self.layout = layout
        }

        fileprivate var items: ArraySlice<Item> { allItems[range] }

        /// The number of records.
        package var count: Int { range.count }
    }

    /// Calls `body` with each object of `plan`, checking each record's checksum.
    ///
    /// Records far apart (on average more than 64 KiB) are read one by one; closer ones through
    /// 1 MiB windows.
    package func forEachObject(
        in plan: ReadPlan,
        _ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        let items = plan.items
        // Plans of live objects are in window order, not offset order, within a window.
        var span: UInt64 = 0
        if let first = items.first?.offset, let last = items.last?.offset {
            span = last >= first ? last - first : first - last
        }
        try visit(
            items,
            file: plan.file,
            end: plan.end,
            layout: plan.layout,
            alone: span / UInt64(max(items.count, 1)) > 64 << 10,
            body
        )
    }

    fileprivate typealias Item = (offset: UInt64, key: ObjectKey, length: UInt32, entity: EntityTag)

    /// Reads and checks the records `items` locate, grouped by 1 MiB window.
    private func visit(
        _ items: ArraySlice<Item>,
        file: any StoreFile,
        end: UInt64,
        layout: RecordLayout,
        alone: Bool = false,
        _ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        let windowShift = options.bulkReadWindowShift
        let windowSize = 1 << Int(windowShift)
        // A window also holds the tails of records that start near its end.
        let spill = 64 << 10
        // One buffer, allocated on first use and refilled for every window: a fresh array per
        // window had the kernel zero and map new pages for every 8 MiB read (the whole log's
        // size again in page faults for a full load), and copying the array into each record's
        // scope retained and released it once per record.
        var window: UnsafeMutableRawBufferPointer?
        defer { window?.deallocate() }
        var windowStart: UInt64 = 0
        var windowCount = 0
        var single: [UInt8] = []

        func deliver(_ record: UnsafeRawBufferPointer, _ item: Item) throws {
            let (_, payload, contents) = try checkedPut(
                record,
                key: item.key,
                offset: item.offset,
                layout: layout
            )
            try body(
                item.key,
                item.entity,
                UnsafeRawBufferPointer(rebasing: payload[contents.valueStart...])
            )
        }
        func pastTheEnd(_ item: Item) -> StoreError {
            StoreError(
                .corrupt,
                "record runs past the end of the file",
                path: path,
                offset: item.offset
            )
        }

        for item in items {
            let total = Int(item.length)
            if let window, item.offset >= windowStart,
                item.offset + UInt64(total) <= windowStart + UInt64(windowCount)
            {
                let at = Int(item.offset - windowStart)
                try deliver(UnsafeRawBufferPointer(rebasing: window[at..<(at + total)]), item)
                continue
            }
            let aligned = (item.offset >> windowShift) << windowShift
            if !alone, item.offset + UInt64(total) <= aligned + UInt64(windowSize + spill) {
                let length = Int(min(UInt64(windowSize + spill), end - aligned))
                let buffer =
                    window
                    ?? UnsafeMutableRawBufferPointer.allocate(
                        byteCount: windowSize + spill,
                        alignment: 16
                    )
                window = buffer
                // Marked empty first: a read that throws leaves no stale window behind.
                windowCount = 0
                windowCount = try file.read(
                    into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<length]),
                    at: aligned
                )
                windowStart = aligned
                let at = Int(item.offset - aligned)
                guard at + total <= windowCount else { throw pastTheEnd(item) }
                try deliver(UnsafeRawBufferPointer(rebasing: buffer[at..<(at + total)]), item)
            } else {
                // A record too large for a window, or far from the others: read it alone.
                single = try file.read(at: item.offset, count: total)
                guard total <= single.count else { throw pastTheEnd(item) }
                try single.withUnsafeBytes { try deliver($0, item) }
            }
        }
    }

    // MARK: - Writing

    private func checkWritable() throws {
        if isClosed { throw StoreError(.closed, "the store is closed", path: path) }
        if isReadOnly { throw StoreError(.readOnly, "the store is open read-only", path: path) }
        if isPoisoned {
            throw StoreError(
                .poisoned,
                "an earlier fsync failed; reopen the store before writing again",
                path: path
            )
        }
    }

    /// Appends `transaction` and, with durable options, makes it durable before returning.
    ///
    /// The records and a commit record are written in one `write` at the end of the log, then
    /// flushed with one `fdatasync`. If the write fails, the log is cut back to where it was; if
    /// the flush fails, the handle is poisoned (rule 3).
    ///
    /// - Returns: The transaction's number, offset, time and counts.
    /// - Throws: ``StoreError`` — `.readOnly`, `.poisoned`, `.closed`, `.tooLarge`,
    ///   `.invalidArgument` (a key never allocated), `.io`.
    @discardableResult
    public func commit(_ transaction: Transaction) throws -> CommitInfo {
        lock.lock()
        defer { lock.unlock() }
        try checkWritable()

        let start = endOffset
        let metadataBytes = transaction.metadata.map { MetadataCoding.encode($0) }
        if let metadataBytes, metadataBytes.count > LogFormat.maximumMetadataLength {
            throw StoreError(
                .tooLarge,
                "the metadata dictionary encodes to \(metadataBytes.count) bytes; the limit is 16 MiB",
                path: path
            )
        }
        let layout = header.layout
        // The transaction frames its puts as compact records as they are added; in that layout,
        // and when no put follows a delete (records keep the transaction's order), they are
        // written as they are, ahead of the deletes, metadata and commit record framed here.
        let writesFramedPuts = layout == .compact && !transaction.hasPutAfterDelete
        let framedLength = writesFramedPuts ? transaction.records.count : 0
        // The file offset of `writer`'s first byte.
        let base = start + UInt64(framedLength)
        var size =
            layout.commitRecordLength + 2 * LogFormat.sectorSize
            + (metadataBytes.map { layout.maximumFrameLength + $0.count } ?? 0)
        // The entries are read in place.
        let entries = transaction.entries
        if !writesFramedPuts || transaction.hasDelete {
            entries.withUnsafeBufferPointer { entries in
                for index in entries.indices where entries[index].isDelete || !writesFramedPuts {
                    size += layout.maximumFrameLength
                    if !entries[index].isDelete {
                        size += layout.putPayloadLength(
                            blobCount: entries[index].hasBlobs
                                ? transaction.blobs(ofEntry: index).count : 0,
                            valueLength: Int(entries[index].valueCount)
                        )
                    }
                }
            }
        }
        var writer = ByteWriter(capacity: size)
        // The keydir changes in order, except puts written as framed by the transaction, which
        // all come first and are read back from its entries.
        var written: [(key: ObjectKey, location: RecordLocation?)] = []
        if !writesFramedPuts { written.reserveCapacity(transaction.entries.count) }
        // Which keys this transaction has put or deleted so far; built only once a delete needs
        // to know whether its key is live.
        var touched: [ObjectKey: Bool]?
        var inserted: UInt32 = 0
        var updated: UInt32 = 0
        var deleted: UInt32 = 0
        var recordCount: UInt32 = 0

        let records = transaction.records
        for index in entries.indices {
            // Read in place, field by field.
            let key = entries[index].key
            guard key != 0, key < nextKey else {
                throw StoreError(
                    .invalidArgument,
                    "key \(key) was never allocated by this store",
                    path: path
                )
            }
            if entries[index].isDelete {
                if touched == nil {
                    // A delete that was skipped found its key not live, so `false` is right
                    // for it too.
                    var map: [ObjectKey: Bool] = [:]
                    for entry in entries[..<index] { map[entry.key] = !entry.isDelete }
                    touched = map
                }
                let isLive = touched![key] ?? (live[key] != nil)
                guard isLive else { continue }
                layout.appendDelete(key: key, entity: entries[index].entity, into: &writer)
                touched![key] = false
                written.append((key, nil))
                deleted += 1
            } else {
                let blobCount =
                    entries[index].hasBlobs ? transaction.blobs(ofEntry: index).count : 0
                let length = layout.putPayloadLength(
                    blobCount: blobCount,
                    valueLength: Int(entries[index].valueCount)
                )
                guard length <= LogFormat.maximumPayloadLength, blobCount <= Int(UInt16.max)
                else {
                    throw StoreError(
                        .tooLarge,
                        "object \(key) encodes to \(length) bytes; the limit is \(LogFormat.maximumPayloadLength) (use external storage)",
                        path: path
                    )
                }
                if !writesFramedPuts {
                    let change = entries[index]
                    let offset = base + UInt64(writer.count)
                    records.withUnsafeBytes { records in
                        layout.appendPut(
                            key: key,
                            entity: change.entity,
                            isInsert: change.isInsert,
                            blobs: transaction.blobs(ofEntry: index),
                            value: UnsafeRawBufferPointer(rebasing: records[change.valueRange]),
                            into: &writer
                        )
                    }
                    written.append(
                        (
                            key,
                            RecordLocation(
                                entity: change.entity,
                                offset: offset,
                                length: UInt32(base + UInt64(writer.count) - offset)
                            )
                        )
                    )
                }
                if touched != nil { touched![key] = true }
                if entries[index].isInsert { inserted += 1 } else { updated += 1 }
            }
            recordCount += 1
        }
        var newMetadataOffset = metadataOffset
        if let metadataBytes {
            newMetadataOffset = base + UInt64(writer.count)
            metadataBytes.withUnsafeBytes { layout.appendMetadata($0, into: &writer) }
            recordCount += 1
        }
        let beforePadding = writer.count
        layout.appendPaddingBeforeCommit(base: base, into: &writer)
        if writer.count != beforePadding { recordCount += 1 }
        let commit = CommitPayload(
            timestampMicroseconds: CommitPayload.now(),
            firstRecordOffset: start,
            recordCount: recordCount,
            inserted: inserted,
            updated: updated,
            deleted: deleted,
            metadataOffset: newMetadataOffset,
            nextKey: nextKey
        )
        let commitChecksum = layout.appendCommit(
            number: lastNumber + 1,
            flags: 0,
            commit,
            into: &writer
        )

        let transactionLength = framedLength + writer.count
        let bytes = writer.takeBytes()
        do {
            if framedLength > 64 << 10 {
                try records.withUnsafeBytes { try file.write($0, at: start) }
                try file.write(bytes, at: base)
            } else if framedLength > 0 {
                // A small transaction (the common durable save) goes out in one write call.
                var whole = records.bytes
                whole += bytes
                try file.write(whole, at: start)
            } else {
                try file.write(bytes, at: base)
            }
        } catch {
            // Leave no partial transaction for the next one to follow.
            do { try file.truncate(to: start) } catch { isPoisoned = true }
            throw error
        }
        counters.bytesWritten += UInt64(transactionLength)
        if options.durable {
            do {
                counters.logSyncs += 1
                try file.sync()
            } catch {
                isPoisoned = true
                throw error
            }
        }
        counters.commits += 1

        // The transaction is committed: update the keydir (on locals, see `apply`).
        var live = self.live
        var counts = self.entityCounts
        var recordBytes = self.liveRecordBytes
        self.live = KeyDirectory()
        // Grown once, not doubled (and rehashed) again and again while a bulk save's keys go in.
        // Only inserts add keys: reserving for every put made a save that updates a tenth of a
        // large store copy its whole keydir into a bigger one. (A put that adds a key without
        // being an insert still fits: `updateValue` grows the directory when it must.)
        live.reserveCapacity(live.count + Int(inserted))
        if writesFramedPuts {
            entries.withUnsafeBufferPointer { entries in
                for index in entries.indices where !entries[index].isDelete {
                    let location = RecordLocation(
                        entity: entries[index].entity,
                        offset: start + UInt64(entries[index].recordStart),
                        length: entries[index].recordLength
                    )
                    let old = live.updateValue(location, forKey: entries[index].key)
                    // An update within its entity leaves the counts as they are.
                    if old?.entity != location.entity {
                        if let old { counts.add(old.entity, -1) }
                        counts.add(location.entity, 1)
                    }
                    recordBytes = recordBytes - UInt64(old?.length ?? 0) + UInt64(location.length)
                }
            }
        }
        for (key, location) in written {
            let old: RecordLocation?
            if let location {
                old = live.updateValue(location, forKey: key)
                counts.add(location.entity, 1)
                recordBytes += UInt64(location.length)
            } else {
                old = live.removeValue(forKey: key)
            }
            if let old {
                counts.add(old.entity, -1)
                recordBytes -= UInt64(old.length)
            }
        }
        self.live = live
        self.entityCounts = counts
        self.liveRecordBytes = recordBytes
        if let metadata = transaction.metadata {
            currentMetadata = metadata
            metadataOffset = newMetadataOffset
        }
        lastNumber += 1
        lastCommitChecksum = commitChecksum
        endOffset = start + UInt64(transactionLength)
        return CommitInfo(
            number: lastNumber,
            offset: start,
            date: commit.date,
            inserted: Int(inserted),
            updated: Int(updated),
            deleted: Int(deleted)
        )
    }

    // MARK: - Closing

    /// Writes the index checkpoint (when writable), releases the writer lock and closes the file.
    ///
    /// Later calls fail with `.closed`. Closing twice does nothing.
    public func close() throws {
        lock.lock()
        defer { lock.unlock() }
        guard !isClosed else { return }
        defer {
            isClosed = true
            file.close()
            lockFile?.close()
            lockFile = nil
        }
        if !isReadOnly && !isPoisoned {
            try writeIndex()
        }
    }

    deinit {
        try? close()
    }

    /// Writes the index checkpoint for the state as of the last commit.
    ///
    /// The caller holds `lock`.
    private func writeIndex() throws {
        let entries = live.sortedEntries()
        let index = StoreIndex(
            storeUUID: header.storeUUID,
            generation: header.generation,
            coveredLength: endOffset,
            lastCommitChecksum: lastCommitChecksum ?? 0,
            lastNumber: lastNumber,
            nextKey: nextKey,
            metadataOffset: metadataOffset,
            liveBytes: liveRecordBytes,
            entries: entries
        )
        let temporary = path + LogFormat.indexSuffix + LogFormat.creationSuffix
        let indexFile = try fileSystem.open(temporary, mode: .create(permissions: options.fileMode))
        do {
            try indexFile.truncate(to: 0)
            try indexFile.write(index.encoded(), at: 0)
            try indexFile.sync()
            indexFile.close()
        } catch {
            indexFile.close()
            try? fileSystem.remove(temporary)
            throw error
        }
        try fileSystem.rename(temporary, to: path + LogFormat.indexSuffix)
        try fileSystem.syncDirectory(directoryOf(path))
    }

    /// Writes the index checkpoint now, so a later open need not replay the log.
    public func checkpoint() throws {
        lock.lock()
        defer { lock.unlock() }
        try checkWritable()
        try writeIndex()
    }

    // Internal access for the extensions in other files (compaction, blobs).
    var internalFileSystem: any FileSystem { fileSystem }
    var internalOptions: StoreOptions { options }
}

/// Where the live records were before and after one compaction, in log order.
private struct CompactionMap {
    /// The generation compacted.
    var fromGeneration: UInt64
    var old: [UInt64]
    var new: [UInt64]
    /// The end of the compacted file (where the next write went).
    var end: UInt64
}

/// Damage found in a store's log.
public struct StoreDamage: Sendable, Equatable, CustomStringConvertible {
    /// Whether the damage is a torn tail or corruption.
    public enum Kind: String, Sendable {
        /// An incomplete or damaged last transaction, as an interrupted save leaves; dropped.
        case tornTail
        /// Damage with valid commits after it: committed data cannot be read.
        case corrupt
    }

    /// Whether the damage is a torn tail or corruption.
    public var kind: Kind
    /// The offset of the first damaged record.
    public var offset: UInt64
    /// What is wrong there.
    public var reason: String
    /// Where the valid log ends (just past the last good commit before the damage).
    public var validEnd: UInt64
    /// How many valid commits follow the damage (and are lost to a salvage).
    public var laterCommits: Int

    init(_ damage: LogDamage) {
        kind = damage.kind == .tornTail ? .tornTail : .corrupt
        offset = damage.offset
        reason = damage.reason
        validEnd = damage.validEnd
        laterCommits = damage.laterCommits
    }

    /// A one-line account: kind, offset and reason.
    public var description: String {
        "\(kind == .tornTail ? "torn tail" : "corruption") at offset \(offset): \(reason)"
    }
}

// MARK: - Compaction

/// What a compaction did.
public struct CompactionReport: Sendable, Equatable {
    /// The file's size before.
    public var bytesBefore: UInt64
    /// The file's size after.
    public var bytesAfter: UInt64
    /// Live objects copied.
    public var objects: Int
    /// Unreferenced external blob files removed.
    public var blobsRemoved: Int
    /// Bytes of the removed blob files.
    public var blobBytesRemoved: UInt64
    /// The new generation.
    public var generation: UInt64
}

extension LogStore {
    /// Rewrites the store with only its live objects and the latest metadata folded into the
    /// header, crash-safely, then removes external blobs no live object refers to.
    ///
    /// The new file (generation + 1) is written beside the store, synced, renamed over it and
    /// the directory synced: a crash at any point leaves either the old or the new store, and
    /// the next open removes what was left over.
    ///
    /// - Parameter progress: Called now and then with the fraction done, from 0 to 1.
    /// - Returns: What was reclaimed.
    /// - Throws: ``StoreError`` `.readOnly`, `.poisoned`, `.io`.
    @discardableResult
    public func compact(progress: ((Double) -> Void)? = nil) throws -> CompactionReport {
        lock.lock()
        defer { lock.unlock() }
        try checkWritable()

        let bytesBefore = endOffset
        let temporary = path + LogFormat.compactionSuffix
        let copy = try writeCopy(
            to: temporary,
            generation: header.generation + 1,
            progress: progress
        )
        try fileSystem.rename(temporary, to: path)
        try fileSystem.syncDirectory(directoryOf(path))
        let newHeader = copy.header
        let newLive = copy.live
        let referenced = copy.referencedBlobs
        let commitChecksum = copy.commitChecksum
        let newEnd = copy.end
        compactionMaps.append(
            CompactionMap(
                fromGeneration: header.generation,
                old: copy.oldOffsets,
                new: copy.newOffsets,
                end: newEnd
            )
        )
        // Offsets older than a few compactions are not translated (a save of objects loaded
        // that long ago reports a conflict instead).
        if compactionMaps.count > 4 { compactionMaps.removeFirst() }

        // The new file is the store now; switch to it.
        let newFile = try fileSystem.open(path, mode: .readWrite)
        file.close()
        file = newFile
        header = newHeader
        live = newLive
        liveRecordBytes = copy.recordBytes
        metadataOffset = 0
        lastCommitChecksum = commitChecksum
        endOffset = newEnd
        try writeIndex()

        var blobsRemoved = 0
        var blobBytesRemoved: UInt64 = 0
        let directory = path + LogFormat.blobsSuffix
        for name in try fileSystem.contents(ofDirectory: directory) {
            guard let id = BlobID(hex: name), !referenced.contains(id) else { continue }
            let blobPath = directory + "/" + name
            if let blob = try? fileSystem.open(blobPath, mode: .read) {
                blobBytesRemoved += (try? blob.size()) ?? 0
                blob.close()
            }
            try fileSystem.remove(blobPath)
            blobsRemoved += 1
        }
        if blobsRemoved > 0 { try fileSystem.syncDirectory(directory) }
        progress?(1)
        return CompactionReport(
            bytesBefore: bytesBefore,
            bytesAfter: newEnd,
            objects: newLive.count,
            blobsRemoved: blobsRemoved,
            blobBytesRemoved: blobBytesRemoved,
            generation: newHeader.generation
        )
    }

    /// A copy of the live state written to a new file.
    private struct Copy {
        var header: StoreHeader
        var live: KeyDirectory
        var recordBytes: UInt64
        var referencedBlobs: Set<BlobID>
        var commitChecksum: UInt32
        var end: UInt64
        /// Old and new offsets of the copied records, in log order.
        var oldOffsets: [UInt64]
        var newOffsets: [UInt64]
    }

    /// Writes the live objects and the latest metadata to a new synced file at `target`.
    ///
    /// They form one compaction commit. The caller holds `lock`.
    private func writeCopy(
        to target: String,
        generation: UInt64,
        progress: ((Double) -> Void)?
    ) throws -> Copy {
        var newHeader = StoreHeader(
            storeUUID: header.storeUUID,
            generation: generation,
            nextKey: nextKey,
            baseTransactionCount: lastNumber,
            metadata: currentMetadata
        )
        let headerBytes = newHeader.encoded()
        let output = try fileSystem.open(target, mode: .create(permissions: options.fileMode))
        var newLive = KeyDirectory(minimumCapacity: live.count)
        var recordBytes: UInt64 = 0
        var referenced: Set<BlobID> = []
        do {
            try output.truncate(to: 0)
            try output.write(headerBytes, at: 0)
            var position = UInt64(headerBytes.count)
            var items: [(key: ObjectKey, location: RecordLocation)] = []
            items.reserveCapacity(live.count)
            live.forEachEntry { items.append(($0, $1)) }
            items.sort { $0.location.offset < $1.location.offset }
            var buffer = ByteWriter(capacity: 8 << 20)
            var copied = 0
            var oldOffsets: [UInt64] = []
            var newOffsets: [UInt64] = []
            oldOffsets.reserveCapacity(items.count)
            newOffsets.reserveCapacity(items.count)
            // Records are read through an 8 MiB window (one pread per record made compaction
            // run at a tenth of the disk's write speed) and copied verbatim: a record's bytes
            // do not depend on where it lies, and its checksum is verified on the way.
            var window: [UInt8] = []
            var windowStart: UInt64 = 0
            let windowSize = 8 << 20
            // Records keep their bytes when the file already has the layout written now; a
            // format 1 file's records are re-framed (compaction upgrades it to format 2).
            let sourceLayout = header.layout
            let layout = newHeader.layout
            for item in items {
                let offset = item.location.offset
                let total = Int(item.location.length)
                if !(offset >= windowStart
                    && offset + UInt64(total) <= windowStart + UInt64(window.count))
                {
                    window = try file.read(at: offset, count: max(windowSize, total))
                    windowStart = offset
                    guard window.count >= total else {
                        throw StoreError(
                            .corrupt,
                            "record runs past the end of the file",
                            path: path,
                            offset: offset
                        )
                    }
                }
                let at = Int(offset - windowStart)
                let newStart = buffer.count
                let blobs: [BlobID] = try window.withUnsafeBytes { bytes in
                    let record = UnsafeRawBufferPointer(rebasing: bytes[at..<(at + total)])
                    let (frame, payload, contents) = try checkedPut(
                        record,
                        key: item.key,
                        offset: offset,
                        layout: sourceLayout
                    )
                    let blobs = contents.blobs(in: payload)
                    if sourceLayout == layout {
                        buffer.append(contentsOf: record)
                    } else {
                        layout.appendPut(
                            key: frame.key,
                            entity: frame.entity,
                            isInsert: frame.flags & PutFlags.insert != 0,
                            blobs: blobs,
                            value: UnsafeRawBufferPointer(
                                rebasing: payload[contents.valueStart...]
                            ),
                            into: &buffer
                        )
                    }
                    return blobs
                }
                referenced.formUnion(blobs)
                let newLength = buffer.count - newStart
                let newOffset = position + UInt64(newStart)
                oldOffsets.append(offset)
                newOffsets.append(newOffset)
                newLive.updateValue(
                    RecordLocation(
                        entity: item.location.entity,
                        offset: newOffset,
                        length: UInt32(newLength)
                    ),
                    forKey: item.key
                )
                recordBytes += UInt64(newLength)
                copied += 1
                if buffer.count >= 8 << 20 {
                    try buffer.withUnsafeBytes { try output.write($0, at: position) }
                    position += UInt64(buffer.count)
                    buffer.removeAll()
                    progress?(Double(copied) / Double(max(items.count, 1)))
                }
            }
            var recordCount = items.count
            let beforePadding = buffer.count
            layout.appendPaddingBeforeCommit(base: position, into: &buffer)
            if buffer.count != beforePadding { recordCount += 1 }
            let commit = CommitPayload(
                timestampMicroseconds: CommitPayload.now(),
                firstRecordOffset: UInt64(headerBytes.count),
                recordCount: UInt32(recordCount),
                inserted: 0,
                updated: 0,
                deleted: 0,
                metadataOffset: 0,
                nextKey: nextKey
            )
            let checksum = layout.appendCommit(
                number: 0,
                flags: CommitFlags.compaction,
                commit,
                into: &buffer
            )
            try buffer.withUnsafeBytes { try output.write($0, at: position) }
            let end = position + UInt64(buffer.count)
            try output.sync()
            output.close()
            return Copy(
                header: newHeader,
                live: newLive,
                recordBytes: recordBytes,
                referencedBlobs: referenced,
                commitChecksum: checksum,
                end: end,
                oldOffsets: oldOffsets,
                newOffsets: newOffsets
            )
        } catch {
            output.close()
            try? fileSystem.remove(target)
            throw error
        }
    }

    /// Salvages a damaged store: writes what precedes the damage (the live objects and metadata
    /// as of the last valid commit before it) into a new, valid store at `output`, with copies
    /// of the external blobs those objects refer to.
    ///
    /// The damaged store is opened read-only and never modified.
    ///
    /// - Returns: The damage found (nil if the store was not damaged) and the number of objects
    ///   saved.
    /// - Throws: ``StoreError`` `.notFound`, `.notAStore`, `.invalidArgument` (the output
    ///   exists), `.io`.
    public static func recover(
        path: String,
        to output: String
    ) throws -> (damage: StoreDamage?, objects: Int) {
        var options = StoreOptions()
        options.salvage = true
        options.usesIndex = false
        let source = try LogStore.open(path: path, options: options)
        defer { try? source.close() }
        let fileSystem = source.fileSystem
        guard fileSystem.kind(of: output) == .missing else {
            throw StoreError(
                .invalidArgument,
                "the output already exists; choose a new path",
                path: output
            )
        }
        source.lock.lock()
        defer { source.lock.unlock() }
        let temporary = output + LogFormat.creationSuffix
        let copy = try source.writeCopy(
            to: temporary,
            generation: source.header.generation + 1,
            progress: nil
        )
        if !copy.referencedBlobs.isEmpty {
            let blobs = output + LogFormat.blobsSuffix
            try fileSystem.makeDirectory(blobs, permissions: 0o700)
            for id in copy.referencedBlobs {
                guard let data = try? source.readBlob(id) else { continue }
                let file = try fileSystem.open(
                    blobs + "/" + id.hex,
                    mode: .create(permissions: 0o600)
                )
                try data.withUnsafeBytes { try file.write($0, at: 0) }
                try file.sync()
                file.close()
            }
            try fileSystem.syncDirectory(blobs)
        }
        try fileSystem.rename(temporary, to: output)
        try fileSystem.syncDirectory(directoryOf(output))
        return (source.damageAtOpen, copy.live.count)
    }

    // MARK: - Metadata without opening

    /// Reads the latest committed metadata of the store at `path` without opening the store or
    /// replaying its objects (compare Core Data's `metadataForPersistentStore(ofType:at:)`).
    ///
    /// It reads the header, finds the last valid commit record by scanning back from the end of
    /// the file, and reads the metadata record that commit names: the time taken does not grow
    /// with the number of objects.
    ///
    /// - Throws: ``StoreError`` `.notFound`, `.notAStore`, `.unsupportedVersion`, `.corrupt`, `.io`.
    public static func readMetadata(path: String) throws -> Metadata {
        try readMetadata(path: path, fileSystem: PosixFileSystem())
    }

    package static func readMetadata(path: String, fileSystem: any FileSystem) throws -> Metadata {
        try requireExistingStoreFile(path, fileSystem: fileSystem)
        let file = try fileSystem.open(path, mode: .read)
        defer { file.close() }
        let size = try file.size()
        let header = try StoreHeader.read(from: file, path: path, fileSize: size)
        let layout = header.layout
        let scanner = LogScanner(file: file, path: path, fileSize: size, layout: layout)
        let trailer = LogFormat.commitTrailer
        let lowest = UInt64(header.length + layout.commitRecordLength)
        var chunkEnd = size
        let chunk: UInt64 = 1 << 16
        while chunkEnd >= lowest {
            let chunkStart = max(chunkEnd >= chunk ? chunkEnd - chunk : 0, UInt64(header.length))
            let bytes = try file.read(at: chunkStart, count: Int(chunkEnd - chunkStart))
            var index = bytes.count - trailer.count
            while index >= 0 {
                if bytes[index] == trailer[0],
                    bytes[index..<(index + trailer.count)].elementsEqual(trailer)
                {
                    let end = chunkStart + UInt64(index + trailer.count)
                    if end >= lowest, let commit = try scanner.commitRecord(endingAt: end) {
                        if commit.metadataOffset == 0 { return header.metadata }
                        if let metadata = try? readMetadataPayload(
                            file: file,
                            path: path,
                            layout: layout,
                            offset: commit.metadataOffset,
                            limit: end
                        ) {
                            return metadata
                        }
                    }
                }
                index -= 1
            }
            guard chunkStart > UInt64(header.length) else { break }
            // Overlap by the trailer's length so a trailer across the boundary is still found.
            chunkEnd = chunkStart + UInt64(trailer.count) - 1
        }
        return header.metadata
    }

    private static func readMetadataPayload(
        file: any StoreFile,
        path: String,
        layout: RecordLayout,
        offset: UInt64,
        limit: UInt64
    ) throws -> Metadata? {
        guard
            case .success(let (frame, record)) = try readRecord(
                at: offset,
                file: file,
                path: path,
                layout: layout,
                limit: limit
            ),
            frame.type == .metadata, Int(frame.payloadLength) <= LogFormat.maximumMetadataLength
        else { return nil }
        return try? MetadataCoding.decodeDictionary(Array(record[frame.frameLength...]))
    }
}

/// What single-object loads read ahead (see ``LogStore/withObject(_:_:)``).
///
/// One window of the file, and where the previous load was. The store's lock guards it.
struct ReadAhead {
    /// How much a forward load reads.
    static let size = 64 << 10

    enum Plan: Equatable {
        /// The window holds the record, from this index of its bytes on.
        case served(at: Int)
        /// Read the record alone.
        case readExactly
        /// Read `size` bytes from the record on (up to the committed end), and keep them.
        case readAhead
    }

    /// The window's storage: `size` bytes once allocated, of which the first `count` are the
    /// file's from `start` on.
    private var window: [UInt8] = []
    private var count = 0
    private var start: UInt64 = 0
    private var generation: UInt64 = .max
    /// The offset of the previous load's record, in `lastGeneration`.
    private var lastOffset: UInt64 = .max
    private var lastGeneration: UInt64 = .max

    /// Says where the window holds the record at `offset` (`length` bytes), handing the window
    /// out in `found`, or how to read the record: ahead if this load is a little after the
    /// previous one, in which case `found` is the window's storage to read into.
    ///
    /// A served caller reads the record from `found` after releasing the lock. The bytes it
    /// reads are never written while it holds `found`: a later refill takes the storage out of
    /// this state first and writes through `withUnsafeMutableBytes`, which copies the array
    /// instead if anyone else still holds it.
    mutating func plan(
        _ offset: UInt64,
        length: Int,
        generation: UInt64,
        window found: inout [UInt8]
    ) -> Plan {
        defer {
            lastOffset = offset
            lastGeneration = generation
        }
        if generation == self.generation, offset >= start,
            offset - start <= UInt64(count),
            UInt64(length) <= UInt64(count) - (offset - start)
        {
            found = window
            return .served(at: Int(offset - start))
        }
        let forward =
            generation == lastGeneration && offset > lastOffset
            && offset - lastOffset < UInt64(Self.size / 4) && length <= Self.size / 16
        guard forward else { return .readExactly }
        // The refill reuses the storage: a new 64 KiB array per window cost the kernel a page
        // fault (and a page to clear) for every 4 KiB the read wrote.
        swap(&found, &window)
        count = 0
        self.generation = .max
        return .readAhead
    }

    /// Keeps the first `count` bytes of `storage`, read at `offset`, as the window.
    mutating func keep(_ storage: [UInt8], count: Int, at offset: UInt64, generation: UInt64) {
        window = storage
        self.count = count
        start = offset
        self.generation = generation
    }
}
