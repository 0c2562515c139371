import Foundation
import ObjectLogStore

/// In-memory copies of some scalar attributes of every saved object of one entity, by key:
/// what a fetch reads to narrow its scan down to the records that can match.
///
/// Each saved object has a row (a hash table finds it by key), and each column one 8-byte value
/// per row: the bits of an `Int`, `Int64` or `Double`, a `Date`'s
/// `timeIntervalSinceReferenceDate`, a `Bool` as 0 or 1, or the first 8 UTF-8 bytes of a
/// `String` (big-endian, zero-padded). A bit per row says whether its object is still saved;
/// when more than half the rows are of deleted objects, the coordinator drops the columns and
/// the next fetch builds them again. A column is built from the store the first time a fetch can use
/// it, and the coordinator keeps it equal to the store from then on: every commit updates it
/// from the values it writes, under the coordinator's lock. The columns are only ever a
/// filter: a fetch still reads the records of the objects they let through and evaluates its
/// predicate and order on them.
///
/// The coordinator's lock guards every access.
final class AttributeColumns: @unchecked Sendable {
    /// One attribute's values.
    ///
    /// A class, so that the targets that refer to it see its storage move when it grows.
    final class Column {
        let kind: ScalarKind
        @exclusivity(unchecked) var values: UnsafeMutablePointer<UInt64>
        /// A bit per key: the value has no place in the column's order (a `String` that is not
        /// ASCII, a NaN), so an ordering by the column keeps such objects as candidates.
        @exclusivity(unchecked) var unordered: UnsafeMutablePointer<UInt64>

        init(kind: ScalarKind, rows: Int) {
            self.kind = kind
            values = .allocate(capacity: rows)
            values.initialize(repeating: 0, count: rows)
            let words = (rows + 63) / 64
            unordered = .allocate(capacity: words)
            unordered.initialize(repeating: 0, count: words)
        }

        deinit {
            values.deallocate()
            unordered.deallocate()
        }
    }

    let entity: EntityDescription
    /// Columns by attribute payload index.
    @exclusivity(unchecked) private(set) var columns: [Int: Column] = [:]
    /// Every column, in payload order (see ``targets(_:)``), for commits.
    @exclusivity(unchecked) private var allTargets: [Target] = []

    /// A column to fill, by payload index; unretained (`columns` keeps it alive), so that
    /// reading a record costs no reference counting.
    private typealias Target = (index: Int, column: Unmanaged<Column>)

    /// How to read one property of an entity with a ``ScalarLayout``: its kind, and the column
    /// that takes its value (none: the value is moved past).
    private struct Step {
        var kind: ScalarKind
        var column: Unmanaged<Column>?
    }

    /// The steps that read every column from an object's encoding (see ``steps(_:)``), for
    /// commits; nil for an entity without a scalar layout, or when the columns changed since
    /// they were made.
    @exclusivity(unchecked) private var commitSteps: [Step]?
    /// The number of rows, live or dead: each key put gets the next row and keeps it.
    @exclusivity(unchecked) private(set) var capacity = 0
    @exclusivity(unchecked) private var rowCapacity = 0
    /// The key of each row.
    @exclusivity(unchecked) private var keys = UnsafeMutablePointer<ObjectKey>.allocate(capacity: 0)
    /// Each key's row.
    @exclusivity(unchecked) private var rows = KeyRowMap()
    /// A bit per row: a saved object has the row's key.
    @exclusivity(unchecked) private var present = UnsafeMutablePointer<UInt64>.allocate(capacity: 0)
    /// The number of saved objects (rows with their bit set).
    @exclusivity(unchecked) private(set) var count = 0
    private let scratch: ManagedObject
    /// The number of properties of the entity, which starts each of its encodings.
    private let propertyCount: Int

    private init(entity: EntityDescription) {
        self.entity = entity
        propertyCount = entity.accessors.count
        scratch = entity.objectType.init()
    }

    deinit {
        keys.deallocate()
        rows.deallocate()
        present.deallocate()
    }

    private var words: Int { (capacity + 63) / 64 }

    /// Whether there are so many rows of deleted objects that the columns should be built
    /// again.
    var isWasteful: Bool { capacity - count > count + 4096 }

