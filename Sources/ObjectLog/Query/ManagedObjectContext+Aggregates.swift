import Foundation
import ObjectLogStore

extension ManagedObjectContext {
    /// Computes a request's aggregates over the objects it selects, one result per group in
    /// ascending order of the group values (`null` first), without registering any object.
    ///
    /// Each saved record is read once, and only as far as the predicate and the aggregated
    /// attributes need: no object is made for it. Unsaved changes of the context count unless
    /// ``AggregateRequest/includesPendingChanges`` is `false`, as for a fetch. Without
    /// ``AggregateRequest/groupBy``, the one result has a count of 0 when nothing matches.
    ///
    /// - Throws: ``ObjectLogError/Code/invalidArgument`` for a key path that is not an
    ///   attribute, an aggregate its attribute's type has none of (a sum of strings), two
    ///   values of one name, an integer sum that overflows `Int64`, or a predicate that cannot
    ///   be evaluated; ``ObjectLogError/Code/entityNotInModel`` if the entity is not in the
    ///   model.
    public func aggregate<T: ManagedObject>(
        _ request: AggregateRequest<T>
    ) throws(ObjectLogError) -> [AggregateResult] {
        try throwFaultError()
        if !request.includesPendingChanges, hasChanges {
            var saved = request
            saved.includesPendingChanges = true
            return try savedStateContext().aggregate(saved)
        }
        let plan = try AggregatePlan(request, entity: try entity(of: T.self))
        var fetch = FetchRequest<T>(predicate: request.predicate)
        fetch.includesSubentities = request.includesSubentities
        var accumulator = AggregateAccumulator(plan: plan)
        for entity in try fetchedEntities(fetch) {
            try accumulate(entity, predicate: request.predicate, plan: plan, into: &accumulator)
        }
        return try accumulator.results()
    }

    /// Adds the objects of one entity (its subentities left out) that match `predicate`.
    private func accumulate<T: ManagedObject>(
        _ entity: EntityDescription,
        predicate: Predicate<T>?,
        plan: AggregatePlan,
        into accumulator: inout AggregateAccumulator
    ) throws(ObjectLogError) {
        let compilation = predicate.flatMap {
            PredicateCompiler.compileWithReads($0, entity: entity)
        }
        let shapes = entity.schema.properties.map(ValueShape.init)
        let scratch = entity.objectType.init()
        scratch.entity = entity
        scratch.managedObjectContext = self
        var values = [StoredValue](repeating: .null, count: shapes.count)
        func matches(_ object: ManagedObject) throws(ObjectLogError) -> Bool {
            guard let predicate else { return true }
            if let condition = compilation?.condition { return condition(object) }
            do {
                // Safe: only objects of `entity`, whose class is `T` or a subclass, come here.
                return try predicate.evaluate(unsafeDowncast(object, to: T.self))
            } catch {
                throw ObjectLogError(
                    .invalidArgument,
                    "cannot evaluate the predicate: \(error)",
                    underlyingError: error
                )
            }
        }
        /// Reads the wanted values of a payload into `values`, skipping the others.
        func read(_ payload: UnsafeRawBufferPointer) throws(ObjectLogError) {
            do {
                var reader = PayloadReader(payload)
                _ = try reader.readVarint()
                for index in 0..<plan.readCount {
                    if plan.wanted[index] {
                        values[index] = try StoredValue.decode(shapes[index], from: &reader)
                    } else {
                        try shapes[index].skip(&reader)
                    }
                }
            } catch {
                throw ObjectLogError.decoding(error)
            }
        }
        /// An object in memory: its values as a save would write them.
        func add(_ object: ManagedObject) throws(ObjectLogError) {
            guard try matches(object) else { return }
            var writer = PayloadWriter()
            var sink = BlobSink(store: nil, context: self)
            try ObjectEncoder.encode(object, entity: entity, to: &writer, blobs: &sink)
            var failure: ObjectLogError?
            writer.bytes.withUnsafeBytes { bytes in
                do throws(ObjectLogError) { try read(bytes) } catch { failure = error }
            }
            if let failure { throw failure }
            try accumulator.add(values)
        }
        func scan() throws(ObjectLogError) {
            var failure: ObjectLogError?
            do {
                try store.forEachLiveObject(entity: entity.tag) { key, _, buffer in
                    if let registered = registry[key] {
                        if registered.isDeleted { return }
                        // A loaded object counts with its values in memory, changed or not.
                        if !registered.isFault {
                            try add(registered)
                            return
                        }
                    }
                    if predicate != nil {
                        scratch.key = key
                        var reader = PayloadReader(buffer)
                        if let reads = compilation?.reads {
                            try ObjectDecoder.decode(
                                &reader,
                                into: scratch,
                                entity: entity,
                                only: reads,
                                source: nil
                            )
                        } else {
                            try ObjectDecoder.decode(
                                &reader,
                                into: scratch,
                                entity: entity,
                                source: RecordSource(store: store, key: key, context: self)
                            )
                        }
                        let matched = try matches(scratch)
                        if compilation == nil, entity.hasExternalData {
                            forgetExternalReferences(ofKey: key, entity: entity)
                        }
                        guard matched else { return }
                    }
                    try read(buffer)
                    try accumulator.add(values)
                }
            } catch let error as ObjectLogError {
                failure = error
            } catch {
                failure = ObjectLogError.store(error, "cannot scan \(entity.name)")
            }
            if let failure { throw failure }
        }
        if let loaded = try accumulateFromColumns(
            entity,
            condition: compilation?.columns,
            hasPredicate: predicate != nil,
            plan: plan,
            into: &accumulator
        ) {
            for object in loaded { try add(object) }
        } else {
            try scan()
        }
        for object in insertedList
        where object.isInserted && object.managedObjectContext === self && object.hasEntity(entity)
        {
            try add(object)
        }
    }
}

