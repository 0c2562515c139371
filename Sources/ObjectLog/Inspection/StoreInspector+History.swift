import Foundation

extension StoreInspector {
    /// The store's transactions after `token` (from the earliest it keeps when nil), decoded
    /// by the stored schema: ``ManagedObjectContext/history(after:entities:author:from:)`` without the
    /// model's classes, as `objectlog history --changes` shows it.
    ///
    /// - Parameters:
    ///   - token: Where to go on from.
    ///   - entities: Only changes of objects of these entities, subentities included; all
    ///     when nil.
    /// - Returns: The transactions, oldest first.
    /// - Throws: ``ObjectLogError/Code/historyExpired``, ``ObjectLogError/Code/unsupported``
    ///   as a context's read does; ``ObjectLogError/Code/entityNotInModel`` for a name the
    ///   stored schema lacks.
    public func history(
        after token: HistoryToken? = nil,
        entities: [String]? = nil
    ) throws(ObjectLogError) -> [HistoryTransaction] {
        let byName = Dictionary(
            schema.entities.map { ($0.name, $0) },
            uniquingKeysWith: { first, _ in first }
        )
        var tags: Set<EntityTag>?
        if let entities {
            var found = Set<EntityTag>()
            for name in entities {
                guard byName[name] != nil else {
                    throw ObjectLogError(
                        .entityNotInModel,
                        "'\(name)' is not an entity of the store's model"
                    )
                }
                for entity in schema.entities {
                    var current: ModelSchema.Entity? = entity
                    while let candidate = current, candidate.name != name {
                        current = candidate.superentity.flatMap { byName[$0] }
                    }
                    if current != nil { found.insert(entity.tag) }
                }
            }
            tags = found
        }
        let (schema, versions) = (self.schema, self.history.versions)
        return try HistoryReading.transactions(of: store, after: token, tags: tags, from: nil) {
            tag,
            hash in
            let version = hash.flatMap { hash in versions.first { $0.hash == hash }?.schema }
            return (version ?? schema).entity(tag: tag).map { ($0.name, $0) }
        }
    }
}
