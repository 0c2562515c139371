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
    ///   - author: Only transactions saved by a context with this ``author``.
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
        author: String? = nil,
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
        return try HistoryReading.transactions(
            of: store,
            after: token,
            tags: tags,
            author: author,
            from: date,
            entity: HistoryReading.entities(of: model, store: store)
        )
    }

    /// The bytes of external data that a history value names
    /// (``StoredValue/externalData(_:byteCount:)``), such as an old value of a deleted object's
    /// external attribute.
    ///
    /// The store keeps the data of the values its history keeps: the log store its blob files,
    /// the PostgreSQL store a copy made when the transaction replaced or deleted them.
    ///
    /// - Throws: ``ObjectLogError/Code/store`` when the data is gone (its history was purged,
    ///   or a compaction dropped it) or cannot be read.
    public func externalData(_ blob: BlobID) throws(ObjectLogError) -> Data {
        var root = self
        while let parent = root.parent { root = parent }
        let store = root.store
        return try readingStore { try store.readBlob(blob) }
    }
}
