import Foundation
import ObjectLogStore

extension PersistentStoreCoordinator {
    /// Makes `store` ready for `model`: records the model in a new store, or migrates a store
    /// that another version of the model wrote; returns the model with the store's entity tags.
    ///
    /// `substitutes` stand in for a schema record a salvage lost
    /// (``ModelHistory/read(from:substitutes:)``).
    ///
    /// Nothing is written unless every change can be inferred and every new uniqueness
    /// constraint holds; the migration is then one transaction, so a crash leaves the store at
    /// its old version or at the new one, never between.
    static func prepare(
        _ store: any PersistentStore,
        for model: ManagedObjectModel,
        path: String,
        readOnly: Bool,
        authority: MigrationAuthority = .automatic,
        substitutes: [ModelSchema] = []
    ) throws(ObjectLogError) -> ManagedObjectModel {
        let history = try ModelHistory.read(from: store, substitutes: substitutes)
        let decision = try MigrationDecision(
            history: history,
            schema: model.schema,
            removals: model.declaredRemovals,
            authority: authority,
            count: { tag throws(ObjectLogError) in
                try readingStore { try store.liveCount(entity: tag) }
            }
        )
        let preview = decision.preview
        switch preview.outcome {
        case .refused:
            throw decision.refusal(path: path)
        case .createsStore:
            guard history == nil, !readOnly else { return model }
            store.installReading(
                of: try record(model.schema, history: .empty, in: store, path: path),
                pendingBoundary: nil
            )
            return model
        case .opensUnchanged:
            let model = try model.retagged(decision.tags)
            guard let history else { return model }
            let current =
                history.isLegacy && !readOnly
                ? try record(model.schema, history: history, in: store, path: path)
                : history
            store.installReading(of: current, pendingBoundary: nil)
            return model
        case .migrates:
            break
        }
        guard let history, let stored = history.current, let mapping = decision.mapping else {
            return model
        }
        let model = try model.retagged(decision.tags)
        guard store.capabilities.contains(.migration) else {
            return try migrateTables(
                of: store,
                from: history,
                to: model,
                mapping,
                authority,
                path,
                readOnly
            )
        }
        try installTrial(of: model, history: history, in: store)
        // A custom stage may make the objects meet a new constraint: it is checked after it.
        if authority != .planned(acceptingUninferred: true) {
            do {
                try checkStoredObjects(for: model, mapping: mapping, from: stored, store, path)
            } catch {
                store.installReading(of: history, pendingBoundary: nil)
                throw error
            }
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
            store.installReading(of: recorded, pendingBoundary: nil)
        } catch {
            store.installReading(of: history, pendingBoundary: nil)
            throw error
        }
        return model
    }

    /// Migrates a store that keeps values in columns of its own (a database's tables).
    ///
    /// It checks what a file's migration checks, on the objects as the new version reads
    /// them, then has the store change its tables and record the new version in one
    /// transaction. A read-only open is refused, and so is a migration the store cannot make,
    /// before anything is written.
    private static func migrateTables(
        of store: any PersistentStore,
        from history: ModelHistory,
        to model: ManagedObjectModel,
        _ mapping: SchemaMapping,
        _ authority: MigrationAuthority,
        _ path: String,
        _ readOnly: Bool
    ) throws(ObjectLogError) -> ManagedObjectModel {
        guard let stored = history.current?.schema else { return model }
        func refusal(_ reason: String) -> ObjectLogError {
            ObjectLogError(
                .unsupported,
                "cannot migrate '\(path)' from model version \(stored.versionHash) to "
                    + "\(model.schema.versionHash): \(reason); nothing was written"
            )
        }
        // Its tables hold one version's rows: a read-only open has no way to read them as
        // another.
        guard !readOnly else { throw refusal("a read-only open of this store cannot migrate it") }
        // A custom stage may make the objects meet a new constraint: it is checked after it.
        if authority != .planned(acceptingUninferred: true) {
            try checkNewConstraints(
                mapping.newConstraints,
                model: model,
                reading: translatedObjects(of: store, mapping),
                path: path
            )
            try checkNewlyAbstract(model: model, from: stored, store: store, path: path)
        }
        var recorded: ModelHistory?
        let migrated: Bool
        do {
            migrated = try store.migrateTables(
                TableMigration(stored: stored, schema: model.schema, mapping: mapping)
            ) {
                // The removed entities' objects are deleted by the store, with its tables.
                let (transaction, history) = try recording(
                    model.schema,
                    history: history,
                    in: store,
                    deleting: []
                )
                recorded = history
                return transaction
            }
        } catch {
            throw ObjectLogError.store(error, "cannot migrate '\(path)'; nothing was written")
        }
        guard migrated, let recorded else {
            throw refusal("this kind of store does not migrate")
        }
        store.installReading(of: recorded, pendingBoundary: nil)
        return model
    }

