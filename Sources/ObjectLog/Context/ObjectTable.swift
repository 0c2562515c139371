import ObjectLogStore

/// The registry of a context: object keys to objects, in an open-addressing hash table.
///
/// Keys are unique non-zero integers handed out in ascending runs, so the low bits of the key
/// are a collision-free slot for a run and consecutive objects land in consecutive slots,
/// which keeps a bulk insert or fetch cache-friendly. This is several times cheaper than
/// `Dictionary`'s seeded SipHash, and the registry is touched for every inserted and fetched
/// object. Linear probing with backward-shift deletion keeps lookups short without
/// tombstones.
struct ObjectTable {
    private var keys: [ObjectKey]
    private var objects: [ManagedObject?]
    /// The number of registered objects.
    private(set) var count = 0
    /// An upper bound of every entry's distance from its home slot.
    ///
    /// Deletion stops shifting at this distance from the hole: a farther entry's home lies after
    /// the hole, so it must stay. Without the bound, a deletion scanned to the end of the probe
    /// run, and consecutive keys fill one run as long as the table is full, which made removing
    /// many objects (a rollback, an upsert) quadratic.
    private var maxDistance = 0

    init() {
        keys = Array(repeating: 0, count: 16)
        objects = Array(repeating: nil, count: 16)
    }

    private var mask: Int { keys.count - 1 }

    @inline(__always)
    private func slot(for key: ObjectKey) -> Int {
        Int(truncatingIfNeeded: key ^ (key >> 32)) & mask
    }

    /// The object with a key; assigning `nil` removes it.
    subscript(key: ObjectKey) -> ManagedObject? {
        get {
            var index = slot(for: key)
            while true {
                let found = keys[index]
                if found == key { return objects[index] }
                if found == 0 { return nil }
                index = (index + 1) & mask
            }
        }
        set {
            if let newValue {
                insert(newValue, for: key)
            } else {
                remove(key)
            }
        }
    }

    private mutating func insert(_ object: ManagedObject, for key: ObjectKey) {
        if (count + 1) * 2 > keys.count { grow() }
        var index = slot(for: key)
        while true {
            let found = keys[index]
            if found == key {
                objects[index] = object
                return
            }
            if found == 0 {
                keys[index] = key
                objects[index] = object
                count += 1
                maxDistance = max(maxDistance, (index - slot(for: key)) & mask)
                return
            }
            index = (index + 1) & mask
        }
    }

    private mutating func remove(_ key: ObjectKey) {
        var index = slot(for: key)
        while true {
            let found = keys[index]
            if found == 0 { return }
            if found == key { break }
            index = (index + 1) & mask
        }
        keys[index] = 0
        objects[index] = nil
        count -= 1
        // Backward-shift deletion: move later entries of the probe run into the hole when
        // their home slot does not lie (cyclically) between the hole and their position.
        var hole = index
        var next = (hole + 1) & mask
        while keys[next] != 0, (next - hole) & mask <= maxDistance {
            let home = slot(for: keys[next])
            let distanceToNext = (next - home) & mask
            let distanceToHole = (hole - home) & mask
            if distanceToHole <= distanceToNext {
                keys[hole] = keys[next]
                objects[hole] = objects[next]
                keys[next] = 0
                objects[next] = nil
                hole = next
            }
            next = (next + 1) & mask
        }
    }

    private mutating func grow() {
        let oldKeys = keys
        let oldObjects = objects
        keys = Array(repeating: 0, count: oldKeys.count * 2)
        objects = Array(repeating: nil, count: oldKeys.count * 2)
        count = 0
        maxDistance = 0
        for index in oldKeys.indices where oldKeys[index] != 0 {
            if let object = oldObjects[index] { insert(object, for: oldKeys[index]) }
        }
    }

    /// Every registered object, in no particular order.
    var allObjects: [ManagedObject] {
        objects.compactMap { $0 }
    }
}
