import Foundation

extension LogStore {
    /// Calls `body` with every live object of `entity` (every entity when nil), reading the
    /// file sequentially in 1 MiB windows and checking every checksum.
    ///
    /// Objects come in window order (log order by 1 MiB window, any order within a window).
    /// The buffer is the object's payload (without its blob list) and is valid only during the
    /// call. This is the fast path for fetching or filtering many objects.
    ///
    /// - Throws: `StoreError` `.corrupt` or `.io`, or what `body` throws.
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
            patches: plan.patches,
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
                    generation: plan.generation,
                    patches: plan.patches
                )
        }
    }

    /// Every live record of `entity` (every entity when nil), in window order; a patched
    /// object's base in its base's window.
    private func liveObjectsPlan(entity: EntityTag?) throws -> ReadPlan {
        let windowShift = options.bulkReadWindowShift
        // A bucket sort by window: a count and a move per offset, where a comparison sort
        // makes log₂ n comparisons per offset, many of them mispredicted branches. Patches are
        // read under the lock first, so that their bases take their places at once (moving
        // items afterwards cost copies of the whole plan).
        return try locked {
            if state.isClosed { throw StoreError(.closed, "the store is closed", path: path) }
            let buckets = Int(state.endOffset >> windowShift) + 1
            var starts = [Int](repeating: 0, count: buckets + 1)
            var total = 0
            var patchedCount = 0
            // The patches the last such plan read serve again if the directory lists the same
            // patched keys in the same order (a hash table's order can change with no commit:
            // a failed flush puts old locations back).
            var cached: PlanPatches?
            if let last = livePatches, last.generation == state.header.generation,
                last.end == state.endOffset, last.entity == entity
            {
                cached = last.patches
            }
            state.live.forEachEntry { key, location in
                if entity == nil || location.entity == entity {
                    if location.isPatch {
                        if let list = cached?.list,
                            patchedCount >= list.count || list[patchedCount].key != key
                        {
                            cached = nil
                        }
                        patchedCount += 1
                    } else {
                        starts[Int(location.offset >> windowShift) + 1] += 1
                    }
                    total += 1
                }
            }
            // The scan checked every page of a mapped index.
            try checkDirectory(state.live)
            var patches: PlanPatches?
            // (A store without patches, compacted say, keeps none in memory.)
            if patchedCount == 0, entity == nil || livePatches?.entity == entity {
                livePatches = nil
            }
            if patchedCount > 0 {
                if let cached, cached.list.count == patchedCount {
                    patches = cached
                } else {
                    var patched: [(key: ObjectKey, location: RecordLocation)] = []
                    patched.reserveCapacity(patchedCount)
                    state.live.forEachEntry { key, location in
                        if location.isPatch, entity == nil || location.entity == entity {
                            patched.append((key, location))
                        }
                    }
                    let read = try planPatches(
                        of: patched,
                        merge: installedPatchMerge,
                        file: file,
                        end: state.endOffset
                    )
                    livePatches = (state.header.generation, state.endOffset, entity, read)
                    patches = read
                }
            }
            if let patches {
                for patch in patches.list {
                    starts[Int(patch.baseOffset >> windowShift) + 1] += 1
                }
            }
            for bucket in 0..<buckets { starts[bucket + 1] += starts[bucket] }
            // The directory lists the patched keys in the same order again: the n-th is the
            // n-th patch.
            var nextPatch = 0
            let items = [Item](unsafeUninitializedCapacity: total) { buffer, initialized in
                state.live.forEachEntry { key, location in
                    if entity == nil || location.entity == entity {
                        var item = (location.offset, key, location.packedLength, location.entity)
                        if location.isPatch, let patches {
                            item = patches.item(nextPatch, key: key)
                            nextPatch += 1
                        }
                        let bucket = Int(item.0 >> windowShift)
                        (buffer.baseAddress! + starts[bucket]).initialize(to: item)
                        starts[bucket] += 1
                    }
                }
                initialized = total
            }
            return ReadPlan(
                items: items,
                range: items.indices,
                file: self.file,
                end: state.endOffset,
                layout: state.header.layout,
                upgrade: activeUpgrade,
                generation: state.header.generation,
                patches: patches
            )
        }
    }

    /// Calls `body` with each of the live objects `keys` names (keys of no live object are
    /// skipped), reading the file in 1 MiB windows and checking the checksum of just those
    /// records.
    ///
    /// Objects come in window order. Use it to load many, but not most, objects at once.
    ///
    /// - Throws: `StoreError` `.corrupt` or `.io`, or what `body` throws.
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
            if state.isClosed { throw StoreError(.closed, "the store is closed", path: path) }
            var offsets = [0]
            for part in keyParts { offsets.append(offsets[offsets.count - 1] + part.count) }
            let starts = offsets
            // The parts look keys up on several threads, which only read the directory: the
            // pages of a mapped index they need are checked here first.
            if keyParts.count > 1 { state.live.checkPages(of: keyParts) }
            try checkDirectory(state.live)
            let live = self.state.live
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
                        if index &+ CommitWriter.prefetchDistance < keys.count {
                            live.prefetch(keys[index &+ CommitWriter.prefetchDistance])
                        }
                        let key = keys[index]
                        guard let location = live[key] else { continue }
                        next.initialize(
                            to: (location.offset, key, location.packedLength, location.entity)
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
            // A patched object is read at its base, whose place the patch names.
            var patched: [(key: ObjectKey, location: RecordLocation)] = []
            for item in found where item.length & RecordLocation.patchBit != 0 {
                patched.append(
                    (
                        item.key,
                        RecordLocation(
                            entity: item.entity,
                            offset: item.offset,
                            packedLength: item.length
                        )
                    )
                )
            }
            let patches =
                patched.isEmpty
                ? nil
                : try planPatches(
                    of: patched,
                    merge: installedPatchMerge,
                    file: file,
                    end: state.endOffset
                )
            if let patches {
                var nextPatch = 0
                for index in found.indices where found[index].length & RecordLocation.patchBit != 0
                {
                    found[index] = patches.item(nextPatch, key: found[index].key)
                    nextPatch += 1
                }
            }
            found.sort { $0.offset < $1.offset }
            return ReadPlan(
                items: found,
                range: found.indices,
                file: file,
                end: state.endOffset,
                layout: state.header.layout,
                upgrade: activeUpgrade,
                generation: state.header.generation,
                patches: patches
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
        /// The patches of the patched objects, whose items locate their bases.
        fileprivate let patches: PlanPatches?

        fileprivate init(
            items: [Item],
            range: Range<Int>,
            file: any StoreFile,
            end: UInt64,
            layout: RecordLayout,
            upgrade: ActiveUpgrade?,
            generation: UInt64,
            patches: PlanPatches? = nil
        ) {
            self.allItems = items
            self.range = range
            self.file = file
            self.end = end
            self.layout = layout
            self.upgrade = upgrade
            self.generation = generation
            self.patches = patches
        }

        fileprivate var items: ArraySlice<Item> { allItems[range] }

        /// The number of records.
        package var count: Int { range.count }

        /// The bytes of the records, frames included (a patched object's base and partial
        /// value).
        package var recordBytes: Int {
            items.reduce(0) { total, item in
                guard item.length & RecordLocation.patchBit != 0, let patches else {
                    return total + Int(item.length)
                }
                let partial = patches.list[Int(item.entity)].count
                return total + Int(item.length & ~RecordLocation.patchBit) + Int(partial)
            }
        }

        /// The keys of the records, in the plan's order.
        package var keys: [ObjectKey] { items.map(\.key) }

        /// Each object's key and record offset (its patch's for a patched object, in the file
        /// of ``generation``), in the plan's order.
        package var keysAndOffsets: [(key: ObjectKey, offset: UInt64)] {
            items.map { item in
                guard item.length & RecordLocation.patchBit != 0, let patches else {
                    return (item.key, item.offset)
                }
                return (item.key, patches.list[Int(item.entity)].offset)
            }
        }

        /// Each object's key and where its record is (a patched object's patch), in the plan's
        /// order.
        package var locations: [(key: ObjectKey, location: RecordLocation)] {
            items.map { item in
                guard item.length & RecordLocation.patchBit != 0,
                    let patch = patches?.list[Int(item.entity)]
                else {
                    return (
                        item.key,
                        RecordLocation(
                            entity: item.entity,
                            offset: item.offset,
                            length: item.length
                        )
                    )
                }
                return (
                    item.key,
                    RecordLocation(
                        entity: patch.entity,
                        offset: patch.offset,
                        length: patch.length,
                        isPatch: true
                    )
                )
            }
        }

        /// Calls `body` with the key and location of the objects at `positions` in the plan's
        /// order, whose records are puts (a patched object's is reported as its base, with
        /// `isPatch` false: use ``objects(patched:)`` to set them apart).
        package func forEachLocation(
            at positions: Range<Int>,
            _ body: (ObjectKey, RecordLocation) -> Void
        ) {
            for item in allItems[
                (range.lowerBound + positions.lowerBound)..<(range.lowerBound + positions.upperBound)
            ] {
                body(
                    item.key,
                    RecordLocation(
                        entity: item.entity,
                        offset: item.offset,
                        length: item.length & ~RecordLocation.patchBit
                    )
                )
            }
        }

        /// The highest key, record offset and record length of the plan's objects (0 for an
        /// empty plan).
        package var largest: (key: ObjectKey, offset: UInt64, length: UInt32) {
            var largest: (key: ObjectKey, offset: UInt64, length: UInt32) = (0, 0, 0)
            for item in items {
                largest.key = max(largest.key, item.key)
                largest.offset = max(largest.offset, item.offset)
                largest.length = max(largest.length, item.length & ~RecordLocation.patchBit)
            }
            return largest
        }

        /// The plan of the objects whose records are puts (`patched` false) or patches (true).
        package func objects(patched: Bool) -> ReadPlan {
            // Most plans have no patched object: the plan itself, not a copy of its items.
            if patches == nil { return patched ? emptied : self }
            let kept = items.filter { (($0.length & RecordLocation.patchBit) != 0) == patched }
            return ReadPlan(
                items: kept,
                range: kept.indices,
                file: file,
                end: end,
                layout: layout,
                upgrade: upgrade,
                generation: generation,
                patches: patched ? patches : nil
            )
        }
    }
}

