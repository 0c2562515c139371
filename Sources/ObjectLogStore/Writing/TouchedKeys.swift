/// Which keys a transaction has put or deleted so far, and whether each was left live, as its
/// commit goes through its entries: a delete of a key that is not live is skipped.
struct TouchedKeys {
    /// Two bits a key below `bitLimit`: whether it was touched, and whether it was left live.
    private var touched: [UInt64] = []
    private var left: [UInt64] = []
    private let bitLimit: ObjectKey
    /// The keys from `bitLimit` on.
    private var others: [ObjectKey: Bool] = [:]

    /// For keys below `bound`, in a transaction of `changes` entries and a directory of `live`
    /// keys.
    init(below bound: ObjectKey, changes: Int, live: Int) {
        // Bits while they take no more memory than the directory and the entries do (keys are
        // handed out in ascending runs, so most stores' keys are dense): a dictionary hashes
        // every key a batch delete touches and probes its table, where a key's bit is a shift
        // and a mask away.
        if bound <= UInt64(64 * (changes + live) + 4_096) {
            bitLimit = bound
            let words = Int((bound + 63) / 64)
            touched = [UInt64](repeating: 0, count: words)
            left = [UInt64](repeating: 0, count: words)
        } else {
            bitLimit = 0
        }
    }

    /// Whether `key` was left live, if it was touched.
    subscript(key: ObjectKey) -> Bool? {
        get {
            guard key < bitLimit else { return others[key] }
            let (word, bit) = (Int(key / 64), UInt64(1) << (key % 64))
            guard touched[word] & bit != 0 else { return nil }
            return left[word] & bit != 0
        }
        set {
            guard key < bitLimit else {
                others[key] = newValue
                return
            }
            let (word, bit) = (Int(key / 64), UInt64(1) << (key % 64))
            guard let newValue else {
                touched[word] &= ~bit
                return
            }
            touched[word] |= bit
            if newValue { left[word] |= bit } else { left[word] &= ~bit }
        }
    }
}
