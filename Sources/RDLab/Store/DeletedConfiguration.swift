import Foundation
import ObjectLog

/// A configuration deleted in a transaction the store's history still keeps, with its last
/// values and those of the snapshots deleted with it: what `rdlab list --deleted` lists and
/// `rdlab undelete` restores.
struct DeletedConfiguration {
    /// Its name when it was deleted.
    var name: String
    /// When it was deleted.
    var date: Date
    /// The number of the transaction that deleted it.
    var transaction: UInt64
    /// Its last values, by property name (``HistoryChange/oldValues`` of its delete).
    var values: [String: StoredValue]
    /// The last values of each snapshot deleted with it, by property name.
    var snapshots: [[String: StoredValue]]
}