    /// Whether the attribute at payload `index` can have a column.
    static func canHold(_ index: Int, of entity: EntityDescription) -> Bool {
        entity.accessors.indices.contains(index) && entity.accessors[index].scalarField != nil
    }

    /// Empty columns for `entity`, with room for the saved objects of `store`.
    static func make(for entity: EntityDescription, store: any PersistentStore) -> AttributeColumns
    {
        let columns = AttributeColumns(entity: entity)
        // Room only: a store that cannot count reserves none, and its scan reports why.
        columns.reserve((try? store.liveCount(entity: entity.tag)) ?? 0)
        return columns
    }

    /// Adds columns for the attributes at `indices` (those not there yet), filled from every
    /// saved object of the store; the first call also gives every saved object its row.
    ///
    /// - Returns: False if a record cannot be read (a scan then reports the error); the
    ///   columns are then as before.
    func add(_ indices: [Int], store: any PersistentStore) -> Bool {
        let added = Set(indices).filter { columns[$0] == nil && Self.canHold($0, of: entity) }
            .sorted()
        guard let saved = try? store.liveCount(entity: entity.tag) else { return false }
        guard !added.isEmpty || (capacity == 0 && saved > 0) else { return true }
        for index in added {
            let field = entity.accessors[index].scalarField!
            columns[index] = Column(kind: field.kind, rows: rowCapacity)
        }
        do {
            let targets = self.targets(added)
            if let steps = steps(targets) {
                let properties = propertyCount
                try steps.withUnsafeBufferPointer { steps in
                    try store.forEachLiveObject(entity: entity.tag) { key, _, buffer in
                        let row = try rows[key] ?? append(key)
                        guard Self.read(buffer, properties: properties, into: row, steps) else {
                            throw ObjectLogError(
                                .corrupt,
                                "cannot read a payload of \(entity.name)"
                            )
                        }
                    }
                }
            } else {
                try store.forEachLiveObject(entity: entity.tag) { key, _, buffer in
                    let row = try rows[key] ?? append(key)
                    try read(buffer, into: row, targets)
                }
            }
        } catch {
            for index in added { columns[index] = nil }
            return false
        }
        return true
    }

    /// Records a committed value of the object with `key`, from its encoding.
    ///
    /// - Returns: False if the value cannot be decoded; the columns must then be dropped.
    func put(_ key: ObjectKey, payload: UnsafeRawBufferPointer) -> Bool {
        put(count: 1) { _ in (key, payload) }
    }

    /// Records the committed values of the puts `range` of `entries`, objects of this entity,
    /// from their records in `records` (a transaction's, see ``Transaction/records``).
    ///
    /// - Returns: False if a value cannot be decoded; the columns must then be dropped.
    func put(
        _ entries: UnsafeBufferPointer<Transaction.Entry>,
        _ range: Range<Int>,
        records: UnsafeRawBufferPointer
    ) -> Bool {
        put(count: range.count) { offset in
            let index = range.lowerBound + offset
            // The value ends the put's record. Read field by field: a copy of the entry would
            // retain its blob list.
            let end = entries[index].recordStart + Int(entries[index].recordLength)
            let start = end - Int(entries[index].valueCount)
            return (entries[index].key, UnsafeRawBufferPointer(rebasing: records[start..<end]))
        }
    }

    /// Records a committed batch update of the objects of the puts `range` of `entries`, each
    /// of which had a row: the attributes at the payload indices of `encodings` were set to
    /// those encodings, and the others kept their values.
    ///
    /// Only the columns of set attributes change, without reading the records.
    ///
    /// - Returns: False if an encoding cannot be read or an object has no row; the columns
    ///   must then be dropped.
    func set(
        _ encodings: [Int: [UInt8]],
        of entries: UnsafeBufferPointer<Transaction.Entry>,
        _ range: Range<Int>
    ) -> Bool {
        var changed: [(column: Column, value: UInt64, isOrdered: Bool)] = []
        for (index, encoding) in encodings {
            guard let column = columns[index] else { continue }
            let decoded = encoding.withUnsafeBytes { bytes -> (UInt64, Bool)? in
                var reader = PayloadReader(bytes)
                guard let value = try? column.kind.columnValue(from: &reader),
                    reader.offset == bytes.count
                else { return nil }
                return value
            }
            guard let (value, isOrdered) = decoded else { return false }
            changed.append((column, value, isOrdered))
        }
        guard !changed.isEmpty else { return true }
        for index in range {
            guard let row = rows[entries[index].key],
                present[row >> 6] & (1 << UInt64(row & 63)) != 0
            else { return false }
            for change in changed {
                Self.store(change.value, isOrdered: change.isOrdered, in: change.column, row: row)
            }
        }
        return true
    }