extension ManagedObjectContext {
    /// Accumulates the saved objects of `entity` from the coordinator's attribute columns.
    ///
    /// The columns serve a request when they hold every value it reads exactly (numbers, dates
    /// and Booleans) and can decide its predicate. The objects loaded in this context are
    /// left out and returned: their values in memory count instead. Returns nil, having done
    /// nothing, where the columns cannot serve the request.
    ///
    /// The columns are built from the store on first use and kept equal to it by every save;
    /// reading them replaces a pass over every record.
    fileprivate func accumulateFromColumns(
        _ entity: EntityDescription,
        condition: ColumnCondition?,
        hasPredicate: Bool,
        plan: AggregatePlan,
        into accumulator: inout AggregateAccumulator
    ) throws(ObjectLogError) -> [ManagedObject]? {
        guard !hasPredicate || condition != nil else { return nil }
        let read = plan.groupIndices + plan.measures.compactMap(\.index)
        guard
            read.allSatisfy({ index in
                AttributeColumns.canHold(index, of: entity)
                    && entity.accessors[index].scalarField?.kind != .string
            })
        else { return nil }
        var loaded: [ManagedObject] = []
        var excluded: [ObjectKey] = []
        registry.forEachObject { key, object in
            // Unsaved inserts have no rows; the caller adds them.
            guard object.hasEntity(entity), !object.isInserted else { return }
            if object.isDeleted {
                excluded.append(key)
            } else if !object.isFault {
                excluded.append(key)
                loaded.append(object)
            }
        }
        // With many objects loaded, their rows would be most of the work to take out.
        guard try excluded.count <= readingStore({ try store.liveCount(entity: entity.tag) }) / 4
        else { return nil }
        let indices = read + (condition?.indices ?? [])
        let served: Bool?
        do {
            served = try coordinator.withColumns(of: entity, indices: indices) { columns in
                guard var bits = condition.map({ columns.matches($0) }) ?? columns.presentBits()
                else { return false }
                for key in excluded {
                    if let row = columns.row(of: key) { bits[row >> 6] &= ~(1 << UInt64(row & 63)) }
                }
                try accumulator.add(slots: bits, of: columns)
                return true
            }
        } catch let error as ObjectLogError {
            throw error
        } catch {
            throw ObjectLogError.store(error, "cannot read the attribute columns of \(entity.name)")
        }
        guard served == true else { return nil }
        trace(.columnScan)
        return loaded
    }
}

