import Foundation

// A large batch of puts is encoded on several threads. Were each thread to fill a transaction
// of its own, joining them would leave one thread copying every part after the first, and
// faulting in fresh memory for it, while the others wait. So every part writes its records and
// entries straight into the one transaction's buffers, each into a region with room for its
// worst case. The entries are then closed up; the records stay where they are, and the room
// each part left unused is one of the transaction's holes, which the store writes around
// (moving the records instead would be a memory-bound copy of the whole batch on one thread,
// as much work as writing them to the file).

/// Where a put whose value is written in place can go: a transaction, or a part of one.
package protocol FilledPutSink {
    /// Adds a put whose value, `valueCount` bytes, `fill` writes in place (zeroed first, and
    /// `fill` must write all of them).
    mutating func put(
        key: ObjectKey,
        entity: EntityTag,
        valueCount: Int,
        blobs: [BlobID],
        isInsert: Bool,
        fill: (UnsafeMutableRawBufferPointer) -> Void
    )
}

extension Transaction: FilledPutSink {}
extension Transaction.PartWriter: FilledPutSink {}

extension Transaction {
    /// A run of bytes of ``records`` that holds no record.
    package struct Hole: Sendable, Equatable {
        package var start: Int
        package var count: Int
    }

    /// The bytes the records take without the ``holes``: what they take in the file.
    package var recordByteCount: Int { holes.reduce(records.count) { $0 - $1.count } }

    /// The records back to back, without the ``holes``.
    package var recordBytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(recordByteCount)
        forEachRecordRun { bytes.append(contentsOf: $0) }
        return bytes
    }

    /// Calls `body` with each run of records between the ``holes``, in order.
    package func forEachRecordRun(_ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        try records.withUnsafeBytes { bytes in
            var start = 0
            for hole in holes {
                if hole.start > start {
                    try body(UnsafeRawBufferPointer(rebasing: bytes[start..<hole.start]))
                }
                start = hole.start + hole.count
            }
            if bytes.count > start {
                try body(UnsafeRawBufferPointer(rebasing: bytes[start...]))
            }
        }
    }
}