    /// Reads the stored objects of an entity tag in the layout of `mapping`'s new version,
    /// translated as the log store translates a record an older version wrote: for the
    /// checks of a store that does not translate as it reads.
    static func translatedObjects(
        of store: any PersistentStore,
        _ mapping: SchemaMapping
    ) -> ObjectReader {
        { tag, body in
            guard let transcoder = mapping.transcoder(forOldTag: tag) else { return }
            try store.forEachLiveObject(entity: tag) { key, _, value in
                let translated = try transcoder.transcode(value) { try store.readBlob($0) }
                try translated.withUnsafeBytes { try body(key, $0) }
            }
        }
    }

    /// Commits `schema` as the store's newest model version, with deletes of every object of
    /// the entities in `deleting` (entities the new version removed).
    @discardableResult
    private static func record(
        _ schema: ModelSchema,
        history: ModelHistory,
        in store: any PersistentStore,
        path: String,
        deleting removed: [EntityTag] = []
    ) throws(ObjectLogError) -> ModelHistory {
        let (transaction, recorded) = try recording(
            schema,
            history: history,
            in: store,
            deleting: removed
        )
        do {
            _ = try store.commitSave(transaction, checking: [])
            store.finishCommit()
        } catch {
            throw ObjectLogError.store(error, "cannot record the model in '\(path)'")
        }
        return recorded
    }

    /// The transaction that records `schema` as the store's newest model version, with deletes
    /// of every object of the entities in `deleting`, and the history it makes: committed by a
    /// migrating open, folded into its copy by a rewriting migration stage.
    static func recording(
        _ schema: ModelSchema,
        history: ModelHistory,
        in store: any PersistentStore,
        deleting removed: [EntityTag]
    ) throws(ObjectLogError) -> (Transaction, ModelHistory) {
        var transaction = Transaction()
        for tag in removed {
            for key in try readingStore({ try store.liveKeys(entity: tag) }) {
                transaction.delete(key: key, entity: tag)
            }
        }
        let recorded = try history.recording(
            schema,
            in: store,
            metadata: try readingStore { try store.metadata },
            into: &transaction
        )
        return (transaction, recorded)
    }

    /// Has `store` read every record as `model` will, before the version is recorded: the
    /// checks of a migration, and a read-only open, see the objects in the new layout.
    static func installTrial(
        of model: ManagedObjectModel,
        history: ModelHistory,
        in store: any PersistentStore
    ) throws(ObjectLogError) {
        let (end, generation) = try readingStore { try store.endAndGeneration }
        store.installReading(
            of: history.appendingUnrecorded(model.schema, generation: generation, end: end),
            pendingBoundary: end
        )
    }

    /// Checks what a migration from `stored` to `model` asks of the stored objects, read in the
    /// new layout (``installTrial(of:history:in:)``): the uniqueness constraints it adds hold,
    /// and no entity it makes abstract has objects.
    static func checkStoredObjects(
        for model: ManagedObjectModel,
        mapping: SchemaMapping,
        from stored: ModelHistory.Version,
        _ store: any PersistentStore,
        _ path: String
    ) throws(ObjectLogError) {
        try checkNewConstraints(mapping.newConstraints, model: model, store: store, path: path)
        try checkNewlyAbstract(model: model, from: stored.schema, store: store, path: path)
    }

