import ObjectLogStore

/// One declared index (``ManagedObject/indexes``, ``AttributeOptions/indexed``) of one entity
/// in a log store this process alone writes: every saved object's key, sorted by the index's
/// attributes, so that a fetch comparing them with constants reads only the objects in range.
///
/// The sorted entries come from the store's declared index file (``DeclaredIndexFile``) when
/// it describes the log as it was opened, or are built from the store (through the entity's
/// ``AttributeColumns``) when it is missing, stale or damaged. Each entry is the order keys of
/// the attributes (``ScalarKind/orderKey(ofColumnValue:)``: equal values equal, smaller values
/// smaller), then the object's key. Commits do not touch the entries: they record what they change in a delta
/// (each changed key's new order keys, or that it was deleted, or that its values are unknown
/// when a commit wrote a partial value), which a lookup reads beside the entries, and which
/// the checkpoint at close or compaction merges into them before writing the file.
///
/// An index only ever narrows a scan: the fetch still evaluates its predicate on every record
/// the index lets through, so an index that let through too much would cost time, never give
/// a wrong answer. What it must never do is leave out an object that can match; hence the stamp
/// check before the file is taken, and the delta.
///
/// The coordinator's lock guards every access.
final class DeclaredIndex {
    let entity: EntityDescription
    /// The attributes' payload indices, in sort order.
    let members: [Int]
    let kinds: [ScalarKind]
    /// A number for the definition, stored beside the entries: a file written for another
    /// definition (another attribute, kind or payload position) is never taken for this one.
    let descriptor: UInt64
    /// The sorted entries, `width + 1` words each; nil until loaded or built.
    var entries: DeclaredIndexEntries?
    /// Each changed key's slot in ``changeValues`` and ``changeStates``.
    private var changeSlots: [ObjectKey: Int] = [:]
    private var changeValues: [UInt64] = []
    private var changeStates: [ChangeState] = []
    /// Whether the entries and the delta describe the store: false after a commit the index
    /// could not follow (the next use builds it again).
    var isCurrent = true
    private let scratch: ManagedObject

    enum ChangeState: UInt8 {
        /// Saved with the values in ``changeValues``.
        case values
        /// Deleted.
        case deleted
        /// Saved, with values the commit did not say (a partial value): always a candidate.
        case unknown
    }

    var width: Int { members.count }
    /// The number of keys the delta holds.
    var changeCount: Int { changeSlots.count }

    /// The index of `members` of `entity`, or nil if the log store cannot keep it: one of them
    /// is not a non-optional number, date, Boolean or string.
    init?(entity: EntityDescription, members: [Int]) {
        var kinds: [ScalarKind] = []
        for member in members {
            guard AttributeColumns.canHold(member, of: entity),
                let field = entity.accessors[member].scalarField
            else { return nil }
            kinds.append(field.kind)
        }
        guard !members.isEmpty, members.count <= DeclaredIndexFile.maximumWidth else { return nil }
        self.entity = entity
        self.members = members
        self.kinds = kinds
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for word in [UInt64(entity.tag)]
            + zip(members, kinds).map({
                UInt64($0) << 8 | UInt64($1.rawValue)
            })
        {
            for shift in stride(from: 0, to: 64, by: 8) {
                hash = (hash ^ (word >> UInt64(shift) & 0xff)) &* 0x0000_0100_0000_01b3
            }
        }
        descriptor = hash
        scratch = entity.objectType.init()
    }

    // MARK: - Commits

    /// Records a committed put of `key` from its encoding, or that its values are unknown
    /// when `payload` is nil (a patch) or cannot be read.
    func put(_ key: ObjectKey, payload: UnsafeRawBufferPointer?) {
        let slot = self.slot(of: key)
        guard let payload, read(payload, into: slot) else {
            changeStates[slot] = .unknown
            return
        }
        changeStates[slot] = .values
    }

    /// Records a committed put of `key` whose new values are not known.
    func putUnknown(_ key: ObjectKey) { changeStates[slot(of: key)] = .unknown }