extension Transaction {
    /// Where one part of ``buildingInParallel(rooms:_:)`` writes its puts: a region of the
    /// transaction's record buffer and one of its entries.
    package struct PartWriter {
        fileprivate let records: UnsafeMutableRawBufferPointer
        /// The offset of `records` in the whole record buffer.
        fileprivate let recordBase: Int
        fileprivate let entries: UnsafeMutableBufferPointer<Entry>
        fileprivate var recordCount = 0
        fileprivate var entryCount = 0
        /// The blobs of this part's puts that refer to some, by index among its entries.
        fileprivate var blobLists: [Int: [BlobID]] = [:]
        /// A record with blobs, framed by the general writer before it is copied in.
        fileprivate var scratch = ByteWriter()
        /// Whether a put did not fit in the room: it and every later one were dropped.
        fileprivate var outgrewRoom = false
        /// Fetched once for the part's records (see ``CRC32/lookupTables``).
        fileprivate let tables = CRC32.lookupTables
        /// How much of `records` is faulted in (see ``FreshMemory``): a step at a time as
        /// records reach it, since the room is sized for the worst case and most records
        /// leave a third of theirs unused.
        fileprivate var prepared = 0

        /// Adds a put whose value, `valueCount` bytes, `fill` writes in place (zeroed first):
        /// the record ``Transaction/put(key:entity:valueCount:blobs:isInsert:fill:)`` adds.
        ///
        /// A put that does not fit in the part's room (see
        /// ``buildingInParallel(rooms:_:)``) is dropped, with every later one, and the
        /// build then makes no transaction.
        package mutating func put(
            key: ObjectKey,
            entity: EntityTag,
            valueCount: Int,
            blobs: [BlobID] = [],
            isInsert: Bool,
            fill: (UnsafeMutableRawBufferPointer) -> Void
        ) {
            guard !outgrewRoom, entryCount < entries.count else {
                outgrewRoom = true
                return
            }
            let start = recordCount
            if blobs.isEmpty {
                let length = RecordLayout.compactPutLength(
                    key: key,
                    entity: entity,
                    valueCount: valueCount
                )
                guard let record = room(length) else { return }
                record.initializeMemory(as: UInt8.self, repeating: 0)
                RecordLayout.storeCompactPut(
                    key: key,
                    entity: entity,
                    isInsert: isInsert,
                    valueCount: valueCount,
                    in: record,
                    tables: tables,
                    fill: fill
                )
            } else {
                // Rare (external data kept in blobs): framed apart, then copied in.
                let value = Transaction.filledValue(count: valueCount, fill)
                scratch.removeAll()
                value.withUnsafeBytes {
                    RecordLayout.compact.appendPut(
                        key: key,
                        entity: entity,
                        isInsert: isInsert,
                        blobs: blobs,
                        value: $0,
                        into: &scratch
                    )
                }
                let copied = scratch.withUnsafeBytes { framed in
                    guard let record = room(framed.count) else { return false }
                    record.copyMemory(from: framed)
                    return true
                }
                guard copied else { return }
                blobLists[entryCount] = blobs
            }
            (entries.baseAddress! + entryCount).initialize(
                to: Entry(
                    key: key,
                    recordStart: recordBase + start,
                    recordLength: UInt32(clamping: recordCount - start),
                    valueCount: UInt32(clamping: valueCount),
                    entity: entity,
                    isInsert: isInsert,
                    isDelete: false,
                    hasBlobs: !blobs.isEmpty
                )
            )
            entryCount += 1
        }

        /// Adds a patch: the record ``Transaction/patch(key:entity:base:value:)`` adds.
        ///
        /// A patch that does not fit in the part's room is dropped as a put is.
        package mutating func patch(
            key: ObjectKey,
            entity: EntityTag,
            base: RecordLocation,
            value: UnsafeRawBufferPointer
        ) {
            guard !outgrewRoom, entryCount < entries.count else {
                outgrewRoom = true
                return
            }
            let start = recordCount
            let length = RecordLayout.patchLength(
                key: key,
                entity: entity,
                base: base,
                valueCount: value.count
            )
            guard let record = room(length) else { return }
            RecordLayout.storePatch(
                key: key,
                entity: entity,
                base: base,
                value: value,
                in: record,
                tables: tables
            )
            (entries.baseAddress! + entryCount).initialize(
                to: Entry(
                    patch: key,
                    entity: entity,
                    recordStart: recordBase + start,
                    length: length,
                    valueCount: value.count
                )
            )
            entryCount += 1
        }

        /// The next `count` bytes of the region, counted as written; nil when the region has
        /// not that many left.
        private mutating func room(_ count: Int) -> UnsafeMutableRawBufferPointer? {
            guard recordCount + count <= records.count else {
                outgrewRoom = true
                return nil
            }
            if recordCount + count > prepared { prepare(through: recordCount + count) }
            defer { recordCount += count }
            return UnsafeMutableRawBufferPointer(
                rebasing: records[recordCount..<recordCount + count]
            )
        }

        /// Faults in the region's next step, at least through `end`.
        @inline(never)
        private mutating func prepare(through end: Int) {
            let page = 4_096
            let base = Int(bitPattern: records.baseAddress)
            // Each step ends on a page boundary, so the next starts on one and no page is left
            // between them to fault in alone.
            let wanted = max(end, prepared + FreshMemory.threshold)
            let step = min(((base + wanted + page - 1) & ~(page - 1)) - base, records.count)
            FreshMemory.prepareForWriting(
                UnsafeMutableRawBufferPointer(rebasing: records[prepared..<step])
            )
            prepared = step
        }
    }

