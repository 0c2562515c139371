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

    /// Describes a commit (of this store, or of another kind of store the engine holds).
    package init(
        number: UInt64,
        offset: UInt64,
        date: Date,
        inserted: Int,
        updated: Int,
        deleted: Int
    ) {
        self.number = number
        self.offset = offset
        self.date = date
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
    }
}