extension LogStore.ReadPlan {
    /// The plan with no objects.
    fileprivate var emptied: LogStore.ReadPlan {
        LogStore.ReadPlan(
            items: [],
            range: 0..<0,
            file: file,
            end: end,
            layout: layout,
            upgrade: upgrade,
            generation: generation
        )
    }
}

extension LogStore {
    /// The patches of a read plan: each patched object's patch record and partial value.
    final class PlanPatches: Sendable {
        /// A patch's key, where it and its base are, its entity, and where its partial value
        /// is in ``partials``.
        struct Patch {
            var key: ObjectKey
            var offset: UInt64
            var baseOffset: UInt64
            var length: UInt32
            var baseLength: UInt32
            var entity: EntityTag
            var start: UInt32
            var count: UInt32
        }

        /// The partial values, back to back.
        let partials: [UInt8]
        /// The patches, in the order they were asked for; a plan's item of a patched object
        /// holds the index of its patch in place of its entity (its length has the patch bit).
        let list: [Patch]
        /// The engine's merge, taken with the plan.
        let merge: PatchMerge?

        init(partials: [UInt8], list: [Patch], merge: PatchMerge?) {
            self.partials = partials
            self.list = list
            self.merge = merge
        }

        /// The plan's item of the patched object `key`, whose patch is `list[index]`: its base,
        /// with the patch bit, and the patch's index.
        @inline(__always)
        func item(_ index: Int, key: ObjectKey) -> (UInt64, ObjectKey, UInt32, EntityTag) {
            let patch = list[index]
            assert(patch.key == key, "a plan's patch taken for another key")
            return (
                patch.baseOffset, key, patch.baseLength | RecordLocation.patchBit, EntityTag(index)
            )
        }
    }

