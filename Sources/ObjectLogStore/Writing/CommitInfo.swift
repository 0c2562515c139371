import Foundation

/// What a committed transaction was.
public struct CommitInfo: Sendable, Equatable {
    /// The transaction's number: 1 for the store's first, counting on across compactions.
    public var number: UInt64
    /// Offset of the transaction's first record in the store file (where it was written).
    public var offset: UInt64
    /// When it was committed.
    public var date: Date
    /// Objects inserted.
    public var inserted: Int
    /// Objects updated.
    public var updated: Int
    /// Objects deleted.
    public var deleted: Int
}