    /// Records `count` committed values, the `index`th object's key and encoding given by
    /// `value(index)`, in order.
    @inline(__always)
    private func put(
        count: Int,
        _ value: (Int) -> (key: ObjectKey, payload: UnsafeRawBufferPointer)
    ) -> Bool {
        if allTargets.count != columns.count {
            allTargets = targets(Array(columns.keys))
            commitSteps = steps(allTargets)
        }
        guard let commitSteps else {
            for index in 0..<count {
                let (key, payload) = value(index)
                do {
                    try read(payload, into: try row(forPut: key), allTargets)
                } catch {
                    return false
                }
            }
            return true
        }
        let properties = propertyCount
        return commitSteps.withUnsafeBufferPointer { steps in
            for index in 0..<count {
                let (key, payload) = value(index)
                guard let row = try? row(forPut: key),
                    Self.read(payload, properties: properties, into: row, steps)
                else { return false }
            }
            return true
        }
    }

    /// The row of a saved object `key` (a new one if it has none), marked present.
    @inline(__always)
    private func row(forPut key: ObjectKey) throws(ObjectLogError) -> Int {
        guard let row = rows[key] else { return try append(key) }
        let bit: UInt64 = 1 << UInt64(row & 63)
        if present[row >> 6] & bit == 0 {
            present[row >> 6] |= bit
            count += 1
        }
        return row
    }

    /// The columns of the attributes at `indices`, by payload index, in payload order.
    private func targets(_ indices: [Int]) -> [Target] {
        Set(indices).sorted().compactMap { index in
            columns[index].map { (index, Unmanaged.passUnretained($0)) }
        }
    }

    /// For an entity with a ``ScalarLayout``: the steps that read the attributes of `targets`
    /// (in payload order) from an object's encoding, one per property up to the last of them.
    private func steps(_ targets: [Target]) -> [Step]? {
        guard let layout = entity.scalarLayout, let last = targets.last else { return nil }
        var steps = layout.fields[...last.index].map { Step(kind: $0.kind, column: nil) }
        for target in targets { steps[target.index].column = target.column }
        return steps
    }

    /// Reads the attributes of `steps` from an object's encoding, which must start with the
    /// entity's number of `properties`, into `row` of their columns, straight from the bytes.
    ///
    /// Each value is encoded as its ``ScalarKind`` encodes it; ``ScalarKind/columnValue(from:)``
    /// and ``ScalarKind/skip(from:)`` read the same values through ``PayloadReader``, at more
    /// cost per value (a test checks that both take and refuse the same encodings).
    ///
    /// - Returns: False if the encoding is not one of such an object, where the reader would
    ///   throw (a wrong property count, a value cut short, a malformed varint or `Bool`).
    private static func read(
        _ payload: UnsafeRawBufferPointer,
        properties: Int,
        into row: Int,
        _ steps: UnsafeBufferPointer<Step>
    ) -> Bool {
        guard let base = payload.baseAddress else { return false }
        let end = payload.count
        var offset = 0
        guard PayloadReader.varint(base, end, &offset) == UInt64(properties) else { return false }
        for step in steps {
            switch step.kind {
            case .int, .int64:
                guard let raw = PayloadReader.varint(base, end, &offset) else { return false }
                if let column = step.column {
                    // Zigzag, as `PayloadReader.readZigzag` undoes it.
                    let value = (raw >> 1) ^ (0 &- (raw & 1))
                    column._withUnsafeGuaranteedRef {
                        store(value, isOrdered: true, in: $0, row: row)
                    }
                }
            case .double, .date:
                guard end - offset >= 8 else { return false }
                let bits = UInt64(
                    littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                )
                offset += 8
                if let column = step.column {
                    column._withUnsafeGuaranteedRef {
                        store(bits, isOrdered: !Double(bitPattern: bits).isNaN, in: $0, row: row)
                    }
                }
            case .bool:
                guard offset < end else { return false }
                let byte = base.load(fromByteOffset: offset, as: UInt8.self)
                guard byte <= 1 else { return false }
                offset += 1
                if let column = step.column {
                    column._withUnsafeGuaranteedRef {
                        store(UInt64(byte), isOrdered: true, in: $0, row: row)
                    }
                }
            case .string:
                guard let length = PayloadReader.varint(base, end, &offset),
                    length <= UInt64(end - offset)
                else { return false }
                if let column = step.column {
                    let (value, isASCII) = prefix(
                        of: UnsafeRawBufferPointer(start: base + offset, count: Int(length))
                    )
                    column._withUnsafeGuaranteedRef {
                        store(value, isOrdered: isASCII, in: $0, row: row)
                    }
                }
                offset += Int(length)
            }
        }
        return true
    }

