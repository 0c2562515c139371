import Foundation

extension LogStore {
    /// The store's unique identifier, fixed at creation.
    public var storeUUID: UUID { locked { state.header.storeUUID } }

    /// The store file's generation: 1 at creation, plus one per compaction.
    public var generation: UInt64 { locked { state.header.generation } }

    /// The format version of the file as opened (`major.minor`).
    public var formatVersion: String {
        locked { "\(state.header.majorVersion).\(state.header.minorVersion)" }
    }

    /// The latest committed metadata dictionary.
    public var metadata: Metadata { locked { state.currentMetadata } }

    /// Transactions committed over the store's life, including those folded away by compaction.
    public var transactionCount: UInt64 { locked { state.lastNumber } }

    /// Transactions committed in earlier generations (folded into the header by compaction).
    public var baseTransactionCount: UInt64 { locked { state.header.baseTransactionCount } }

    /// The size of the valid log in bytes (the file's size once any torn tail is cut off).
    public var fileBytes: UInt64 { locked { state.endOffset } }

    /// The log's end and the file's generation, read together.
    package var endAndGeneration: (end: UInt64, generation: UInt64) {
        locked { (state.endOffset, state.header.generation) }
    }

    /// Where the live object `key`'s value is, with the file's generation, read together.
    package func locationAndGeneration(
        of key: ObjectKey
    ) -> (location: RecordLocation?, generation: UInt64) {
        locked { (state.live[key], state.header.generation) }
    }

    /// The record offset of each live object of `keys` (nil for a key that is not live), with
    /// the file's generation, all read together under one lock.
    ///
    /// The batch form of ``locationAndGeneration(of:)`` for a save's optimistic-locking checks:
    /// one lock round trip for the whole save instead of one per object. Unlike reads, it
    /// sees the commits written whose flush has not completed: a save that follows them must
    /// be checked against them.
    package func recordOffsetsAndGeneration(
        of keys: [ObjectKey]
    ) -> (offsets: [UInt64?], generation: UInt64) {
        locked {
            if !pending.isEmpty { pending.buildLocations() }
            let locations = pending.locations
            let offsets = [UInt64?](unsafeUninitializedCapacity: keys.count) { buffer, count in
                for index in keys.indices {
                    let key = keys[index]
                    if let locations, let location = locations[key] {
                        buffer[index] = location?.offset
                    } else {
                        buffer[index] = state.live[key]?.offset
                    }
                }
                count = keys.count
            }
            return (offsets, state.header.generation)
        }
    }

    /// About how many bytes the store would take after compaction: the header, the live objects'
    /// records and one commit record.
    public var liveBytes: UInt64 {
        locked {
            UInt64(state.header.length) + state.liveRecordBytes
                + UInt64(state.header.layout.commitRecordLength)
        }
    }

    /// What this handle has done since it was opened.
    public var statistics: Statistics { locked { counters } }

    /// Whether the store was opened read-only.
    public var isReadOnly: Bool { options.readOnly || options.salvage }

    /// Where the live object `key`'s value is, or nil if no such object is live.
    public func location(of key: ObjectKey) -> RecordLocation? {
        locked { state.live[key] }
    }