    /// The patches of the patched objects `patched` (keys and their patches' locations), each
    /// read and checked, in the same order: where each patch and its base are, and its partial
    /// value.
    ///
    /// Reads the file without taking the store's lock (the caller may hold it).
    func planPatches(
        of patched: [(key: ObjectKey, location: RecordLocation)],
        merge: PatchMerge?,
        file: any StoreFile,
        end: UInt64
    ) throws -> PlanPatches {
        guard patched.count <= Int(UInt32.max) else {
            throw StoreError(.tooLarge, "too many patched objects in one read", path: path)
        }
        // Read in file order; the entity field holds the index in `patched`.
        var items: [Item] = patched.indices.map { index in
            (
                patched[index].location.offset, patched[index].key, patched[index].location.length,
                EntityTag(index)
            )
        }
        items.sort { $0.offset < $1.offset }
        var partials: [UInt8] = []
        var list = [PlanPatches.Patch](
            repeating: PlanPatches.Patch(
                key: 0,
                offset: 0,
                baseOffset: 0,
                length: 0,
                baseLength: 0,
                entity: 0,
                start: 0,
                count: 0
            ),
            count: patched.count
        )
        let tables = CRC32.lookupTables
        try forEachRecord(items[...], file: file, end: end) { record, item in
            let index = Int(item.entity)
            let location = patched[index].location
            let (frame, partial) = try checkedPatch(
                record,
                key: item.key,
                location: location,
                tables: tables
            )
            list[index] = PlanPatches.Patch(
                key: item.key,
                offset: location.offset,
                baseOffset: frame.baseOffset,
                length: location.length,
                baseLength: frame.baseLength,
                entity: location.entity,
                start: UInt32(truncatingIfNeeded: partials.count),
                count: UInt32(partial.count)
            )
            partials.append(contentsOf: partial)
        }
        return PlanPatches(partials: partials, list: list, merge: merge)
    }

