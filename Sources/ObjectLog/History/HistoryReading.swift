import Foundation
import ObjectLogStore

/// How a store's history becomes ``HistoryTransaction``s, for a context and for the
/// ``StoreInspector``: the transactions after a token, filtered, each change decoded.
enum HistoryReading {
    /// The transactions of `store` after `token` (from the earliest it has when nil) whose
    /// changes are of `tags` (all when nil), saved by `author` (any when nil), that committed
    /// at or after `date`.
    ///
    /// `entity` names an entity tag's entity and its schema in the model version of a hash
    /// (nil for the store's newest); changes of tags it does not know are left out.
    static func transactions(
        of store: any PersistentStore,
        after token: HistoryToken?,
        tags: Set<EntityTag>?,
        author: String? = nil,
        from date: Date?,
        entity: (EntityTag, _ modelHash: String?) -> (name: String, schema: ModelSchema.Entity)?
    ) throws(ObjectLogError) -> [HistoryTransaction] {
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
            if let author, transaction.author != author { continue }
            var changes: [HistoryChange] = []
            for change in transaction.changes {
                if let tags, !tags.contains(change.entity) { continue }
                guard let (name, schema) = entity(change.entity, transaction.modelHash) else {
                    continue
                }
                changes.append(try Self.change(change, entityName: name, schema: schema))
            }
            if tags != nil, changes.isEmpty { continue }
            transactions.append(
                HistoryTransaction(
                    token: HistoryToken(transaction: transaction.number),
                    date: transaction.date,
                    author: transaction.author,
                    contextName: transaction.contextName,
                    changes: changes,
                    changesModel: transaction.changesModel
                )
            )
        }
        return transactions
    }

    /// A store's change as the history shows it: decoded, with the properties that changed.
    private static func change(
        _ change: StoreHistory.Change,
        entityName: String,
        schema: ModelSchema.Entity
    ) throws(ObjectLogError) -> HistoryChange {
        func values(_ payload: [UInt8]?) throws(ObjectLogError) -> [(String, StoredValue)] {
            guard let payload else { return [] }
            var decoded: [(name: String, value: StoredValue)] = []
            var failure: ObjectLogError?
            payload.withUnsafeBytes { bytes in
                do throws(ObjectLogError) {
                    decoded = try StoreInspector.decode(payload: bytes, entity: schema)
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
            objectID: ObjectID(entityName: entityName, key: change.key),
            kind: kind,
            changedProperties: changed,
            oldValues: oldValues,
            newValues: newValues
        )
    }

    /// The entity lookup for ``transactions(of:after:tags:author:from:entity:)`` of a store
    /// opened with `model`: the model's own entities, and those of an older model version the
    /// store records for history a compaction kept in it.
    static func entities(
        of model: ManagedObjectModel,
        store: any PersistentStore
    ) -> (EntityTag, String?) -> (name: String, schema: ModelSchema.Entity)? {
        var versions: ModelHistory?
        return { tag, hash in
            if let hash, hash != model.versionHash {
                if versions == nil { versions = try? ModelHistory.read(from: store) }
                return versions?.versions.first { $0.hash == hash }?.schema.entity(tag: tag).map {
                    ($0.name, $0)
                }
            }
            return model.entity(tag: tag).map { ($0.name, $0.schema) }
        }
    }
}
