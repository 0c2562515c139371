/// The smallest values offered, up to a capacity, in a binary max-heap.
struct MaxHeap {
    private var values: [UInt64] = []
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
        values.reserveCapacity(capacity)
    }

    /// Whether it holds `capacity` values.
    var isFull: Bool { capacity > 0 && values.count >= capacity }

    /// The largest value held (the heap must not be empty).
    var maximum: UInt64 { values[0] }

    /// Keeps `value` if it is among the smallest `capacity` offered so far.
    mutating func offer(_ value: UInt64) {
        guard capacity > 0 else { return }
        if values.count < capacity {
            values.append(value)
            var child = values.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard values[parent] < values[child] else { break }
                values.swapAt(parent, child)
                child = parent
            }
            return
        }
        guard value < values[0] else { return }
        values[0] = value
        var parent = 0
        while true {
            let left = 2 * parent + 1
            guard left < values.count else { break }
            let right = left + 1
            let larger = right < values.count && values[right] > values[left] ? right : left
            guard values[larger] > values[parent] else { break }
            values.swapAt(parent, larger)
            parent = larger
        }
    }
}
