/// A place in a store's history: the transaction it names and every one before it.
///
/// Pass a token to ``ManagedObjectContext/history(after:entities:author:from:)`` to read what was
/// committed after it, as Core Data's `NSPersistentHistoryToken`. Tokens are `Codable`, so a
/// reader can keep the last one it read (in its own defaults or a file) and go on from there
/// after a relaunch; they stay valid across reopening the store. A token older than the
/// history the store still has makes the read throw ``ObjectLogError/Code/historyExpired``.
public struct HistoryToken: Sendable, Codable, Hashable, Comparable, CustomStringConvertible {
    /// The number of the transaction: 1 for a store's first, counting every transaction the
    /// store ever committed.
    public var transaction: UInt64

    /// The token of transaction `transaction`; 0 names the start of the store, before its
    /// first transaction.
    public init(transaction: UInt64) { self.transaction = transaction }

    /// Whether `lhs` names an earlier transaction than `rhs`.
    public static func < (lhs: HistoryToken, rhs: HistoryToken) -> Bool {
        lhs.transaction < rhs.transaction
    }

    /// The transaction's number after `#`, as `objectlog history` shows it.
    public var description: String { "#\(transaction)" }
}
