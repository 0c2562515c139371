import Foundation
import ObjectLogStore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Object keys to objects, in an open-addressing hash table: a context's registry, and its
/// table of updated objects.
///
/// Keys are unique non-zero integers handed out in ascending runs, so the low bits of the key
/// are a collision-free slot for a run and consecutive objects land in consecutive slots,
/// which keeps a bulk insert or fetch cache-friendly. This is several times cheaper than
/// `Dictionary`'s seeded SipHash, and the registry is touched for every inserted and fetched
/// object. Linear probing with backward-shift deletion keeps lookups short without
/// tombstones.
///
/// The table keeps its slots in raw memory and its objects as `Unmanaged` references it
/// retains itself: growing moves references without retaining or releasing them, and freeing
/// the slots needs no per-element value witness. (`[ManagedObject?]` arrays grow and free
/// element by element, a cost paid for every object a bulk insert registers.) Its state sits
/// behind one pointer, so a lookup pays no dynamic exclusivity check.
final class ObjectTable {
    private struct State {
        var keys: UnsafeMutablePointer<ObjectKey>
        var objects: UnsafeMutablePointer<Unmanaged<ManagedObject>?>
        var capacity: Int
        var count = 0
        /// An upper bound of every entry's distance from its home slot.
        ///
        /// Deletion stops shifting at this distance from the hole: a farther entry's home lies
        /// after the hole, so it must stay. Without the bound, a deletion scanned to the end of
        /// the probe run, and consecutive keys fill one run as long as the table is full, which
        /// made removing many objects (a rollback, an upsert) quadratic.
        var maxDistance = 0

        init(capacity: Int) {
            // Zeroed memory is a table of empty slots: key 0, and a nil reference (a nil
            // `Unmanaged?` is a null pointer). `calloc` gets large tables from the kernel
            // already zeroed, instead of writing every slot of a table that a large fetch
            // sizes for all its objects.
            guard let keyMemory = calloc(capacity, MemoryLayout<ObjectKey>.stride),
                let objectMemory = calloc(capacity, MemoryLayout<Unmanaged<ManagedObject>?>.stride)
            else { fatalError("out of memory for a table of \(capacity) objects") }
            keys = keyMemory.bindMemory(to: ObjectKey.self, capacity: capacity)
            objects = objectMemory.bindMemory(
                to: Unmanaged<ManagedObject>?.self,
                capacity: capacity
            )
            self.capacity = capacity
        }

        var mask: Int { capacity - 1 }

        @inline(__always)
        func slot(for key: ObjectKey) -> Int {
            Int(truncatingIfNeeded: key ^ (key >> 32)) & mask
        }

        /// Puts a reference the table owns into the slot for `key`; returns the reference it
        /// replaced, which the caller releases.
        mutating func insert(
            _ object: Unmanaged<ManagedObject>,
            for key: ObjectKey
        ) -> Unmanaged<ManagedObject>? {
            var index = slot(for: key)
            while true {
                let found = keys[index]
                if found == key {
                    let old = objects[index]
                    objects[index] = object
                    return old
                }
                if found == 0 {
                    keys[index] = key
                    objects[index] = object
                    count += 1
                    maxDistance = max(maxDistance, (index - slot(for: key)) & mask)
                    return nil
                }
                index = (index + 1) & mask
            }
        }

        func deallocate() {
            free(keys)
            free(objects)
        }
    }

    private let state: UnsafeMutablePointer<State>
    /// How many times objects were added, replaced or removed: equal counts before and after
    /// some work mean the table did not change.
    @exclusivity(unchecked) private(set) var mutations = 0
    /// The least number of objects a table going away releases on two threads (when the
    /// machine has two processors and ``holdsObjectsMadeInParallel``); tests lower it.
    ///
    /// Kept here rather than in `ContextTuning`: the table releases its objects in its own
    /// `deinit`, after its context has gone.
    var parallelReleaseThreshold = 65_536
    /// Whether a fetch registered objects it made on two threads, each with its worker's
    /// context link.
    ///
    /// Only then do the two halves of the table refer to different links. Objects that share
    /// one link (made one at a time) are released on one thread: two threads releasing them
    /// would contend for that link's reference count, its cache line moving between the
    /// processors at every release, which costs more than releasing them on one thread.
    var holdsObjectsMadeInParallel = false