    /// Records a committed delete of `key`.
    func remove(_ key: ObjectKey) { changeStates[slot(of: key)] = .deleted }

    /// Forgets the entries and the delta: the next use builds the index from the store.
    func invalidate() {
        entries = nil
        clearChanges()
        isCurrent = false
    }

    private func clearChanges() {
        changeSlots = [:]
        changeValues = []
        changeStates = []
    }

    private func slot(of key: ObjectKey) -> Int {
        if let slot = changeSlots[key] { return slot }
        let slot = changeStates.count
        changeSlots[key] = slot
        changeStates.append(.unknown)
        changeValues.append(contentsOf: repeatElement(0, count: width))
        return slot
    }

    /// Reads the order keys of the members from an object's encoding into the delta's `slot`.
    private func read(_ payload: UnsafeRawBufferPointer, into slot: Int) -> Bool {
        var reader = PayloadReader(payload)
        guard (try? reader.readVarint()) == UInt64(entity.accessors.count),
            let last = members.max()
        else { return false }
        var found = [UInt64](repeating: 0, count: entity.accessors.count)
        let wanted = Set(members)
        let layout = entity.scalarLayout
        do {
            for index in 0...last {
                if wanted.contains(index) {
                    let kind =
                        layout?.fields[index].kind ?? entity.accessors[index].scalarField!.kind
                    found[index] = try kind.columnValue(from: &reader).0
                } else if let layout {
                    try layout.fields[index].kind.skip(from: &reader)
                } else if try !entity.accessors[index].skip(from: &reader) {
                    try entity.accessors[index].decode(from: &reader, into: scratch, source: nil)
                }
            }
        } catch {
            return false
        }
        for (position, member) in members.enumerated() {
            changeValues[slot * width + position] = kinds[position].orderKey(
                ofColumnValue: found[member]
            )
        }
        return true
    }

    // MARK: - Building

    /// Builds the entries from `columns`, which hold every member and equal the saved objects;
    /// the delta is then empty.
    func build(from columns: AttributeColumns) {
        let bits = columns.presentBits()
        var rows: [Int] = []
        rows.reserveCapacity(columns.count)
        for word in bits.indices {
            var remaining = bits[word]
            while remaining != 0 {
                rows.append(word << 6 | remaining.trailingZeroBitCount)
                remaining &= remaining &- 1
            }
        }
        let memberColumns = members.map { columns.columns[$0]! }
        // A stable sort by the key, then by each member from the last to the first, orders
        // the rows by all of them with the first deciding.
        RadixSort.sort(&rows) { columns.key(ofSlot: $0) }
        for position in (0..<width).reversed() {
            let column = memberColumns[position]
            let kind = kinds[position]
            RadixSort.sort(&rows) { kind.orderKey(ofColumnValue: column.values[$0]) }
        }
        var sorted: [UInt64] = []
        sorted.reserveCapacity(rows.count * (width + 1))
        for row in rows {
            for position in 0..<width {
                sorted.append(
                    kinds[position].orderKey(ofColumnValue: memberColumns[position].values[row])
                )
            }
            sorted.append(columns.key(ofSlot: row))
        }
        entries = DeclaredIndexEntries(sorted)
        clearChanges()
        isCurrent = true
    }

    /// The entries with the delta merged in, the values of keys whose values are unknown read
    /// with `read` (nil: the object is gone); the delta is then empty.
    ///
    /// - Returns: False if a value cannot be read, or a page of entries read from the file
    ///   fails its check; the index is then as before.
    func mergeChanges(
        reading read: (ObjectKey) throws -> [UInt8]?
    ) rethrows -> Bool {
        guard let stored = entries else { return true }
        if changeSlots.isEmpty { return stored.withWords { _ in true } ?? false }
        let stride = width + 1
        var added: [UInt64] = []
        for (key, slot) in changeSlots {
            switch changeStates[slot] {
            case .deleted: continue
            case .values: break
            case .unknown:
                guard let payload = try read(key) else { continue }
                let isRead = payload.withUnsafeBytes { self.read($0, into: slot) }
                guard isRead else { return false }
            }
            added.append(contentsOf: changeValues[(slot * width)..<((slot + 1) * width)])
            added.append(key)
        }
        var order = Array(0..<(added.count / stride))
        added.withUnsafeBufferPointer { added in
            order.sort { Self.less(added, $0 * stride, added, $1 * stride, count: stride) }
        }
        guard
            let merged = stored.withWords({ entries in
                added.withUnsafeBufferPointer { merge(entries, added: $0, order: order) }
            })
        else { return false }
        self.entries = DeclaredIndexEntries(merged)
        clearChanges()
        return true
    }