    /// A transaction of puts written by as many threads as there are `rooms`, part `k` by
    /// `body(k, &writer)`: the transaction their puts, one part after the other, would make.
    ///
    /// - Parameters:
    ///   - rooms: For each part, the most puts it adds and the most bytes their records take (a
    ///     put's record is its value plus at most ``RecordLayout/maximumFrameLength`` bytes,
    ///     and any blob list).
    ///   - body: Adds part `k`'s puts to the writer.
    /// - Returns: The transaction, or nil when a part's puts outgrew the room `room` gave it.
    /// - Throws: the first error a part throws.
    package static func buildingInParallel(
        rooms: [(changes: Int, recordBytes: Int)],
        _ body: (Int, inout PartWriter) throws -> Void
    ) throws -> Transaction? {
        let parts = rooms.count
        var starts: (records: [Int], entries: [Int]) = ([0], [0])
        for room in rooms {
            starts.records.append(starts.records[starts.records.count - 1] + room.recordBytes)
            starts.entries.append(starts.entries[starts.entries.count - 1] + room.changes)
        }
        let (recordStarts, entryStarts) = starts
        let writers = PartSlots<PartWriter?>(count: parts, initial: nil)
        let errors = PartSlots<(any Error)?>(count: parts, initial: nil)
        var entries: [Entry] = []
        var holes: [Hole] = []
        var recordEnd = 0
        var entryCount = 0
        // Not zeroed: only the bytes written become part of the arrays.
        let records = [UInt8](unsafeUninitializedCapacity: recordStarts[parts]) { records, count in
            entries = [Entry](unsafeUninitializedCapacity: entryStarts[parts]) { entries, count in
                // Safe to share: each part writes only its own regions of the two buffers, and
                // `body` runs on each thread with its own writer.
                withoutActuallyEscaping(body) { body in
                    let shared = UncheckedSendable((records, entries, body))
                    DispatchQueue.concurrentPerform(iterations: parts) { part in
                        let (records, entries, body) = shared.value
                        var writer = PartWriter(
                            records: UnsafeMutableRawBufferPointer(
                                rebasing: UnsafeMutableRawBufferPointer(records)[
                                    recordStarts[part]..<recordStarts[part + 1]
                                ]
                            ),
                            recordBase: recordStarts[part],
                            entries: UnsafeMutableBufferPointer(
                                rebasing: entries[entryStarts[part]..<entryStarts[part + 1]]
                            )
                        )
                        // Each part faults in its own regions (see ``FreshMemory``): its entries
                        // at once, its records as they fill them.
                        FreshMemory.prepareForWriting(writer.entries)
                        do {
                            try body(part, &writer)
                        } catch {
                            errors[part] = error
                        }
                        writers[part] = writer
                    }
                }
                // Close up the entries, in part order: each region moves down (or stays). The
                // room a part left unused in the records, up to the next part's, is a hole.
                for part in 0..<parts {
                    guard let writer = writers[part] else { continue }
                    if entryStarts[part] != entryCount {
                        // Entries are plain values: moving one is copying its bytes.
                        (entries.baseAddress! + entryCount).moveInitialize(
                            from: entries.baseAddress! + entryStarts[part],
                            count: writer.entryCount
                        )
                    }
                    entryCount += writer.entryCount
                    if writer.recordCount > 0 {
                        if recordStarts[part] > recordEnd {
                            holes.append(
                                Hole(start: recordEnd, count: recordStarts[part] - recordEnd)
                            )
                        }
                        recordEnd = recordStarts[part] + writer.recordCount
                    }
                }
                count = entryCount
            }
            // Up to the last record: the room after it is not part of the array.
            count = recordEnd
        }
        if let error = errors.firstError() { throw error }
        guard (0..<parts).allSatisfy({ writers[$0]?.outgrewRoom == false }) else { return nil }
        var blobLists: [Int: [BlobID]] = [:]
        var first = 0
        for part in 0..<parts {
            guard let writer = writers[part] else { continue }
            for (index, blobs) in writer.blobLists { blobLists[first + index] = blobs }
            first += writer.entryCount
        }
        return Transaction(
            records: ByteWriter(adopting: records),
            holes: holes,
            entries: entries,
            blobLists: blobLists
        )
    }
}