/// What an ``AggregateRequest`` reads and computes, resolved against its entity: the payload
/// indices of the grouping and aggregated attributes.
struct AggregatePlan {
    /// One computed value.
    struct Measure {
        var function: AggregateFunction
        /// The attribute's payload index; nil for the count of objects.
        var index: Int?
        /// Whether a sum is of integers (else of floating-point values).
        var isInteger: Bool
        var name: String
    }

    var groupIndices: [Int]
    var groupNames: [String]
    var measures: [Measure]
    /// Per payload index, whether a result needs its value.
    var wanted: [Bool]
    /// How many leading properties of a payload are read (the rest are not even skipped).
    var readCount: Int

    init<T: ManagedObject>(
        _ request: AggregateRequest<T>,
        entity: EntityDescription
    ) throws(ObjectLogError) {
        func attribute(
            _ keyPath: PartialKeyPath<T>,
            _ use: String
        ) throws(ObjectLogError)
            -> (index: Int, name: String, type: AttributeType)
        {
            guard let accessor = entity.attributeAccessor(for: keyPath),
                let type = accessor.attribute?.type
            else {
                throw ObjectLogError(
                    .invalidArgument,
                    "\(use) of \(entity.name) must be a stored attribute's key path"
                )
            }
            return (accessor.index, accessor.name, type)
        }
        var names = Set<String>()
        groupIndices = []
        groupNames = []
        for keyPath in request.groupBy {
            let (index, name, _) = try attribute(keyPath, "a group")
            groupIndices.append(index)
            groupNames.append(name)
            names.insert(name)
        }
        measures = []
        for aggregate in request.aggregates {
            let function = aggregate.function
            var measure = Measure(
                function: function,
                index: nil,
                isInteger: true,
                name: aggregate.name ?? "count"
            )
            if let keyPath = aggregate.keyPath {
                let (index, name, type) = try attribute(keyPath, "an aggregate's attribute")
                let numeric = Self.integerTypes.contains(type) || type == .float || type == .double
                let ordered = numeric || [.string, .date, .bool].contains(type)
                let isSum = function == .sum || function == .average
                let isExtreme = function == .minimum || function == .maximum
                if (isSum && !numeric) || (isExtreme && !ordered) {
                    throw ObjectLogError(
                        .invalidArgument,
                        "cannot compute \(Self.shortName(function))(\(name)) of \(entity.name): "
                            + "'\(name)' is \(type.rawValue), "
                            + (isSum ? "not a number" : "whose values have no order here")
                    )
                }
                measure.index = index
                measure.isInteger = Self.integerTypes.contains(type)
                measure.name = aggregate.name ?? "\(Self.shortName(function))(\(name))"
            }
            guard names.insert(measure.name).inserted else {
                throw ObjectLogError(
                    .invalidArgument,
                    "two values of the aggregate request are named '\(measure.name)'; name one "
                        + "with `as:`"
                )
            }
            measures.append(measure)
        }
        wanted = [Bool](repeating: false, count: entity.accessors.count)
        for index in groupIndices { wanted[index] = true }
        for case let index? in measures.map(\.index) { wanted[index] = true }
        readCount = (wanted.lastIndex(of: true) ?? -1) + 1
    }

    static let integerTypes: Set<AttributeType> = [
        .int8, .int16, .int32, .int64, .uint8, .uint16, .uint32, .uint64,
    ]

    /// The function's name in a default value name: `min`, `max`, as SQL says them.
    static func shortName(_ function: AggregateFunction) -> String {
        switch function {
        case .minimum: "min"
        case .maximum: "max"
        default: function.rawValue
        }
    }
}

