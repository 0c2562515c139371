import Foundation

extension Compactor {
    /// Appends a checked put record as compaction copies it: translated if it is older than the
    /// upgrade's boundary, verbatim when the layouts agree, framed anew otherwise.
    @inline(__always)
    static func appendCopy(
        of record: UnsafeRawBufferPointer,
        frame: RecordFrame,
        value: UnsafeRawBufferPointer,
        blobs: [BlobID],
        offset: UInt64,
        from sourceLayout: RecordLayout,
        to layout: RecordLayout,
        upgrade: ActiveUpgrade?,
        into output: inout ByteWriter
    ) throws {
        func put(_ value: UnsafeRawBufferPointer) {
            layout.appendPut(
                key: frame.key,
                entity: frame.entity,
                isInsert: frame.flags & PutFlags.insert != 0,
                blobs: blobs,
                value: value,
                into: &output
            )
        }
        if let upgrade, offset < upgrade.boundary {
            try upgrade.deliver(value, entity: frame.entity, offset: offset) { put($0) }
        } else if sourceLayout == layout {
            output.append(contentsOf: record)
        } else {
            put(value)
        }
    }

    /// Appends the put of a patched object as compaction writes it: its merged value (in the
    /// layout of its patch's record at `offset`), translated if that is older than the upgrade's
    /// boundary, with its base's blobs and without the insert flag.
    static func appendMerged(
        _ value: UnsafeRawBufferPointer,
        key: ObjectKey,
        entity: EntityTag,
        blobs: [BlobID],
        offset: UInt64,
        layout: RecordLayout,
        upgrade: ActiveUpgrade?,
        into output: inout ByteWriter
    ) throws {
        func put(_ value: UnsafeRawBufferPointer) {
            layout.appendPut(
                key: key,
                entity: entity,
                isInsert: false,
                blobs: blobs,
                value: value,
                into: &output
            )
        }
        if let upgrade, offset < upgrade.boundary {
            try upgrade.deliver(value, entity: entity, offset: offset) { put($0) }
        } else {
            put(value)
        }
    }

    /// The records of a run, checked, rewritten or copied, and framed in the new file's layout
    /// by the workers, in contiguous parts that they take in turn.
    struct RewrittenRun {
        /// Per part: its slots (indices into the run).
        var parts: [Range<Int>] = []
        /// Per slot: where its record ends in its part's output.
        var ends: [Int] = []
        /// Per part: its records, one after the other.
        var outputs: [ByteWriter] = []
        /// Per part: the blobs its records refer to.
        var blobs: [[BlobID]] = []
    }

    /// Records in one part of a rewritten run: a few milliseconds of rewriting, so that a worker
    /// the host stops for a while holds up the others for at most that long at the run's end
    /// (with one share per worker, the other workers waited out the whole stop).
    static var rewritePartSize: Int { 8_192 }

    /// The records `items[start...]` that lie wholly in `window`, each checked, then rewritten
    /// (or, where its rewrite declines, copied as compaction copies it) and framed, by the
    /// rewrites at once.
    ///
    /// An error of the earliest part that failed is thrown.
    func rewriteRun(
        into run: inout RewrittenRun,
        _ items: [(key: ObjectKey, location: RecordLocation)],
        from start: Int,
        window: UnsafeRawBufferPointer,
        windowStart: UInt64,
        layout: RecordLayout,
        newLayout: RecordLayout,
        upgrade: ActiveUpgrade?,
        merged: [ObjectKey: (value: [UInt8], blobs: [BlobID])],
        rewrites: [LogStore.RecordRewrite]
    ) throws {
        let windowEnd = windowStart + UInt64(window.count)
        var end = start
        while end < items.count, items[end].location.offset >= windowStart,
            items[end].location.offset + UInt64(items[end].location.length) <= windowEnd
        {
            end += 1
        }
        let count = end - start
        // Small runs are not worth a thread.
        let workers = max(1, min(rewrites.count, count / 256))
        let partCount = max(workers, (count + Self.rewritePartSize - 1) / Self.rewritePartSize)
        run.parts = (0..<partCount).map { part in
            (count * part / partCount)..<(count * (part + 1) / partCount)
        }
        // The buffers of the run before are reused: fresh ones of a window's size each time
        // cost as much in page faults as the rewriting.
        run.ends.removeAll(keepingCapacity: true)
        run.ends.append(contentsOf: repeatElement(0, count: count))
        while run.outputs.count < partCount { run.outputs.append(ByteWriter()) }
        while run.blobs.count < partCount { run.blobs.append([]) }
        var failures = [(any Error)?](repeating: nil, count: partCount)
        let parts = run.parts
        // The next part to take; each worker takes one at a time until none is left.
        let taken = LockedValue(0)
        run.ends.withUnsafeMutableBufferPointer { ends in
            run.outputs.withUnsafeMutableBufferPointer { outputs in
                run.blobs.withUnsafeMutableBufferPointer { blobs in
                    failures.withUnsafeMutableBufferPointer { failures in
                        // Each part's elements of the buffers are written by the worker that
                        // took it, alone.
                        nonisolated(unsafe) let ends = ends
                        nonisolated(unsafe) let outputs = outputs
                        nonisolated(unsafe) let blobs = blobs
                        nonisolated(unsafe) let failures = failures
                        nonisolated(unsafe) let bytes = window
                        DispatchQueue.concurrentPerform(iterations: workers) { worker in
                            while true {
                                let part = taken.withLock { next in
                                    defer { next += 1 }
                                    return next
                                }
                                guard part < partCount else { return }
                                var framed = outputs[part]
                                outputs[part] = ByteWriter()
                                framed.removeAll()
                                var referenced = blobs[part]
                                blobs[part] = []
                                referenced.removeAll(keepingCapacity: true)
                                defer {
                                    outputs[part] = framed
                                    blobs[part] = referenced
                                }
                                do {
                                    try rewritePart(
                                        parts[part],
                                        of: items,
                                        from: start,
                                        window: bytes,
                                        windowStart: windowStart,
                                        layout: layout,
                                        newLayout: newLayout,
                                        upgrade: upgrade,
                                        merged: merged,
                                        rewrite: rewrites[worker],
                                        ends: ends,
                                        into: &framed,
                                        referencing: &referenced
                                    )
                                } catch {
                                    failures[part] = error
                                }
                            }
                        }
                    }
                }
            }
        }
        if let failure = failures.lazy.compactMap({ $0 }).first { throw failure }
    }

