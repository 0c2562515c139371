import Foundation

extension LogStore {
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
        try visit(
            plan.items[...],
            file: plan.file,
            end: plan.end,
            layout: plan.layout,
            upgrade: plan.upgrade,
            body
        )
    }

    /// The live objects of `entity` (every entity when nil) as up to `parts` read plans of
    /// about the same number of records, for ``forEachObject(in:_:)`` on as many threads.
    ///
    /// Each record is in exactly one plan. Together the plans read the records in the order
    /// of ``forEachLiveObject(entity:_:)``; a cut falls between windows where one is near the
    /// middle, so that no window is read twice. Plans are snapshots, like
    /// ``readPlan(keys:)``'s, and can be read concurrently.
    package func liveObjectPlans(entity: EntityTag?, parts: Int) throws -> [ReadPlan] {
        split(try liveObjectsPlan(entity: entity), parts: parts)
    }

    /// `plan` as up to `parts` plans of about the same number of records, for
    /// ``forEachObject(in:_:)`` on as many threads.
    ///
    /// Each record is in exactly one plan, and together they read the records in `plan`'s
    /// order; a cut falls between windows where one is near the middle, so that no window is
    /// read twice. The plans can be read concurrently.
    package func split(_ plan: ReadPlan, parts: Int) -> [ReadPlan] {
        let items = plan.allItems
        let windowShift = options.bulkReadWindowShift
        let first = plan.range.lowerBound
        let count = plan.range.count
        var cuts = [first]
        for part in 1..<max(parts, 1) {
            var cut = max(first + count * part / parts, cuts[part - 1])
            // Move the cut forward to the next window, unless that is far away.
            let limit = min(plan.range.upperBound, cut + count / (4 * parts))
            if cut > first, cut < plan.range.upperBound {
                let window = items[cut - 1].offset >> windowShift
                var next = cut
                while next < limit, items[next].offset >> windowShift == window { next += 1 }
                if next < limit { cut = next }
            }
            cuts.append(cut)
        }
        cuts.append(plan.range.upperBound)
        return (0..<max(parts, 1)).compactMap { part in
            let range = cuts[part]..<cuts[part + 1]
            return range.isEmpty
                ? nil
                : ReadPlan(
                    items: items,
                    range: range,
                    file: plan.file,
                    end: plan.end,
                    layout: plan.layout,
                    upgrade: plan.upgrade,
                    generation: plan.generation
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
                layout: header.layout,
                upgrade: activeUpgrade,
                generation: header.generation
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
        try readPlan(keyParts: [keys])
    }

    /// ``readPlan(keys:)`` of the keys of every part, looked up on as many threads (one part on
    /// the calling thread): for a plan of very many keys, whose lookups (one cache miss each in
    /// a large key directory) cost milliseconds on one thread.
    package func readPlan(keyParts: [[ObjectKey]]) throws -> ReadPlan {
        try locked {
            if isClosed { throw StoreError(.closed, "the store is closed", path: path) }
            var offsets = [0]
            for part in keyParts { offsets.append(offsets[offsets.count - 1] + part.count) }
            let starts = offsets
            let live = self.live
            var found = [Item](unsafeUninitializedCapacity: starts[keyParts.count]) {
                buffer,
                count in
                let counts = UnsafeMutableBufferPointer<Int>.allocate(capacity: keyParts.count)
                defer { counts.deallocate() }
                // Safe to share: each part writes only its own region of `buffer` and its own
                // count, and the key directory is only read (under the store's lock).
                let shared = UncheckedSendable((buffer, counts, live))
                @Sendable func lookUp(_ part: Int) {
                    let (buffer, counts, live) = shared.value
                    var next = buffer.baseAddress! + starts[part]
                    let keys = keyParts[part]
                    FreshMemory.prepareForWriting(
                        UnsafeMutableBufferPointer(start: next, count: keys.count)
                    )
                    for index in keys.indices {
                        if index &+ LogStore.prefetchDistance < keys.count {
                            live.prefetch(keys[index &+ LogStore.prefetchDistance])
                        }
                        let key = keys[index]
                        guard let location = live[key] else { continue }
                        next.initialize(
                            to: (location.offset, key, location.length, location.entity)
                        )
                        next += 1
                    }
                    counts[part] = next - (buffer.baseAddress! + starts[part])
                }
                if keyParts.count == 1 {
                    lookUp(0)
                } else {
                    DispatchQueue.concurrentPerform(iterations: keyParts.count, execute: lookUp)
                }
                // Close up the regions (keys of no live object leave gaps).
                var end = 0
                for part in keyParts.indices {
                    if starts[part] != end {
                        (buffer.baseAddress! + end).moveInitialize(
                            from: buffer.baseAddress! + starts[part],
                            count: counts[part]
                        )
                    }
                    end += counts[part]
                }
                count = end
            }
            found.sort { $0.offset < $1.offset }
            return ReadPlan(
                items: found,
                range: found.indices,
                file: file,
                end: endOffset,
                layout: header.layout,
                upgrade: activeUpgrade,
                generation: header.generation
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
        /// The translation of older records, taken with the file it applies to.
        fileprivate let upgrade: ActiveUpgrade?
        /// The generation of the file the records' offsets are in.
        package let generation: UInt64

        fileprivate init(
            items: [Item],
            range: Range<Int>,
            file: any StoreFile,
            end: UInt64,
            layout: RecordLayout,
            upgrade: ActiveUpgrade?,
            generation: UInt64
        ) {
            self.allItems = items
            self.range = range
            self.file = file
            self.end = end
            self.layout = layout
            self.upgrade = upgrade
            self.generation = generation
        }

        fileprivate var items: ArraySlice<Item> { allItems[range] }

        /// The number of records.
        package var count: Int { range.count }

        /// The bytes of the records, frames included.
        package var recordBytes: Int { items.reduce(0) { $0 + Int($1.length) } }

        /// The keys of the records, in the plan's order.
        package var keys: [ObjectKey] { items.map(\.key) }

        /// Each record's key and offset (in the file of ``generation``), in the plan's order.
        package var keysAndOffsets: [(key: ObjectKey, offset: UInt64)] {
            items.map { ($0.key, $0.offset) }
        }
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
            upgrade: plan.upgrade,
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
        upgrade: ActiveUpgrade?,
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
        defer { window.map(readWindows.give) }
        var windowStart: UInt64 = 0
        var windowCount = 0
        var single: [UInt8] = []
        let tables = CRC32.lookupTables

        func deliver(_ record: UnsafeRawBufferPointer, _ item: Item) throws {
            let (_, payload, contents) = try checkedPut(
                record,
                key: item.key,
                offset: item.offset,
                layout: layout,
                tables: tables
            )
            let value = UnsafeRawBufferPointer(rebasing: payload[contents.valueStart...])
            guard let upgrade, item.offset < upgrade.boundary else {
                try body(item.key, item.entity, value)
                return
            }
            try upgrade.deliver(value, entity: item.entity, offset: item.offset) {
                try body(item.key, item.entity, $0)
            }
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
                // A new window is faulted in only for the bytes this first read fills (a small
                // store's file is far shorter than a window); later windows lie nearer the
                // file's end and read no more than it.
                let buffer =
                    window ?? readWindows.take(byteCount: windowSize + spill, firstRead: length)
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
}