/// The running values of every group of an aggregate request.
struct AggregateAccumulator {
    struct State {
        var objects = 0
        /// Per measure: values seen (non-nil).
        var counts: [Int]
        var integerSums: [Int64]
        var sums: [Double]
        var extremes: [StoredValue?]

        init(measures: Int) {
            counts = Array(repeating: 0, count: measures)
            integerSums = Array(repeating: 0, count: measures)
            sums = Array(repeating: 0, count: measures)
            extremes = Array(repeating: nil, count: measures)
        }
    }

    let plan: AggregatePlan
    private var single: State
    private var groups: [[StoredValue]: State] = [:]

    init(plan: AggregatePlan) {
        self.plan = plan
        single = State(measures: plan.measures.count)
    }

    /// Adds one object's values (by payload index).
    mutating func add(_ values: [StoredValue]) throws(ObjectLogError) {
        if plan.groupIndices.isEmpty {
            try Self.add(values, to: &single, plan: plan)
        } else {
            let key = plan.groupIndices.map { values[$0] }
            try Self.add(
                values,
                to: &groups[key, default: State(measures: plan.measures.count)],
                plan: plan
            )
        }
    }

    private static func add(
        _ values: [StoredValue],
        to state: inout State,
        plan: AggregatePlan
    ) throws(ObjectLogError) {
        state.objects += 1
        for measure in plan.measures.indices {
            guard let index = plan.measures[measure].index else { continue }
            try add(values[index], measure: measure, to: &state, plan: plan)
        }
    }

    private static func add(
        _ value: StoredValue,
        measure: Int,
        to state: inout State,
        plan: AggregatePlan
    ) throws(ObjectLogError) {
        if value == .null { return }
        state.counts[measure] += 1
        let function = plan.measures[measure].function
        switch function {
        case .count: break
        case .sum, .average:
            if plan.measures[measure].isInteger, function == .sum {
                guard let integer = value.integerValue else { return }
                let (sum, overflow) = state.integerSums[measure].addingReportingOverflow(integer)
                guard !overflow else {
                    throw ObjectLogError(
                        .invalidArgument,
                        "the sum '\(plan.measures[measure].name)' overflows a 64-bit integer"
                    )
                }
                state.integerSums[measure] = sum
            } else {
                state.sums[measure] += value.doubleValue ?? 0
            }
        case .minimum:
            if let current = state.extremes[measure], !value.precedes(current) { return }
            state.extremes[measure] = value
        case .maximum:
            if let current = state.extremes[measure], !current.precedes(value) { return }
            state.extremes[measure] = value
        }
    }

    /// Adds the objects of the set bits of `slots`, their values read from `columns` (which
    /// hold every attribute the plan reads).
    mutating func add(slots: [UInt64], of columns: AttributeColumns) throws(ObjectLogError) {
        let measured = plan.measures.map { measure in
            measure.index.flatMap { columns.columns[$0] }
        }
        func forEachSlot(_ body: (Int) throws(ObjectLogError) -> Void) throws(ObjectLogError) {
            for word in slots.indices {
                var remaining = slots[word]
                while remaining != 0 {
                    try body(word << 6 | remaining.trailingZeroBitCount)
                    remaining &= remaining &- 1
                }
            }
        }
        guard plan.groupIndices.isEmpty else {
            let grouped = plan.groupIndices.map { columns.columns[$0] }
            var values = [StoredValue](repeating: .null, count: plan.wanted.count)
            try forEachSlot { slot throws(ObjectLogError) in
                for (index, column) in zip(plan.groupIndices, grouped) {
                    if let column { values[index] = Self.value(column, slot) }
                }
                for (measure, column) in zip(plan.measures, measured) {
                    if let index = measure.index, let column {
                        values[index] = Self.value(column, slot)
                    }
                }
                try add(values)
            }
            return
        }
        // One group: each measure runs over its column alone.
        let count = slots.reduce(0) { $0 + $1.nonzeroBitCount }
        single.objects += count
        for (measure, column) in measured.enumerated() {
            guard let column else { continue }
            if plan.measures[measure].function == .count {
                single.counts[measure] += count
                continue
            }
            let values = column.values
            switch (column.kind, plan.measures[measure].function) {
            case (.double, .sum), (.double, .average):
                var sum = 0.0
                try forEachSlot { slot in sum += Double(bitPattern: values[slot]) }
                single.sums[measure] += sum
                single.counts[measure] += count
            default:
                try forEachSlot { slot throws(ObjectLogError) in
                    try Self.add(
                        Self.value(column, slot),
                        measure: measure,
                        to: &single,
                        plan: plan
                    )
                }
            }
        }
    }