    /// Refuses a version that makes an entity abstract while the store holds objects of it:
    /// they would belong to no entity a fetch or a save could reach.
    static func checkNewlyAbstract(
        model: ManagedObjectModel,
        from old: ModelSchema,
        store: any PersistentStore,
        path: String
    ) throws(ObjectLogError) {
        for entity in model.entities where entity.isAbstract {
            guard let previous = old.entity(tag: entity.tag), !previous.isAbstract else { continue }
            let count = try readingStore { try store.liveCount(entity: entity.tag) }
            guard count > 0 else { continue }
            throw ObjectLogError(
                .modelMismatch,
                "cannot migrate the store '\(path)': entity '\(entity.name)' became abstract but "
                    + "the store holds \(count) object(s) of it; keep it concrete, or move them to "
                    + "a subentity in a custom migration stage"
            )
        }
    }

    /// Checks that the saved objects meet the uniqueness constraints a new model version adds.
    ///
    /// A constraint of a superentity is checked once, across the objects of every entity of its
    /// hierarchy.
    static func checkNewConstraints(
        _ constraints: [EntityTag: [[String]]],
        model: ManagedObjectModel,
        store: any PersistentStore,
        path: String
    ) throws(ObjectLogError) {
        try checkNewConstraints(
            constraints,
            model: model,
            reading: { tag, body in
                try store.forEachLiveObject(entity: tag) { key, _, value in try body(key, value) }
            },
            path: path
        )
    }

    /// Calls its body with each stored object of an entity tag (its key and value, in the
    /// model's layout).
    typealias ObjectReader = (
        EntityTag, (ObjectKey, UnsafeRawBufferPointer) throws -> Void
    ) throws -> Void

    /// ``checkNewConstraints(_:model:store:path:)`` of the objects `reading` reads.
    static func checkNewConstraints(
        _ constraints: [EntityTag: [[String]]],
        model: ManagedObjectModel,
        reading: ObjectReader,
        path: String
    ) throws(ObjectLogError) {
        // Each constraint once, by the entity whose objects it spans.
        var checks: [(owner: EntityDescription, members: [Int])] = []
        for (tag, groups) in constraints.sorted(by: { $0.key < $1.key }) {
            guard let entity = model.entity(tag: tag) else { continue }
            for group in groups {
                let members = group.compactMap { name in
                    entity.accessors.firstIndex { $0.name == name }
                }
                guard !members.isEmpty else { continue }
                let scope =
                    entity.uniquenessConstraints.firstIndex(of: members).map {
                        entity.uniquenessScopes[$0]
                    } ?? entity.tag
                guard let owner = model.entity(tag: scope) else { continue }
                if !checks.contains(where: { $0.owner === owner && $0.members == members }) {
                    checks.append((owner, members))
                }
            }
        }
        for (owner, group) in checks {
            var seen: [[UInt8]: ObjectID] = [:]
            var violation: ObjectLogError?
            let names = group.map { "'\(owner.accessors[$0].name)'" }
            for entity in owner.concreteEntities {
                let scratch = entity.objectType.init()
                do {
                    try reading(entity.tag) { key, buffer in
                        guard violation == nil else { return }
                        var reader = PayloadReader(buffer)
                        try ObjectDecoder.decode(
                            &reader,
                            into: scratch,
                            entity: entity,
                            source: nil
                        )
                        let value = ObjectEncoder.uniqueValue(
                            of: scratch,
                            group: group,
                            entity: entity
                        )
                        let id = ObjectID(entityName: entity.name, key: key)
                        if let other = seen[value] {
                            violation = ObjectLogError(
                                .uniqueness,
                                "cannot migrate the store '\(path)': the new uniqueness constraint "
                                    + "of '\(owner.name)' on \(names.joined(separator: ", ")) "
                                    + "does not hold: \(other) and \(id) both have "
                                    + describeUniqueValue(value, members: group, entity: entity),
                                objectID: id,
                                property: group.map { entity.accessors[$0].name }.joined(
                                    separator: ","
                                )
                            )
                            return
                        }
                        seen[value] = id
                    }
                } catch {
                    throw ObjectLogError.store(
                        error,
                        "cannot check the objects of '\(entity.name)'"
                    )
                }
                if let violation { throw violation }
            }
        }
    }
}

