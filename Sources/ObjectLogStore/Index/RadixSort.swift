/// A least-significant-digit radix sort for elements ordered by an unsigned integer key.
///
/// The keydir hands out its keys in 64-key blocks scattered by its hash, so a list of live keys
/// comes in short sorted runs in random order, on which a comparison sort makes log₂ n
/// comparisons a key, many of them mispredicted branches; this sort makes a few passes of a
/// count and a move per key, and compares nothing. It is stable, and it only makes passes over
/// the key's significant bits (11 at a time), skipping a pass whose digit is the same for every
/// element.
package enum RadixSort {
    private static let digitBits = 11

    /// Sorts `values` in ascending order of `key`, keeping the order of equal keys.
    package static func sort<Element>(_ values: inout [Element], by key: (Element) -> UInt64) {
        let count = values.count
        guard count > 256 else {
            // Insertion into a stable order costs less than the passes for short lists.
            values = values.enumerated().sorted {
                let (left, right) = (key($0.element), key($1.element))
                return left != right ? left < right : $0.offset < $1.offset
            }.map(\.element)
            return
        }
        var significant: UInt64 = 0
        for value in values { significant |= key(value) }
        let bits = UInt64.bitWidth - significant.leadingZeroBitCount
        let radix = 1 << digitBits
        let mask = UInt64(radix - 1)
        var other = values
        var inOther = false
        var counts = [Int](repeating: 0, count: radix + 1)
        var shift = 0
        while shift < bits {
            counts.withUnsafeMutableBufferPointer { counts in
                counts.update(repeating: 0)
                values.withUnsafeMutableBufferPointer { first in
                    other.withUnsafeMutableBufferPointer { second in
                        let source = inOther ? second : first
                        let target = inOther ? first : second
                        for value in source {
                            counts[Int((key(value) >> UInt64(shift)) & mask) + 1] += 1
                        }
                        // A digit every element shares moves nothing.
                        guard !counts.contains(count) else { return }
                        for digit in 0..<radix { counts[digit + 1] += counts[digit] }
                        for value in source {
                            let digit = Int((key(value) >> UInt64(shift)) & mask)
                            target[counts[digit]] = value
                            counts[digit] += 1
                        }
                        inOther.toggle()
                    }
                }
            }
            shift += digitBits
        }
        if inOther { values = other }
    }
}
