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
    /// Whether an object is registered in the context (then it is never reused).
    private let isRegistered: (ManagedObject) -> Bool

    init(plan: FetchPlan, isRegistered: @escaping (ManagedObject) -> Bool) {
        countOnly = plan.countOnly
        keepBest = plan.keepBest
        less = plan.less
        self.isRegistered = isRegistered
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
        if objects.count == wanted {
            guard let last = objects.last, less(object, last) else {
                if !isRegistered(object) { spare.append(object) }
                return
            }
        }
        var low = 0
        var high = objects.count
        while low < high {
            let middle = (low + high) / 2
            if less(object, objects[middle]) { high = middle } else { low = middle + 1 }
        }
        objects.insert(object, at: low)
        if objects.count > wanted {
            let evicted = objects.removeLast()
            if !isRegistered(evicted) { spare.append(evicted) }
        }
    }
}