    /// Calls `body` with each object of `plan`, checking each record's checksum.
    ///
    /// Records read through 1 MiB windows where many lie close together, one by one elsewhere.
    package func forEachObject(
        in plan: ReadPlan,
        _ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        try visit(
            plan.items,
            file: plan.file,
            end: plan.end,
            layout: plan.layout,
            upgrade: plan.upgrade,
            patches: plan.patches,
            body
        )
    }

    fileprivate typealias Item = (offset: UInt64, key: ObjectKey, length: UInt32, entity: EntityTag)

    /// Reads and checks the records `items` locate, grouped by 1 MiB window, and calls `body`
    /// with each object's value (a patched object's merged with its patch's partial value).
    private func visit(
        _ items: ArraySlice<Item>,
        file: any StoreFile,
        end: UInt64,
        layout: RecordLayout,
        upgrade: ActiveUpgrade?,
        patches: PlanPatches?,
        _ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        let tables = CRC32.lookupTables
        try forEachRecord(items, file: file, end: end) { record, item in
            let (frame, payload, contents) = try checkedPut(
                record,
                key: item.key,
                offset: item.offset,
                layout: layout,
                tables: tables
            )
            let value = UnsafeRawBufferPointer(rebasing: payload[contents.valueStart...])
            if item.length & RecordLocation.patchBit != 0 {
                try deliverPatched(
                    value,
                    frame: frame,
                    item: item,
                    patches: patches,
                    upgrade: upgrade,
                    body
                )
                return
            }
            guard let upgrade, item.offset < upgrade.boundary else {
                try body(item.key, item.entity, value)
                return
            }
            try upgrade.deliver(value, entity: item.entity, offset: item.offset) {
                try body(item.key, item.entity, $0)
            }
        }
    }

    /// Calls `body` with the value of the patched object whose base put, `frame`, holds
    /// `value`, merged with its patch's partial value.
    @inline(never)
    private func deliverPatched(
        _ value: UnsafeRawBufferPointer,
        frame: RecordFrame,
        item: Item,
        patches: PlanPatches?,
        upgrade: ActiveUpgrade?,
        _ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        guard let patches else { preconditionFailure("a read plan's patched object has no patch") }
        let patch = patches.list[Int(item.entity)]
        guard frame.entity == patch.entity else {
            throw baseOfAnotherEntity(item.key, at: item.offset)
        }
        guard let merge = patches.merge else { throw patchNeedsEngine(item.key, at: patch.offset) }
        let (start, end) = (Int(patch.start), Int(patch.start) + Int(patch.count))
        try patches.partials.withUnsafeBytes { partials in
            try merge.merge(
                patch.entity,
                item.offset,
                value,
                patch.offset,
                UnsafeRawBufferPointer(rebasing: partials[start..<end])
            ) { merged in
                guard let upgrade, patch.offset < upgrade.boundary else {
                    try body(item.key, patch.entity, merged)
                    return
                }
                try upgrade.deliver(merged, entity: patch.entity, offset: patch.offset) {
                    try body(item.key, patch.entity, $0)
                }
            }
        }
    }