extension PersistentStoreCoordinator {
    /// What opening the store at `path` with `model` under `authority` would do, found on a
    /// read-only open that writes nothing: the decision of ``prepare(_:for:path:readOnly:authority:)``
    /// with the checks of new uniqueness constraints and abstract entities that it makes.
    static func migrationPreview(
        at path: String,
        model: ManagedObjectModel,
        authority: MigrationAuthority,
        options: StoreOptions
    ) throws(ObjectLogError) -> MigrationPreview {
        try migrationPreview(
            at: path,
            schema: model.schema,
            removals: model.declaredRemovals,
            authority: authority,
            options: options
        ) { store, history, decision, preview throws(ObjectLogError) in
            guard let stored = history.current, let mapping = decision.mapping else { return }
            let model = try model.retagged(decision.tags)
            try installTrial(of: model, history: history, in: store)
            do throws(ObjectLogError) {
                try checkStoredObjects(for: model, mapping: mapping, from: stored, store, path)
            } catch {
                preview.outcome = .refused
                preview.refusals.append(error.message)
            }
        }
    }

    /// What opening the store at `path` with a model described by `schema` (whose entity tags
    /// need not be the store's) would do; `check` looks further at a store the open would
    /// migrate, on the read-only store.
    static func migrationPreview(
        at path: String,
        schema: ModelSchema,
        removals: Set<String>,
        authority: MigrationAuthority,
        options: StoreOptions,
        check: (
            LogStore, ModelHistory, MigrationDecision, inout MigrationPreview
        ) throws(ObjectLogError) -> Void = { _, _, _, _ in }
    ) throws(ObjectLogError) -> MigrationPreview {
        var options = options
        options.readOnly = true
        options.createIfMissing = false
        guard options.fileSystem.kind(of: path) == .regular else {
            return MigrationPreview(
                outcome: .createsStore,
                storeVersion: nil,
                modelVersion: schema.versionHash
            )
        }
        let store: LogStore
        do {
            store = try LogStore.open(path: path, options: options)
        } catch {
            throw ObjectLogError.store(error, "cannot open store '\(path)'")
        }
        defer { try? store.close() }
        let history = try ModelHistory.read(from: store)
        let decision = try MigrationDecision(
            history: history,
            schema: schema,
            removals: removals,
            authority: authority,
            count: { store.liveCount(entity: $0) }
        )
        var preview = decision.preview
        if preview.outcome == .migrates, let history {
            try check(store, history, decision, &preview)
        }
        return preview
    }
}

extension PersistentStoreCoordinator {
    /// What opening `store` (open read-only; which messages call `name`) with `model` would
    /// do: the decision of ``prepare(_:for:path:readOnly:authority:substitutes:)`` with its
    /// checks of new uniqueness constraints and abstract entities, made without writing
    /// anything, on a store of any kind.
    package static func migrationPreview(
        of store: any PersistentStore,
        named name: String,
        model: ManagedObjectModel,
        migratesStoreAutomatically: Bool
    ) throws(ObjectLogError) -> MigrationPreview {
        let history = try ModelHistory.read(from: store)
        let decision = try MigrationDecision(
            history: history,
            schema: model.schema,
            removals: model.declaredRemovals,
            authority: migratesStoreAutomatically ? .automatic : .manual,
            count: { tag throws(ObjectLogError) in
                try readingStore { try store.liveCount(entity: tag) }
            }
        )
        var preview = decision.preview
        guard preview.outcome == .migrates, let history, let stored = history.current,
            let mapping = decision.mapping
        else { return preview }
        let model = try model.retagged(decision.tags)
        do throws(ObjectLogError) {
            if store.capabilities.contains(.migration) {
                try installTrial(of: model, history: history, in: store)
                defer { store.installReading(of: history, pendingBoundary: nil) }
                try checkStoredObjects(for: model, mapping: mapping, from: stored, store, name)
            } else {
                try checkNewConstraints(
                    mapping.newConstraints,
                    model: model,
                    reading: translatedObjects(of: store, mapping),
                    path: name
                )
                try checkNewlyAbstract(model: model, from: stored.schema, store: store, path: name)
            }
        } catch {
            preview.outcome = .refused
            preview.refusals.append(error.message)
        }
        return preview
    }
}
