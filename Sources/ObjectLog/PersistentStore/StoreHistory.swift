import Foundation
import ObjectLogStore

/// Committed transactions as a store hands them to the engine: each changed object's payload
/// before and after, which the engine decodes into a history's values.
package struct StoreHistory: Sendable {
    /// One object's change.
    package struct Change: Sendable {
        package enum Kind: Sendable {
            case insert
            case update
            case delete
        }

        package var key: ObjectKey
        package var entity: EntityTag
        package var kind: Kind
        /// The payload before the transaction; nil for an insert.
        package var before: [UInt8]?
        /// The payload after it; nil for a delete.
        package var after: [UInt8]?

        package init(
            key: ObjectKey,
            entity: EntityTag,
            kind: Kind,
            before: [UInt8]?,
            after: [UInt8]?
        ) {
            self.key = key
            self.entity = entity
            self.kind = kind
            self.before = before
            self.after = after
        }
    }

    /// One committed transaction.
    package struct Transaction: Sendable {
        package var number: UInt64
        package var date: Date
        package var changes: [Change]
        /// Whether it recorded a new model version (a migration).
        package var changesModel: Bool
        /// The model version (its hash) whose layout the payloads are in, when it may be an
        /// older one than the store's newest (history a compaction kept); nil for the newest.
        package var modelHash: String?
        /// Who saved it, if the saving context named an author.
        package var author: String?
        /// The saving context's name, if it had one.
        package var contextName: String?

        package init(
            number: UInt64,
            date: Date,
            changes: [Change],
            changesModel: Bool,
            modelHash: String? = nil,
            author: String? = nil,
            contextName: String? = nil
        ) {
            self.number = number
            self.date = date
            self.changes = changes
            self.changesModel = changesModel
            self.modelHash = modelHash
            self.author = author
            self.contextName = contextName
        }
    }

    /// The transactions asked for, in order.
    package var transactions: [Transaction]
    /// The last transaction whose changes the store no longer has (a compaction folded them
    /// into its copy of the live state); 0 when it has them all.
    package var earliest: UInt64
    /// The last committed transaction.
    package var latest: UInt64

    package init(transactions: [Transaction], earliest: UInt64, latest: UInt64) {
        self.transactions = transactions
        self.earliest = earliest
        self.latest = latest
    }
}