    /// Checks the records at `slots` of the run from `items[start]`, rewrites each (or, where
    /// its rewrite declines, copies it as compaction copies it) and frames it into `framed`,
    /// noting where each ends in `ends` and the blobs each refers to in `referenced`.
    private func rewritePart(
        _ slots: Range<Int>,
        of items: [(key: ObjectKey, location: RecordLocation)],
        from start: Int,
        window: UnsafeRawBufferPointer,
        windowStart: UInt64,
        layout: RecordLayout,
        newLayout: RecordLayout,
        upgrade: ActiveUpgrade?,
        merged: [ObjectKey: (value: [UInt8], blobs: [BlobID])],
        rewrite: LogStore.RecordRewrite,
        ends: UnsafeMutableBufferPointer<Int>,
        into framed: inout ByteWriter,
        referencing referenced: inout [BlobID]
    ) throws {
        // (On an error, the part's buffer is dropped with the compaction.)
        var rewritten = LogStore.RewrittenRecord(output: framed, layout: newLayout)
        framed = ByteWriter()
        for slot in slots {
            let item = items[start + slot]
            let offset = item.location.offset
            let blobs: [BlobID]
            if item.location.isPatch, let object = merged[item.key] {
                // A patched object: its merged value, in its patch's layout, as if stored so.
                try object.value.withUnsafeBytes { value in
                    try rewriteOne(
                        key: item.key,
                        entity: item.location.entity,
                        isInsert: false,
                        blobs: object.blobs,
                        value: value,
                        offset: offset,
                        rewrite: rewrite,
                        into: &rewritten
                    ) { output in
                        try Self.appendMerged(
                            value,
                            key: item.key,
                            entity: item.location.entity,
                            blobs: object.blobs,
                            offset: offset,
                            layout: newLayout,
                            upgrade: upgrade,
                            into: &output
                        )
                    }
                }
                blobs = object.blobs
            } else {
                let at = Int(offset - windowStart)
                let record = UnsafeRawBufferPointer(
                    rebasing: window[at..<(at + Int(item.location.length))]
                )
                let (frame, payload, contents) = try store.checkedPut(
                    record,
                    key: item.key,
                    offset: offset,
                    layout: layout
                )
                let value = UnsafeRawBufferPointer(rebasing: payload[contents.valueStart...])
                blobs = contents.blobs(in: payload)
                try rewriteOne(
                    key: frame.key,
                    entity: frame.entity,
                    isInsert: frame.flags & PutFlags.insert != 0,
                    blobs: blobs,
                    value: value,
                    offset: offset,
                    rewrite: rewrite,
                    into: &rewritten
                ) { output in
                    try Self.appendCopy(
                        of: record,
                        frame: frame,
                        value: value,
                        blobs: blobs,
                        offset: offset,
                        from: layout,
                        to: newLayout,
                        upgrade: upgrade,
                        into: &output
                    )
                }
            }
            // (Appending no blobs to an array with no room yet still costs a new buffer.)
            if !blobs.isEmpty { referenced.append(contentsOf: blobs) }
            ends[slot] = rewritten.output.count
        }
        framed = rewritten.output
    }

    /// Offers one object's value, stored at `offset`, to `rewrite`, which frames its new value
    /// into `rewritten`; where the rewrite declines, `copy` frames the object as compaction
    /// would.
    @inline(__always)
    private func rewriteOne(
        key: ObjectKey,
        entity: EntityTag,
        isInsert: Bool,
        blobs: [BlobID],
        value: UnsafeRawBufferPointer,
        offset: UInt64,
        rewrite: LogStore.RecordRewrite,
        into rewritten: inout LogStore.RewrittenRecord,
        copy: (inout ByteWriter) throws -> Void
    ) throws {
        rewritten.key = key
        rewritten.entity = entity
        rewritten.isInsert = isInsert
        rewritten.blobs = blobs
        rewritten.puts = 0
        let isRewritten = try rewrite(key, entity, offset, value, &rewritten)
        guard rewritten.puts == (isRewritten ? 1 : 0) else {
            throw StoreError(
                .invalidArgument,
                "the rewrite of object #\(key) returned \(isRewritten) after putting "
                    + "\(rewritten.puts) values",
                path: path
            )
        }
        if !isRewritten { try copy(&rewritten.output) }
    }
}