    /// Reads the attributes of `targets` from an object's encoding into `row` of their
    /// columns.
    ///
    /// Each wanted value is read in place by its ``ScalarKind`` (a column's attribute is one,
    /// encoded as the kind encodes it); the properties before it are moved past, or decoded
    /// into a scratch object when their accessor cannot skip them.
    private func read(
        _ payload: UnsafeRawBufferPointer,
        into row: Int,
        _ targets: [Target]
    ) throws {
        guard let last = targets.last else { return }
        var reader = PayloadReader(payload)
        guard try reader.readVarint() == UInt64(entity.accessors.count) else {
            throw ObjectLogError(.corrupt, "payload of \(entity.name) has another property count")
        }
        let layout = entity.scalarLayout
        var next = 0
        for index in 0...last.index {
            guard targets[next].index == index else {
                if let layout {
                    try layout.fields[index].kind.skip(from: &reader)
                } else if try !entity.accessors[index].skip(from: &reader) {
                    try entity.accessors[index].decode(from: &reader, into: scratch, source: nil)
                }
                continue
            }
            let column = targets[next].column
            let (value, isOrdered) = try column._withUnsafeGuaranteedRef {
                try $0.kind.columnValue(from: &reader)
            }
            column._withUnsafeGuaranteedRef {
                Self.store(value, isOrdered: isOrdered, in: $0, row: row)
            }
            next += 1
        }
    }

    @inline(__always)
    private static func store(_ value: UInt64, isOrdered: Bool, in column: Column, row: Int) {
        column.values[row] = value
        let bit: UInt64 = 1 << UInt64(row & 63)
        if isOrdered {
            column.unordered[row >> 6] &= ~bit
        } else {
            column.unordered[row >> 6] |= bit
        }
    }

    /// Forgets the object with `key`.
    func remove(_ key: ObjectKey) {
        guard let row = rows[key] else { return }
        let bit: UInt64 = 1 << UInt64(row & 63)
        if present[row >> 6] & bit != 0 {
            present[row >> 6] &= ~bit
            count -= 1
        }
    }

    /// Gives `key` the next row, marked present.
    ///
    /// - Throws: When the rows (numbered with 32 bits in the key table) are full.
    private func append(_ key: ObjectKey) throws(ObjectLogError) -> Int {
        guard capacity < Int(Int32.max) else {
            throw ObjectLogError(.invalidArgument, "too many objects for attribute columns")
        }
        if capacity == rowCapacity { reserve(max(64, rowCapacity * 2)) }
        let row = capacity
        capacity += 1
        keys[row] = key
        rows.insert(key, row: row)
        present[row >> 6] |= 1 << UInt64(row & 63)
        count += 1
        return row
    }