    /// `entries` without the delta's keys, and the delta's `added` entries merged in, in
    /// `order`.
    private func merge(
        _ entries: UnsafeBufferPointer<UInt64>,
        added: UnsafeBufferPointer<UInt64>,
        order: [Int]
    ) -> [UInt64] {
        let stride = width + 1
        var merged: [UInt64] = []
        merged.reserveCapacity(entries.count + added.count)
        var next = 0
        var entry = 0
        while entry < entries.count {
            let key = entries[entry + width]
            if changeSlots[key] != nil {
                entry += stride
                continue
            }
            while next < order.count,
                Self.less(added, order[next] * stride, entries, entry, count: stride)
            {
                merged.append(
                    contentsOf: added[(order[next] * stride)..<(order[next] * stride + stride)]
                )
                next += 1
            }
            merged.append(contentsOf: entries[entry..<(entry + stride)])
            entry += stride
        }
        for index in order[next...] {
            merged.append(contentsOf: added[(index * stride)..<(index * stride + stride)])
        }
        return merged
    }

    private static func less(
        _ left: UnsafeBufferPointer<UInt64>,
        _ leftStart: Int,
        _ right: UnsafeBufferPointer<UInt64>,
        _ rightStart: Int,
        count: Int
    ) -> Bool {
        for offset in 0..<count where left[leftStart + offset] != right[rightStart + offset] {
            return left[leftStart + offset] < right[rightStart + offset]
        }
        return false
    }

    // MARK: - Lookups

    /// The ranges of order keys `condition` allows its leading members.
    ///
    /// For each leading member that `condition` bounds, the closed range of order keys an
    /// object satisfying it can have (nil: none can): every bound but the last is one value,
    /// so that the entries in range lie together. Empty if the first member is not bounded.
    func bounds(of condition: ColumnCondition) -> [ClosedRange<UInt64>?] {
        var found: [ClosedRange<UInt64>?] = []
        for (position, member) in members.enumerated() {
            guard let range = Self.range(of: member, kind: kinds[position], in: condition) else {
                break
            }
            found.append(range)
            // An empty range (nil here) or one of several values ends the prefix.
            guard let bounds = range, bounds.lowerBound == bounds.upperBound else { break }
        }
        return found
    }

    /// The order keys attribute `member` can have where `condition` holds: nil when the
    /// condition does not bound it; `.some(nil)` when no value satisfies it.
    private static func range(
        of member: Int,
        kind: ScalarKind,
        in condition: ColumnCondition
    ) -> ClosedRange<UInt64>?? {
        switch condition {
        case .compare(let index, let op, let constant):
            guard index == member else { return nil }
            // A NaN, or strings that share their first 8 bytes or are not ASCII, take keys a
            // comparison cannot decide: the bounds let them through, never leave them out.
            let key = kind.orderKey(ofColumnValue: constant)
            switch op {
            case .less: return .some(key == 0 ? nil : 0...(key - 1))
            case .lessOrEqual: return .some(0...key)
            case .greater: return .some(key == .max ? nil : (key + 1)...UInt64.max)
            case .greaterOrEqual: return .some(key...UInt64.max)
            case .equal: return .some(key...key)
            case .notEqual: return nil
            }
        case .and(let left, let right):
            let (l, r) = (
                range(of: member, kind: kind, in: left), range(of: member, kind: kind, in: right)
            )
            guard let l else { return r }
            guard let r else { return l }
            guard let a = l, let b = r else { return .some(nil) }
            let lower = max(a.lowerBound, b.lowerBound)
            let upper = min(a.upperBound, b.upperBound)
            return .some(lower <= upper ? lower...upper : nil)
        case .or(let left, let right):
            guard let l = range(of: member, kind: kind, in: left),
                let r = range(of: member, kind: kind, in: right)
            else { return nil }
            guard let a = l else { return .some(r) }
            guard let b = r else { return .some(a) }
            return .some(min(a.lowerBound, b.lowerBound)...max(a.upperBound, b.upperBound))
        case .not:
            return nil
        }
    }

