import Foundation
import ObjectLogStore

extension PersistentStoreCoordinator {
    /// Makes `store` ready for `model`: records the model in a new store, or migrates a store
    /// that another version of the model wrote; returns the model with the store's entity tags.
    ///
    /// Nothing is written unless every change can be inferred and every new uniqueness
    /// constraint holds; the migration is then one transaction, so a crash leaves the store at
    /// its old version or at the new one, never between.
    static func prepare(
        _ store: LogStore,
        for model: ManagedObjectModel,
        path: String,
        readOnly: Bool,
        acceptingUninferred: Bool = false
    ) throws(ObjectLogError) -> ManagedObjectModel {
        guard let history = try ModelHistory.read(from: store) else {
            // A store without a model that already holds objects was written by another program
            // (or directly through ObjectLogStore): adopting it would record this model over
            // objects it cannot decode. Refuse, and write nothing.
            let foreignObjects = store.liveCount(entity: nil)
            guard foreignObjects == 0 else {
                throw ObjectLogError(
                    .modelMismatch,
                    "the store '\(path)' holds \(foreignObjects) object(s) but no ObjectLog model: "
                        + "it was not written by ObjectLog's engine"
                )
            }
            guard !readOnly else { return model }
            try record(model.schema, history: .empty, in: store, path: path)
            return model
        }
        guard let stored = history.current else { return model }
        let tags = SchemaMapping.tags(
            for: model.entities.map { ($0.name, $0.schema.originalName) },
            continuing: stored.schema,
            earlier: history.versions.dropLast().reversed().map(\.schema),
            used: history.usedTags
        )
        let model = try model.retagged(tags)
        if stored.hash == model.versionHash {
            let current =
                history.isLegacy && !readOnly
                ? try record(model.schema, history: history, in: store, path: path)
                : history
            store.installPayloadUpgrade(current.upgrade(store: store))
            return model
        }
        if let earlier = history.versions.lastIndex(where: { $0.hash == model.versionHash }) {
            throw ObjectLogError(
                .modelMismatch,
                "the store '\(path)' was written by a newer version of its model (\(stored.hash), "
                    + "since transaction \(stored.transaction)) than this one "
                    + "(\(model.versionHash), version \(earlier + 1) of \(history.versions.count)): "
                    + "open it with the newer app; this one neither reads nor writes it"
            )
        }
        let mapping = SchemaMapping(from: stored.schema, to: model.schema)
        guard mapping.problems.isEmpty || acceptingUninferred else {
            throw ObjectLogError(
                .modelMismatch,
                "cannot migrate the store '\(path)' from model \(stored.hash) to "
                    + "\(model.versionHash): " + mapping.problems.joined(separator: "; "),
                errors: mapping.problems.map { ObjectLogError(.modelMismatch, $0) }
            )
        }
        let (end, generation) = store.endAndGeneration
        // Reads from here on see every record in the new layout, the checks below included.
        let trial = history.appendingUnrecorded(model.schema, generation: generation, end: end)
        store.installPayloadUpgrade(trial.upgrade(store: store, pendingBoundary: end))
        // A custom stage may make the objects meet a new constraint: it is checked after it.
        if !acceptingUninferred {
            try checkNewConstraints(mapping.newConstraints, model: model, store: store, path: path)
        }
        guard !readOnly else { return model }
        do {
            let recorded = try record(
                model.schema,
                history: history,
                in: store,
                path: path,
                deleting: mapping.removedTags
            )
            store.installPayloadUpgrade(recorded.upgrade(store: store))
        } catch {
            store.installPayloadUpgrade(history.upgrade(store: store))
            throw error
        }
        return model
    }

    /// Commits `schema` as the store's newest model version, with deletes of every object of
    /// the entities in `deleting` (entities the new version removed).
    @discardableResult
    private static func record(
        _ schema: ModelSchema,
        history: ModelHistory,
        in store: LogStore,
        path: String,
        deleting removed: [EntityTag] = []
    ) throws(ObjectLogError) -> ModelHistory {
        var transaction = Transaction()
        for tag in removed {
            for key in store.liveKeys(entity: tag) { transaction.delete(key: key, entity: tag) }
        }
        let recorded = history.recording(
            schema,
            in: store,
            metadata: store.metadata,
            into: &transaction
        )
        do {
            _ = try store.commit(transaction)
        } catch {
            throw ObjectLogError.store(error, "cannot record the model in '\(path)'")
        }
        return recorded
    }

    /// Checks that the saved objects meet the uniqueness constraints a new model version adds.
    static func checkNewConstraints(
        _ constraints: [EntityTag: [[String]]],
        model: ManagedObjectModel,
        store: LogStore,
        path: String
    ) throws(ObjectLogError) {
        for (tag, groups) in constraints.sorted(by: { $0.key < $1.key }) {
            guard let entity = model.entity(tag: tag) else { continue }
            let members = groups.map { group in
                group.compactMap { name in entity.accessors.firstIndex { $0.name == name } }
            }.filter { !$0.isEmpty }
            var seen = Array(repeating: [[UInt8]: ObjectKey](), count: members.count)
            var violation: ObjectLogError?
            let scratch = entity.objectType.init()
            do {
                try store.forEachLiveObject(entity: tag) { key, _, buffer in
                    guard violation == nil else { return }
                    var reader = PayloadReader(buffer)
                    try ObjectDecoder.decode(&reader, into: scratch, entity: entity, source: nil)
                    for (index, group) in members.enumerated() {
                        let value = ObjectEncoder.uniqueValue(
                            of: scratch,
                            group: group,
                            entity: entity
                        )
                        if let other = seen[index][value] {
                            let names = group.map { "'\(entity.accessors[$0].name)'" }
                            violation = ObjectLogError(
                                .uniqueness,
                                "cannot migrate the store '\(path)': the new uniqueness constraint "
                                    + "of '\(entity.name)' on \(names.joined(separator: ", ")) "
                                    + "does not hold: \(entity.name)#\(other) and "
                                    + "\(entity.name)#\(key) both have "
                                    + describeUniqueValue(value, members: group, entity: entity),
                                objectID: ObjectID(entityName: entity.name, key: key),
                                property: group.map { entity.accessors[$0].name }.joined(
                                    separator: ","
                                )
                            )
                            return
                        }
                        seen[index][value] = key
                    }
                }
            } catch {
                throw ObjectLogError.store(error, "cannot check the objects of '\(entity.name)'")
            }
            if let violation { throw violation }
        }
    }
}