    /// The value of `slot` in a column of a number, date or Boolean, as a record's would be.
    private static func value(_ column: AttributeColumns.Column, _ slot: Int) -> StoredValue {
        let bits = column.values[slot]
        switch column.kind {
        case .int, .int64: return .int(Int64(bitPattern: bits))
        case .double: return .double(Double(bitPattern: bits))
        case .date: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: bits)))
        case .bool: return .bool(bits != 0)
        case .string: return .null  // Never read: a string's column holds a prefix only.
        }
    }

    /// One result per group, in ascending order of the group values.
    func results() throws(ObjectLogError) -> [AggregateResult] {
        if plan.groupIndices.isEmpty { return [result(group: [], state: single)] }
        return groups.sorted { lhs, rhs in
            for (left, right) in zip(lhs.key, rhs.key) where left != right {
                return left.precedes(right)
            }
            return false
        }
        .map { result(group: $0.key, state: $0.value) }
    }

    private func result(group: [StoredValue], state: State) -> AggregateResult {
        var values: [String: StoredValue] = [:]
        for (index, measure) in plan.measures.enumerated() {
            let seen = state.counts[index]
            switch measure.function {
            case .count:
                values[measure.name] = .int(Int64(measure.index == nil ? state.objects : seen))
            case .sum:
                values[measure.name] =
                    measure.isInteger ? .int(state.integerSums[index]) : .double(state.sums[index])
            case .average:
                values[measure.name] =
                    seen == 0 ? .null : .double(state.sums[index] / Double(seen))
            case .minimum, .maximum:
                values[measure.name] = state.extremes[index] ?? .null
            }
        }
        return AggregateResult(
            group: Dictionary(uniqueKeysWithValues: zip(plan.groupNames, group)),
            values: values
        )
    }
}

extension StoredValue {
    /// The value of an integer, for a sum; nil for other kinds or an unsigned value past
    /// `Int64.max`.
    fileprivate var integerValue: Int64? {
        switch self {
        case .int(let value): value
        case .uint(let value): Int64(exactly: value)
        default: nil
        }
    }

    /// The value of a number, for an average.
    fileprivate var doubleValue: Double? {
        switch self {
        case .int(let value): Double(value)
        case .uint(let value): Double(value)
        case .float(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }

    /// Whether `self` comes before `other` in ascending order: `null` first, then values of one
    /// kind in their type's order (strings in `String`'s, false before true); values of
    /// different kinds by their description.
    func precedes(_ other: StoredValue) -> Bool {
        switch (self, other) {
        case (.null, .null): false
        case (.null, _): true
        case (_, .null): false
        case (.bool(let a), .bool(let b)): !a && b
        case (.int(let a), .int(let b)): a < b
        case (.uint(let a), .uint(let b)): a < b
        case (.float(let a), .float(let b)): a < b
        case (.double(let a), .double(let b)): a < b
        case (.string(let a), .string(let b)): a < b
        case (.date(let a), .date(let b)): a < b
        case (.uuid(let a), .uuid(let b)): a.uuidString < b.uuidString
        case (.url(let a), .url(let b)), (.json(let a), .json(let b)): a < b
        case (.data(let a), .data(let b)): a.lexicographicallyPrecedes(b)
        default: description < other.description
        }
    }
}