    /// The entries whose leading order keys lie in `bounds` (``bounds(of:)``), by entry
    /// number; the entries must be loaded.
    private func run(in bounds: [ClosedRange<UInt64>?]) -> Range<Int> {
        guard let entries, !bounds.isEmpty, bounds.allSatisfy({ $0 != nil }) else { return 0..<0 }
        let stride = width + 1
        let count = entries.count / stride
        let ranges = bounds.map { $0! }
        let lower = ranges.map(\.lowerBound)
        let upper = ranges.map(\.upperBound)
        // The first entry whose prefix is not below `lower`, and the first above `upper`.
        func first(_ isPast: (Int) -> Bool) -> Int {
            var (low, high) = (0, count)
            while low < high {
                let middle = (low + high) / 2
                if isPast(middle * stride) { high = middle } else { low = middle + 1 }
            }
            return low
        }
        let start = first { base in !Self.prefixLess(entries, base, lower) }
        let end = first { base in Self.prefixLess(upper, entries, base) }
        return start..<max(start, end)
    }

    /// At most how many keys ``keys(in:)`` returns for `bounds`: the entries in range and
    /// the delta's keys.
    func estimatedCount(in bounds: [ClosedRange<UInt64>?]) -> Int {
        run(in: bounds).count + changeSlots.count
    }

    /// The keys of the saved objects whose order keys lie in `bounds` (leading members;
    /// ``bounds(of:)``), and of those whose values the delta does not know; the entries must
    /// be loaded.
    ///
    /// Entries used in place may turn out ``DeclaredIndexEntries/isDamaged`` in the lookup:
    /// the keys are then not to be used.
    func keys(in bounds: [ClosedRange<UInt64>?]) -> [ObjectKey] {
        guard let entries, !bounds.isEmpty else { return [] }
        let stride = width + 1
        let run = run(in: bounds)
        var keys: [ObjectKey] = []
        keys.reserveCapacity(run.count)
        let checksDelta = !changeSlots.isEmpty
        for index in run {
            let key = entries[index * stride + width]
            if checksDelta, changeSlots[key] != nil { continue }
            keys.append(key)
        }
        for (key, slot) in changeSlots {
            switch changeStates[slot] {
            case .deleted: continue
            case .unknown: keys.append(key)
            case .values:
                var inRange = true
                for (position, range) in bounds.enumerated() {
                    guard let range, range.contains(changeValues[slot * width + position]) else {
                        inRange = false
                        break
                    }
                }
                if inRange { keys.append(key) }
            }
        }
        return keys
    }

    /// Whether the first `bound.count` words of the entry at `base` are below `bound`.
    private static func prefixLess(
        _ entries: DeclaredIndexEntries,
        _ base: Int,
        _ bound: [UInt64]
    ) -> Bool {
        for (offset, value) in bound.enumerated() where entries[base + offset] != value {
            return entries[base + offset] < value
        }
        return false
    }

    /// Whether `bound` is below the first `bound.count` words of the entry at `base`.
    private static func prefixLess(
        _ bound: [UInt64],
        _ entries: DeclaredIndexEntries,
        _ base: Int
    ) -> Bool {
        for (offset, value) in bound.enumerated() where entries[base + offset] != value {
            return value < entries[base + offset]
        }
        return false
    }
}
