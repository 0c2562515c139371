import Foundation
import ObjectLogStore

extension ManagedObjectContext {
    /// The token of the store's latest committed transaction: read the history after it to
    /// see only what is committed from now on.
    ///
    /// - Throws: ``ObjectLogError/Code/store`` if the store cannot be read.
    public var currentHistoryToken: HistoryToken {
        get throws(ObjectLogError) {
            // A child context's store is its parent: the committed transactions are the root's.
            var root = self
            while let parent = root.parent { root = parent }
            let store = root.store
            return HistoryToken(transaction: try readingStore { try store.transactionCount })
        }
    }

    /// The transactions committed after `token` (from the earliest the store still has when
    /// nil), in order, with each changed object's values before and after.
    ///
    /// - Parameters:
    ///   - token: Where to go on from: a transaction's ``HistoryTransaction/token`` or
    ///     ``currentHistoryToken``.
    ///   - entities: Only the changes of objects of these entities (by name, subentities
    ///     included); a transaction left with none is left out. All entities when nil.
    ///   - date: Only transactions committed at or after this date.
    /// - Returns: The transactions, oldest first.
    /// - Throws: ``ObjectLogError/Code/historyExpired`` when transactions after `token` are
    ///   no longer kept (a compaction folded them into the live state): fetch what you need
    ///   afresh and go on from ``currentHistoryToken``. ``ObjectLogError/Code/unsupported``
    ///   for a store that keeps no history (the in-memory store, a database server);
    ///   ``ObjectLogError/Code/entityNotInModel`` for an unknown entity name.
    public func history(
        after token: HistoryToken? = nil,
        entities: [String]? = nil,
        from date: Date? = nil
    ) throws(ObjectLogError) -> [HistoryTransaction] {
        let tags: Set<EntityTag>? = try entities.map { names throws(ObjectLogError) in
            var tags = Set<EntityTag>()
            for name in names {
                guard let entity = model.entity(named: name) else {
                    throw ObjectLogError(
                        .entityNotInModel,
                        "'\(name)' is not an entity of the model"
                    )
                }
                for member in model.entities where member.isKind(of: entity) {
                    tags.insert(member.tag)
                }
            }
            return tags
        }
        let after = token?.transaction ?? 0
        let stored = try readingStore { try store.history(after: after, limit: .max) }
        guard let stored else {
            throw ObjectLogError(
                .unsupported,
                "the store \(store.displayName) keeps no history of its transactions"
            )
        }
        if token != nil, after < stored.earliest {
            throw ObjectLogError(
                .historyExpired,
                "the history after transaction \(after) is gone: the store keeps it from "
                    + "transaction \(stored.earliest + 1) (a compaction folded the earlier "
                    + "transactions into the live state)"
            )
        }
        var transactions: [HistoryTransaction] = []
        for transaction in stored.transactions {
            if let date, transaction.date < date { continue }
            var changes: [HistoryChange] = []
            for change in transaction.changes {
                if let tags, !tags.contains(change.entity) { continue }
                guard let entity = model.entity(tag: change.entity) else { continue }
                changes.append(try Self.historyChange(change, entity: entity))
            }
            if tags != nil, changes.isEmpty { continue }
            transactions.append(
                HistoryTransaction(
                    token: HistoryToken(transaction: transaction.number),
                    date: transaction.date,
                    changes: changes,
                    changesModel: transaction.changesModel
                )
            )
        }
        return transactions
    }

    /// A store's change as the history shows it: decoded, with the properties that changed.
    private static func historyChange(
        _ change: StoreHistory.Change,
        entity: EntityDescription
    ) throws(ObjectLogError) -> HistoryChange {
        func values(_ payload: [UInt8]?) throws(ObjectLogError) -> [(String, StoredValue)] {
            guard let payload else { return [] }
            var decoded: [(name: String, value: StoredValue)] = []
            var failure: ObjectLogError?
            payload.withUnsafeBytes { bytes in
                do throws(ObjectLogError) {
                    decoded = try StoreInspector.decode(payload: bytes, entity: entity.schema)
                } catch {
                    failure = error
                }
            }
            if let failure { throw failure }
            return decoded.map { ($0.name, $0.value) }
        }
        let before = try values(change.before)
        let after = try values(change.after)
        var changed: [String] = []
        var oldValues: [String: StoredValue] = [:]
        var newValues: [String: StoredValue] = [:]
        let kind: HistoryChange.Kind
        switch change.kind {
        case .insert:
            kind = .insert
            changed = after.map(\.0)
            newValues = Dictionary(after, uniquingKeysWith: { _, last in last })
        case .delete:
            kind = .delete
            oldValues = Dictionary(before, uniquingKeysWith: { _, last in last })
        case .update:
            kind = .update
            let old = Dictionary(before, uniquingKeysWith: { _, last in last })
            for (name, value) in after where old[name] != value {
                changed.append(name)
                oldValues[name] = old[name] ?? .null
                newValues[name] = value
            }
        }
        return HistoryChange(
            objectID: ObjectID(entityName: entity.name, key: change.key),
            kind: kind,
            changedProperties: changed,
            oldValues: oldValues,
            newValues: newValues
        )
    }
}