    /// The first 8 bytes of a string's UTF-8 `bytes`, big-endian and zero-padded, and whether
    /// they are all ASCII.
    ///
    /// The `.lexical` order of ASCII strings is their byte order, which the prefixes keep: a
    /// smaller prefix means a smaller string. Bytes that are not valid UTF-8 are not ASCII.
    static func prefix(of bytes: UnsafeRawBufferPointer) -> (UInt64, isASCII: Bool) {
        let count = bytes.count
        var value: UInt64
        if count >= 8 {
            value = UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))
        } else {
            value = 0
            for index in 0..<count { value |= UInt64(bytes[index]) << UInt64(56 - 8 * index) }
        }
        return (value, PayloadReader.isASCII(bytes))
    }

    private func reserve(_ newCapacity: Int) {
        guard newCapacity > rowCapacity else { return }
        let oldWords = (rowCapacity + 63) / 64
        let newWords = (newCapacity + 63) / 64
        func grown(_ old: UnsafeMutablePointer<UInt64>) -> UnsafeMutablePointer<UInt64> {
            let new = zeroedWords(newWords)
            new.update(from: old, count: oldWords)
            old.deallocate()
            return new
        }
        present = grown(present)
        let newKeys = UnsafeMutablePointer<ObjectKey>.allocate(capacity: newCapacity)
        newKeys.update(from: keys, count: capacity)
        keys.deallocate()
        keys = newKeys
        for column in columns.values {
            let values = UnsafeMutablePointer<UInt64>.allocate(capacity: newCapacity)
            values.update(from: column.values, count: capacity)
            column.values.deallocate()
            column.values = values
            column.unordered = grown(column.unordered)
        }
        rowCapacity = newCapacity
        rows.reserve(newCapacity)
    }

    private func zeroedWords(_ count: Int) -> UnsafeMutablePointer<UInt64> {
        let words = UnsafeMutablePointer<UInt64>.allocate(capacity: count)
        words.initialize(repeating: 0, count: count)
        return words
    }

    // MARK: - Filtering

    /// A bit per slot: the saved objects.
    func presentBits() -> [UInt64] {
        Array(UnsafeBufferPointer(start: present, count: words))
    }

    /// A bit per slot: the saved objects for which `condition` holds, or nil if a column it
    /// reads is missing.
    func matches(_ condition: ColumnCondition) -> [UInt64]? {
        switch condition {
        case .compare(let index, let op, let constant):
            guard let column = columns[index] else { return nil }
            return matches(column, op, constant)
        case .and(let left, let right):
            guard var bits = matches(left), let other = matches(right) else { return nil }
            for word in bits.indices { bits[word] &= other[word] }
            return bits
        case .or(let left, let right):
            guard var bits = matches(left), let other = matches(right) else { return nil }
            for word in bits.indices { bits[word] |= other[word] }
            return bits
        case .not(let inner):
            guard var bits = matches(inner) else { return nil }
            for word in bits.indices { bits[word] = ~bits[word] & present[word] }
            return bits
        }
    }

    private func matches(_ column: Column, _ op: ComparisonOperator, _ constant: UInt64) -> [UInt64]
    {
        var bits = [UInt64](repeating: 0, count: words)
        bits.withUnsafeMutableBufferPointer { bits in
            switch column.kind {
            case .int, .int64:
                scan(column, into: bits, op, Int64(bitPattern: constant)) { Int64(bitPattern: $0) }
            case .double, .date:
                scan(column, into: bits, op, Double(bitPattern: constant)) {
                    Double(bitPattern: $0)
                }
            case .bool:
                scan(column, into: bits, op, constant) { $0 }
            case .string:
                // A prefix cannot decide a comparison; the planner never asks.
                for word in 0..<bits.count { bits[word] = ~0 }
            }
            for word in 0..<bits.count { bits[word] &= present[word] }
        }
        return bits
    }

    private func scan<Value: Comparable>(
        _ column: Column,
        into bits: UnsafeMutableBufferPointer<UInt64>,
        _ op: ComparisonOperator,
        _ constant: Value,
        _ decode: (UInt64) -> Value
    ) {
        let values = column.values
        let capacity = capacity
        @inline(__always)
        func run(_ test: (Value) -> Bool) {
            // Without a branch per value: where matching values lie at random among the
            // others, a branch would mispredict on most matches, and keep the loop from being
            // vectorized.
            var slot = 0
            for word in 0..<bits.count {
                var packed: UInt64 = 0
                for bit in 0..<min(64, capacity - slot) {
                    let isMatch: UInt64 = test(decode(values[slot &+ bit])) ? 1 : 0
                    packed |= isMatch &<< UInt64(truncatingIfNeeded: bit)
                }
                bits[word] = packed
                slot += 64
            }
        }
        switch op {
        case .less: run { $0 < constant }
        case .lessOrEqual: run { $0 <= constant }
        case .greater: run { $0 > constant }
        case .greaterOrEqual: run { $0 >= constant }
        case .equal: run { $0 == constant }
        case .notEqual: run { $0 != constant }
        }
    }

    /// The value of `slot` in column `index`, mapped to an unsigned integer in the attribute's
    /// ascending order (equal values map equal, and a smaller one maps smaller), or nil if it
    /// has no place in that order.
    @inline(__always)
    func orderKey(_ column: Column, slot: Int) -> UInt64? {
        if column.unordered[slot >> 6] & (1 << UInt64(slot & 63)) != 0 { return nil }
        return column.kind.orderKey(ofColumnValue: column.values[slot])
    }

    /// The key of a row.
    @inline(__always)
    func key(ofSlot slot: Int) -> ObjectKey { keys[slot] }

    /// The row of `key`, if it has one.
    @inline(__always)
    func row(of key: ObjectKey) -> Int? { rows[key] }
}