    /// The keys of the live objects of `entity` (of every entity when nil), in ascending order.
    public func liveKeys(entity: EntityTag?) -> [ObjectKey] {
        // A dense directory lists its keys in order (the last branch, without the sort).
        // Keys are handed out in ascending runs from 1, so those in use mostly fill the range
        // below `nextKey`. Where they fill at least one in 64, each live key sets a bit of a
        // bitmap of that range, which is then read in order: one pass over the directory and
        // one over the bitmap (16 KiB per million keys of range), instead of a radix sort's
        // passes and its second buffer, each pass a read and a scattered write of every key.
        let (bitmap, count): ([UInt64]?, Int) = locked {
            let count = entity.map { state.entityCounts[$0] } ?? state.live.count
            let span = state.nextKey
            guard !state.live.isDense, count > 0, span / 64 <= UInt64(count) else {
                return (nil, count)
            }
            var bitmap = [UInt64](repeating: 0, count: Int(span / 64) + 1)
            var outside = false
            bitmap.withUnsafeMutableBufferPointer { words in
                state.live.forEachEntry { key, location in
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
            keys.reserveCapacity(entity.map { state.entityCounts[$0] } ?? state.live.count)
            state.live.forEachEntry { key, location in
                if entity == nil || location.entity == entity { keys.append(key) }
            }
            return (keys, state.live.isDense)
        }
        if !inOrder { RadixSort.sort(&keys) { $0 } }
        return keys
    }

    /// The number of live objects of `entity` (of every entity when nil), without decoding any.
    public func liveCount(entity: EntityTag?) -> Int {
        locked {
            guard let entity else { return state.live.count }
            return state.entityCounts[entity]
        }
    }

    /// Live object counts by entity tag.
    public var liveCounts: [EntityTag: Int] { locked { state.entityCounts.nonZero } }

    /// The latest value of the live object `key`, checked against its checksum; nil if no such
    /// object is live.
    ///
    /// - Throws: `StoreError` `.corrupt` (naming the offset) if the record is damaged, `.io`.
    public func readObject(_ key: ObjectKey) throws -> (payload: [UInt8], blobs: [BlobID])? {
        let found: (RecordLocation, any StoreFile, RecordLayout, ActiveUpgrade?)? = try locked {
            if state.isClosed { throw StoreError(.closed, "the store is closed", path: path) }
            let location = state.live[key]
            try checkDirectory(state.live)
            return location.map { ($0, file, state.header.layout, activeUpgrade) }
        }
        guard let (location, file, layout, upgrade) = found else { return nil }
        if location.isPatch {
            var object: (payload: [UInt8], blobs: [BlobID]) = ([], [])
            try withPatchedObject(
                key,
                at: location,
                file: file,
                merge: locked { installedPatchMerge },
                upgrade: upgrade
            ) { object = (Array($0), $1) }
            return object
        }
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
            let value = UnsafeRawBufferPointer(rebasing: buffer[contents.valueStart...])
            guard let upgrade else { return (Array(value), contents.blobs(in: buffer)) }
            let current = try upgrade.deliver(value, entity: frame.entity, offset: location.offset)
            {
                Array($0)
            }
            return (current, contents.blobs(in: buffer))
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
    /// - Throws: `StoreError` `.corrupt` (naming the offset) if the record is damaged, `.io`,
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
        if state.isClosed {
            lock.unlock()
            throw StoreError(.closed, "the store is closed", path: path)
        }
        guard let location = state.live[key] else {
            lock.unlock()
            return false
        }
        let layout = state.header.layout
        let generation = state.header.generation
        if location.isPatch {
            // A patch and its base, read alone: the patched objects of a store are few until a
            // batch update, and a bulk read takes those.
            let (file, merge, upgrade) = (self.file, installedPatchMerge, activeUpgrade)
            lock.unlock()
            try withPatchedObject(key, at: location, file: file, merge: merge, upgrade: upgrade) {
                try body($0, $1, location, generation)
            }
            return true
        }
        let upgrade = activeUpgrade
        func deliver(_ bytes: UnsafeRawBufferPointer) throws {
            try deliverRecord(
                bytes,
                key: key,
                location: location,
                generation: generation,
                layout: layout,
                upgrade: upgrade,
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
        let end = state.endOffset
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
        upgrade: ActiveUpgrade?,
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
        let value = UnsafeRawBufferPointer(rebasing: payload[contents.valueStart...])
        let blobs = contents.blobCount == 0 ? [] : contents.blobs(in: payload)
        guard let upgrade, location.offset < upgrade.boundary else {
            try body(value, blobs, location, generation)
            return
        }
        try upgrade.deliver(value, entity: location.entity, offset: location.offset) {
            try body($0, blobs, location, generation)
        }
    }

    /// The frame, payload and blob list of the put record of `key` that `bytes` hold, after
    /// checking its frame (a put, exactly this long, of this key) and its checksum.
    ///
    /// Transparent, as are the frame decoders it calls: every bulk read and copy checks each
    /// record through it, and left out of line (which `@inline(__always)` does not rule out
    /// in a large caller) it returns its frame through memory, which the caller then reads
    /// back in wider loads than were stored, stalling on every record.
    @_transparent
    func checkedPut(
        _ bytes: UnsafeRawBufferPointer,
        key: ObjectKey,
        offset: UInt64,
        layout: RecordLayout,
        tables: CRC32.Tables = CRC32.lookupTables
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
        let computed = RecordFrame.checksum(of: bytes, tables: tables)
        guard checksumsMatch(frame.checksum, computed) else {
            throw StoreError(
                .corrupt,
                RecordFrame.checksumMismatch(stored: frame.checksum, computed: computed),
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
}