    init() {
        state = .allocate(capacity: 1)
        state.initialize(to: State(capacity: 16))
    }

    deinit {
        releaseAll()
        state.pointee.deallocate()
        state.deallocate()
    }

    /// The number of registered objects.
    var count: Int { state.pointee.count }

    /// The object with a key; assigning `nil` removes it.
    subscript(key: ObjectKey) -> ManagedObject? {
        get { unretainedObject(forKey: key)?.takeUnretainedValue() }
        set {
            if let newValue {
                insert(newValue, for: key)
            } else {
                remove(key)
            }
        }
    }

    /// The object with a key, not retained: valid while the table keeps it.
    ///
    /// For loops over many objects that the table keeps alive anyway (a bulk fault load), where
    /// the subscript's retain and release of each object would be two atomic writes to its
    /// header for nothing.
    func unretainedObject(forKey key: ObjectKey) -> Unmanaged<ManagedObject>? {
        let table = state.pointee
        var index = table.slot(for: key)
        while true {
            let found = table.keys[index]
            if found == key { return table.objects[index] }
            if found == 0 { return nil }
            index = (index + 1) & table.mask
        }
    }

    /// Calls `body` with every registered object, in no particular order; `body` must not
    /// change the table.
    func forEachObject(_ body: (ObjectKey, ManagedObject) throws -> Void) rethrows {
        let table = state.pointee
        for index in 0..<table.capacity where table.keys[index] != 0 {
            if let object = table.objects[index] {
                try body(table.keys[index], object.takeUnretainedValue())
            }
        }
    }

    /// Registers `object` under `key`, replacing any object there.
    ///
    /// The same as assigning through the subscript, without its owned new value: callers that
    /// hold the object already save a retain and a release (a million of each in bulk inserts
    /// and fetches).
    func insert(_ object: ManagedObject, for key: ObjectKey) {
        mutations &+= 1
        if (state.pointee.count + 1) * 2 > state.pointee.capacity { grow() }
        let old = state.pointee.insert(Unmanaged.passRetained(object), for: key)
        old?.release()
    }

    /// Registers an object under `key` with a reference the caller has already retained for
    /// the table, replacing any object there.
    ///
    /// Lets worker threads retain the objects they make, so that registering them does not
    /// touch their memory again.
    func insert(retained object: Unmanaged<ManagedObject>, for key: ObjectKey) {
        mutations &+= 1
        if (state.pointee.count + 1) * 2 > state.pointee.capacity { grow() }
        let old = state.pointee.insert(object, for: key)
        old?.release()
    }

    /// Removes the object under `key` and hands the table's reference to it to the caller.
    func take(_ key: ObjectKey) -> ManagedObject? {
        guard let unmanaged = unretainedObject(forKey: key) else { return nil }
        let object = unmanaged.takeUnretainedValue()
        remove(key)
        return object
    }

    private func remove(_ key: ObjectKey) {
        mutations &+= 1
        var table = state.pointee
        var index = table.slot(for: key)
        while true {
            let found = table.keys[index]
            if found == 0 { return }
            if found == key { break }
            index = (index + 1) & table.mask
        }
        let removed = table.objects[index]
        table.keys[index] = 0
        table.objects[index] = nil
        table.count -= 1
        // Backward-shift deletion: move later entries of the probe run into the hole when
        // their home slot does not lie (cyclically) between the hole and their position.
        let mask = table.mask
        var hole = index
        var next = (hole + 1) & mask
        while table.keys[next] != 0, (next - hole) & mask <= table.maxDistance {
            let home = table.slot(for: table.keys[next])
            let distanceToNext = (next - home) & mask
            let distanceToHole = (hole - home) & mask
            if distanceToHole <= distanceToNext {
                table.keys[hole] = table.keys[next]
                table.objects[hole] = table.objects[next]
                table.keys[next] = 0
                table.objects[next] = nil
                hole = next
            }
            next = (next + 1) & mask
        }
        // Released last: the object's deinit may reach back into the context.
        state.pointee = table
        removed?.release()
    }

