/// The matches a fetch's scan has accepted: all of them, only the best few in the request's
/// order, or only their count.
struct FetchMatches {
    private(set) var objects: [ManagedObject] = []
    var count = 0
    /// Objects the scan decoded that lost their place among the best, or never had one: the
    /// scan reuses them to decode others.
    var spare: [ManagedObject] = []
    private let countOnly: Bool
    private let keepBest: Int?
    private let less: ((ManagedObject, ManagedObject) -> Bool)?
    /// The first sort's attribute, where it has an order key (``ScalarKind/orderKey(at:)``),
    /// and its direction: the best are compared by their keys first, so that most comparisons
    /// are of two integers, not of two objects' values through the sort descriptors.
    private let order: (field: ScalarLayout.Field, ascending: Bool)?
    /// The order key of each of `objects`, when it has one.
    private var orderKeys: [UInt64?] = []
    /// Whether an object is registered in the context (then it is never reused).
    private let isRegistered: (ManagedObject) -> Bool

    init(plan: FetchPlan, isRegistered: @escaping (ManagedObject) -> Bool) {
        countOnly = plan.countOnly
        keepBest = plan.keepBest
        less = plan.less
        order = plan.columnOrder.flatMap { order in
            plan.entity.accessors[order.index].scalarField.map { ($0, order.ascending) }
        }
        self.isRegistered = isRegistered
    }

    /// The order key of `object` in the first sort's direction, if it has one.
    private func orderKey(of object: ManagedObject) -> UInt64? {
        guard let order else { return nil }
        if object.isFault { object.fireFault() }
        let address = UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque())
        guard let key = order.field.kind.orderKey(at: address + order.field.offset) else {
            return nil
        }
        return order.ascending ? key : ~key
    }

    /// Whether `object`, whose order key is `key`, comes before the kept object at `index`.
    private func precedes(
        _ object: ManagedObject,
        _ key: UInt64?,
        _ index: Int,
        _ less: (ManagedObject, ManagedObject) -> Bool
    ) -> Bool {
        if let key, let other = orderKeys[index], key != other { return key < other }
        return less(object, objects[index])
    }

    /// Counts `object`, a match, and returns true, if it cannot be among the best.
    ///
    /// It cannot when as many as are wanted are kept and its first sort's value (decoded,
    /// with the predicate's) comes after the last one's. Its other values need not be decoded
    /// then.
    mutating func countIfOutranked(_ object: ManagedObject) -> Bool {
        guard let wanted = keepBest, objects.count == wanted, !countOnly,
            let last = orderKeys.last, let last, let key = orderKey(of: object), key > last
        else { return false }
        count += 1
        return true
    }

    /// Counts a match, and keeps it unless only the count is wanted or it is not among the
    /// best.
    mutating func accept(_ object: ManagedObject) {
        count += 1
        guard !countOnly else { return }
        guard let wanted = keepBest, let less else {
            objects.append(object)
            return
        }
        // `objects` stays sorted and holds at most `wanted` objects.
        let key = orderKey(of: object)
        if objects.count == wanted {
            guard !objects.isEmpty, precedes(object, key, objects.count - 1, less) else {
                if !isRegistered(object) { spare.append(object) }
                return
            }
        }
        var low = 0
        var high = objects.count
        while low < high {
            let middle = (low + high) / 2
            if precedes(object, key, middle, less) { high = middle } else { low = middle + 1 }
        }
        objects.insert(object, at: low)
        orderKeys.insert(key, at: low)
        if objects.count > wanted {
            let evicted = objects.removeLast()
            orderKeys.removeLast()
            if !isRegistered(evicted) { spare.append(evicted) }
        }
    }
}