/// Object keys to rows, in an open-addressing hash table (keys are never zero, and never
/// removed: a deleted object's row stays, marked absent).
struct KeyRowMap {
    private var keys = UnsafeMutablePointer<ObjectKey>.allocate(capacity: 0)
    private var rows = UnsafeMutablePointer<Int32>.allocate(capacity: 0)
    private var capacity = 0
    private var count = 0

    func deallocate() {
        keys.deallocate()
        rows.deallocate()
    }

    @inline(__always)
    private func slot(for key: ObjectKey) -> Int {
        Int(truncatingIfNeeded: key ^ (key >> 32)) & (capacity - 1)
    }

    subscript(key: ObjectKey) -> Int? {
        guard capacity > 0 else { return nil }
        var index = slot(for: key)
        while true {
            let found = keys[index]
            if found == key { return Int(rows[index]) }
            if found == 0 { return nil }
            index = (index + 1) & (capacity - 1)
        }
    }

    /// Makes room for `total` keys.
    mutating func reserve(_ total: Int) {
        guard total * 2 > capacity else { return }
        var newCapacity = max(16, capacity)
        while total * 2 > newCapacity { newCapacity *= 2 }
        let (oldKeys, oldRows, oldCapacity) = (keys, rows, capacity)
        keys = .allocate(capacity: newCapacity)
        keys.initialize(repeating: 0, count: newCapacity)
        rows = .allocate(capacity: newCapacity)
        capacity = newCapacity
        count = 0
        for index in 0..<oldCapacity where oldKeys[index] != 0 {
            insert(oldKeys[index], row: Int(oldRows[index]))
        }
        oldKeys.deallocate()
        oldRows.deallocate()
    }

    /// Adds a key that is not there yet (room must have been reserved).
    mutating func insert(_ key: ObjectKey, row: Int) {
        var index = slot(for: key)
        while keys[index] != 0 { index = (index + 1) & (capacity - 1) }
        keys[index] = key
        rows[index] = Int32(truncatingIfNeeded: row)
        count += 1
    }
}

/// A predicate the columns can decide exactly: comparisons of non-string scalar attributes
/// with constants, combined with `&&`, `||` and `!`.
indirect enum ColumnCondition {
    /// Attribute `index` compared with a constant in the column's representation.
    case compare(index: Int, ComparisonOperator, UInt64)
    case and(ColumnCondition, ColumnCondition)
    case or(ColumnCondition, ColumnCondition)
    case not(ColumnCondition)

    /// The payload indices of the attributes it reads.
    var indices: [Int] {
        switch self {
        case .compare(let index, _, _): [index]
        case .and(let left, let right), .or(let left, let right): left.indices + right.indices
        case .not(let inner): inner.indices
        }
    }
}