    /// The merged values (in the layout of each patch's record, untranslated) and the blobs of
    /// the patched objects among `items`, by key, read through `merge`.
    ///
    /// Reads the file without the store's lock (compaction holds it).
    func mergedPatches(
        of items: [(key: ObjectKey, location: RecordLocation)],
        merge: PatchMerge,
        file: any StoreFile,
        end: UInt64
    ) throws -> [ObjectKey: (value: [UInt8], blobs: [BlobID])] {
        let patched = items.filter { $0.location.isPatch }
        guard !patched.isEmpty else { return [:] }
        let patches = try planPatches(of: patched, merge: merge, file: file, end: end)
        var bases: [Item] = patched.indices.map { patches.item($0, key: patched[$0].key) }
        bases.sort { $0.offset < $1.offset }
        let plan = ReadPlan(
            items: bases,
            range: bases.indices,
            file: file,
            end: end,
            layout: .compact,
            upgrade: nil,
            generation: 0,
            patches: patches
        )
        var merged: [ObjectKey: (value: [UInt8], blobs: [BlobID])] = [:]
        merged.reserveCapacity(bases.count)
        try forEachRecord(plan.items, file: file, end: end) { record, item in
            let (frame, payload, contents) = try checkedPut(
                record,
                key: item.key,
                offset: item.offset,
                layout: .compact
            )
            let value = UnsafeRawBufferPointer(rebasing: payload[contents.valueStart...])
            try deliverPatched(value, frame: frame, item: item, patches: plan.patches, upgrade: nil)
            { key, _, value in
                merged[key] = (Array(value), contents.blobs(in: payload))
            }
        }
        return merged
    }

    /// Calls `each` with the bytes of every record `items` locate (lengths without the patch
    /// bit), reading them through 1 MiB windows, or one by one when few of them lie in a
    /// window.
    @inline(__always)
    private func forEachRecord(
        _ items: ArraySlice<Item>,
        file: any StoreFile,
        end: UInt64,
        _ each: (UnsafeRawBufferPointer, Item) throws -> Void
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
        // A window is read only for at least this many records: fewer cost less as a read
        // each (a system call and the record's bytes) than as the window's copy out of the
        // page cache. One record in 16 KiB is where the two cost about the same.
        let denseEnough = max(windowSize >> 14, 1)
        // The items from this index on, up to `sparseEnd`, lie in a window read record by
        // record.
        var sparseEnd = items.startIndex
        var single = UnsafeMutableRawBufferPointer.allocate(byteCount: 0, alignment: 8)
        defer { single.deallocate() }

        func pastTheEnd(_ item: Item) -> StoreError {
            StoreError(
                .corrupt,
                "record runs past the end of the file",
                path: path,
                offset: item.offset
            )
        }

        for index in items.indices {
            let item = items[index]
            let total = Int(item.length & ~RecordLocation.patchBit)
            if let window, item.offset >= windowStart,
                item.offset + UInt64(total) <= windowStart + UInt64(windowCount)
            {
                let at = Int(item.offset - windowStart)
                try each(UnsafeRawBufferPointer(rebasing: window[at..<(at + total)]), item)
                continue
            }
            let aligned = (item.offset >> windowShift) << windowShift
            if index >= sparseEnd {
                // Plans come grouped by window: count this window's records, up to enough.
                var next = index + 1
                while next < items.endIndex, next - index < denseEnough,
                    items[next].offset >> windowShift == item.offset >> windowShift
                {
                    next += 1
                }
                if next - index < denseEnough { sparseEnd = next }
            }
            if index >= sparseEnd,
                item.offset + UInt64(total) <= aligned + UInt64(windowSize + spill)
            {
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
                try each(UnsafeRawBufferPointer(rebasing: buffer[at..<(at + total)]), item)
            } else {
                // A record too large for a window, or far from the others: read it alone.
                if single.count < total {
                    single.deallocate()
                    single = .allocate(byteCount: max(total, 4096), alignment: 8)
                }
                let record = UnsafeMutableRawBufferPointer(rebasing: single[..<total])
                guard try file.read(into: record, at: item.offset) == total else {
                    throw pastTheEnd(item)
                }
                try each(UnsafeRawBufferPointer(record), item)
            }
        }
    }
}