    private func grow() { grow(to: state.pointee.capacity * 2) }

    /// Moves the entries to a table of `capacity` slots, a power of two.
    private func grow(to capacity: Int) {
        let old = state.pointee
        var table = State(capacity: capacity)
        for index in 0..<old.capacity where old.keys[index] != 0 {
            // Moved, not retained: the old slots are freed without releasing.
            if let object = old.objects[index] {
                _ = table.insert(object, for: old.keys[index])
            }
        }
        old.deallocate()
        state.pointee = table
    }

    /// Makes room for `count` objects in all, so a bulk insert or fetch does not grow the table
    /// step by step.
    func reserveCapacity(_ count: Int) {
        var capacity = state.pointee.capacity
        while count * 2 > capacity { capacity *= 2 }
        if capacity > state.pointee.capacity { grow(to: capacity) }
    }

    /// Removes every object.
    func removeAll() {
        mutations &+= 1
        let old = state.pointee
        state.initialize(to: State(capacity: 16))
        for index in 0..<old.capacity { old.objects[index]?.release() }
        old.deallocate()
    }

    private func releaseAll() {
        let table = state.pointee
        let workers = 2
        guard holdsObjectsMadeInParallel, table.count >= max(parallelReleaseThreshold, workers),
            ProcessInfo.processInfo.activeProcessorCount >= workers
        else {
            for index in 0..<table.capacity { table.objects[index]?.release() }
            return
        }
        // Two threads, each releasing the objects of one run of slots holding half of them.
        // Consecutive keys sit in consecutive slots, so the two halves hold objects that
        // different parts of a parallel fetch made, with different context links: the two
        // threads do not contend for one reference count (splitting the slots alternately would
        // have both update the same links' counts, whose cache lines would then move between the
        // processors at every release; Benchmarks/README.md, "Tried and dropped").
        var middle = 0
        var seen = 0
        while seen < table.count / 2 {
            if table.keys[middle] != 0 { seen += 1 }
            middle += 1
        }
        let bounds = [0, middle, table.capacity]
        // Safe to share: the table is going away, and each worker reads its own slots.
        let objects = UncheckedSendable(table.objects)
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            for index in bounds[worker]..<bounds[worker + 1] {
                objects.value[index]?.release()
            }
        }
    }

    /// Every registered object, in no particular order.
    var allObjects: [ManagedObject] {
        let table = state.pointee
        var result: [ManagedObject] = []
        result.reserveCapacity(table.count)
        for index in 0..<table.capacity {
            if let object = table.objects[index] { result.append(object.takeUnretainedValue()) }
        }
        return result
    }
}

extension Array where Element == ManagedObject {
    /// Calls `body` with each object, without retaining and releasing it around the call.
    ///
    /// The array keeps its objects alive, and `body` must not change the array. Iterating an
    /// array of objects otherwise retains and releases every element, an atomic write to each
    /// object's header, which for a large save's objects, no longer in the cache, is a cache
    /// miss and a dirtied line each, on every pass over them.
    @inline(__always)
    func forEachUnretained(_ body: (ManagedObject) -> Void) {
        forEachUnretained(in: indices) { _, object in body(object) }
    }

    /// ``forEachUnretained(_:)`` over the objects at `range`, with their indexes.
    @inline(__always)
    func forEachUnretained(in range: Range<Int>, _ body: (Int, ManagedObject) -> Void) {
        precondition(range.lowerBound >= 0 && range.upperBound <= count)
        withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            // Safe: a class reference and an `Unmanaged` of it have the same representation,
            // and the memory is viewed so only during this call.
            base.withMemoryRebound(to: Unmanaged<ManagedObject>.self, capacity: buffer.count) {
                references in
                for index in range {
                    references[index]._withUnsafeGuaranteedRef { body(index, $0) }
                }
            }
        }
    }
}
