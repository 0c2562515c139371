import Foundation
import ObjectLogStore

extension PersistentContainer {
    /// Opens (or creates) the store at `path` with the last version of `plan`, first running
    /// the plan's stages from the version the store is at.
    ///
    /// The stages run on a copy of the store (`PATH-migrating`, its blobs hard-linked), each
    /// with ordinary commits (a first rewriting stage writes the copy as a compaction of the
    /// store, which it only reads); when all have succeeded, the copy is renamed over the store, the
    /// one step that switches versions. An error thrown by a stage, a failed check or a crash
    /// anywhere before that rename leaves the store untouched, at its old version; the copy is
    /// removed (a crash's leftover copy by the next open with a plan).
    ///
    /// A store the plan's last version can open directly (no stage to run, or lightweight
    /// stages only that the plain open infers) is opened without a copy.
    /// - Throws: ``ObjectLogError/Code/invalidArgument`` for a plan whose versions or stages do
    ///   not chain; ``ObjectLogError/Code/modelMismatch`` for a store at no version of the plan
    ///   that cannot be migrated automatically (a newer version's store, a change that cannot
    ///   be inferred, an undeclared removal, or any change when `migratesStoreAutomatically` is
    ///   `false`), or when a stage fails (what it threw is kept as
    ///   ``ObjectLogError/underlyingError``, and an ``ObjectLogError`` in
    ///   ``ObjectLogError/errors`` too); ``ObjectLogError/Code/uniqueness`` when the objects
    ///   break a uniqueness constraint of the last version;
    ///   ``ObjectLogError/Code/store`` for a store that cannot be opened.
    ///
    /// - Parameters:
    ///   - path: The store file.
    ///   - plan: The model's versions and the stages between them.
    ///   - options: Store options.
    ///   - migratesStoreAutomatically: Whether a store at no version of the plan is migrated
    ///     as a plain open would migrate it; when `false` it is refused, so that the store
    ///     changes only through the plan's stages.
    ///   - progress: Called before each stage and once at the end, on the calling thread, when
    ///     there are stages to run.
    ///
    /// A plan's stages declare their changes: a stage that drops an entity or a property needs
    /// no declared removal, and a stage may return to an earlier model.
    public convenience init(
        path: String,
        plan: MigrationPlan,
        options: StoreOptions = StoreOptions(),
        migratesStoreAutomatically: Bool = true,
        progress: ((MigrationProgress) -> Void)? = nil
    ) throws(ObjectLogError) {
        guard let last = plan.versions.last else {
            throw ObjectLogError(.invalidArgument, "the migration plan has no model versions")
        }
        let planned = try StagedMigration(
            plan: plan,
            path: path,
            options: options,
            progress: progress
        ).run()
        try self.init(
            path: path,
            model: try ManagedObjectModel(last.entities),
            options: options,
            authority: planned
                ? .planned(acceptingUninferred: false)
                : migratesStoreAutomatically ? .automatic : .manual
        )
    }
}

/// One run of a ``MigrationPlan`` over one store (see
/// ``PersistentContainer/init(path:plan:options:migratesStoreAutomatically:progress:)``).
struct StagedMigration {
    let plan: MigrationPlan
    let path: String
    let options: StoreOptions
    let progress: ((MigrationProgress) -> Void)?
    var fileSystem: any FileSystem { options.fileSystem }
    var copyPath: String { path + "-migrating" }

    /// Runs the stages from the store's version; returns whether the store was at a version
    /// of the plan (so what the open after it migrates, the plan declares).
    func run() throws(ObjectLogError) -> Bool {
        try plan.check()
        removeCopy()
        guard fileSystem.kind(of: path) == .regular else { return false }
        let stages: [MigrationStage]?
        do {
            // The store's writer lock, held until the copy has replaced the store: no save can
            // land in the original meanwhile and be lost.
            let lock = try fileSystem.open(
                path + LogFormat.lockSuffix,
                mode: .create(permissions: options.fileMode)
            )
            defer { lock.close() }
            try lock.lockExclusive()
            let store = try openReadOnly(path)
            defer { try? store.close() }
            stages = try plan.pendingStages(of: store, name: path)
            guard let stages, stages.contains(where: \.isCustom) || stages.count > 1 else {
                return stages != nil
            }
            guard !options.readOnly else {
                throw ObjectLogError(
                    .invalidArgument,
                    "the store '\(path)' needs migration stages, which a read-only open cannot run"
                )
            }
            do {
                // The store itself until the first stage has made the copy: a rewriting stage
                // writes its copy straight from it, the others copy it first.
                var original: LogStore? = store
                for (index, stage) in stages.enumerated() {
                    progress?(
                        MigrationProgress(
                            completedStages: index,
                            stageCount: stages.count,
                            nextStage: "\(stage.source) -> \(stage.destination)"
                        )
                    )
                    try apply(stage, original: original) { fraction in
                        progress?(
                            MigrationProgress(
                                completedStages: index,
                                stageCount: stages.count,
                                nextStage: "\(stage.source) -> \(stage.destination)",
                                stageFraction: fraction
                            )
                        )
                    }
                    if let done = original {
                        try done.close()
                        original = nil
                    }
                }
                try install()
                progress?(
                    MigrationProgress(
                        completedStages: stages.count,
                        stageCount: stages.count,
                        nextStage: nil
                    )
                )
            } catch {
                removeCopy()
                throw error
            }
        } catch let error as ObjectLogError {
            throw error
        } catch {
            throw ObjectLogError.store(error, "cannot migrate the store '\(path)'")
        }
        return true
    }

    /// Opens the store file at `path` read-only, through the store's file system.
    func openReadOnly(_ path: String) throws -> LogStore {
        var options = StoreOptions()
        options.readOnly = true
        options.createIfMissing = false
        options.fileSystem = fileSystem
        // A copy written from it takes the mode the caller asked for.
        options.fileMode = self.options.fileMode
        return try LogStore.open(path: path, options: options)
    }

    /// Copies the store file and hard-links its blobs beside the copy.
    ///
    /// The copy's data is not synced here: every stage's first commit syncs it (a rewriting
    /// stage replaces it with a synced file of its own), and ``install()`` syncs it again
    /// before it replaces the store, so a sync here would be paid twice.
    private func makeCopy() throws {
        try copyFile(path, to: copyPath, syncing: false)
        // The index describes the copy as well as the store (same bytes): with it, the stages'
        // opens do not replay the log.
        if fileSystem.kind(of: path + LogFormat.indexSuffix) == .regular {
            try copyFile(path + LogFormat.indexSuffix, to: copyPath + LogFormat.indexSuffix)
        }
        try linkBlobs()
    }

    /// Hard-links (or copies) the store's blobs into the copy's blob directory.
    func linkBlobs() throws {
        let blobs = path + LogFormat.blobsSuffix
        guard fileSystem.kind(of: blobs) == .directory else { return }
        let copyBlobs = copyPath + LogFormat.blobsSuffix
        try fileSystem.makeDirectory(copyBlobs, permissions: 0o700)
        for name in try fileSystem.contents(ofDirectory: blobs) {
            // Blobs never change once written: on disk, a link is as good as a copy.
            if fileSystem is PosixFileSystem,
                (try? FileManager.default.linkItem(
                    atPath: blobs + "/" + name,
                    toPath: copyBlobs + "/" + name
                )) != nil
            {
                continue
            }
            try copyFile(blobs + "/" + name, to: copyBlobs + "/" + name)
        }
        try fileSystem.syncDirectory(copyBlobs)
    }

    /// Copies one file through the store's file system, synced unless told otherwise.
    private func copyFile(_ source: String, to target: String, syncing: Bool = true) throws {
        let input = try fileSystem.open(source, mode: .read)
        defer { input.close() }
        try LogStore.copyFile(input, to: target, options: options, syncing: syncing)
    }

    /// Runs one stage on the copy, reporting the share of it done to `progress` where it can.
    ///
    /// - Parameters:
    ///   - stage: The stage.
    ///   - original: The store, open read-only, while there is no copy yet (the first stage):
    ///     a rewriting stage writes the copy from it, another stage copies it first.
    ///   - progress: Called with the share of the stage done, where the stage reports it.
    /// - Throws: What the stage throws, or what reading or writing the files throws.
    private func apply(
        _ stage: MigrationStage,
        original: LogStore?,
        progress: (Double) -> Void
    ) throws {
        guard let version = plan.versions.first(where: { $0.identifier == stage.destination })
        else { return }
        let model = try ManagedObjectModel(version.entities)
        var options = self.options
        options.createIfMissing = false
        if case .rewrite(let from, let to, let entities) = stage {
            try rewrite(
                model: model,
                entities: entities,
                stage: "\(from) -> \(to)",
                from: original,
                progress: progress
            )
            return
        }
        if original != nil { try makeCopy() }
        switch stage {
        case .rewrite:
            break  // Above.
        case .lightweight:
            try PersistentContainer(
                path: copyPath,
                model: model,
                options: options,
                authority: .planned(acceptingUninferred: false)
            ).close()
        case .custom(let from, let to, let migrate):
            // The old objects, as the old version stored them.
            var readOnly = options
            readOnly.readOnly = true
            let inspector = try StoreInspector(
                store: try LogStore.open(path: copyPath, options: readOnly)
            )
            var old: [String: [GenericObject]] = [:]
            var tags: [String: EntityTag] = [:]
            for entity in inspector.schema.entities {
                old[entity.name] = try inspector.objects(entity: entity.name).sorted {
                    $0.key < $1.key
                }
                tags[entity.name] = entity.tag
            }
            try inspector.close()
            let coordinator = try PersistentStoreCoordinator(
                model: model,
                path: copyPath,
                options: options,
                authority: .planned(acceptingUninferred: true)
            )
            let container = PersistentContainer(coordinator: coordinator)
            do {
                let context = container.newContext()
                do {
                    try migrate(MigrationStageContext(context: context, old: old, tags: tags))
                } catch {
                    throw ObjectLogError(
                        .modelMismatch,
                        "the migration stage \(from) -> \(to) failed: \(error); the store '\(path)' "
                            + "is unchanged",
                        errors: (error as? ObjectLogError).map { [$0] } ?? [],
                        underlyingError: error
                    )
                }
                try context.save()
                // Every constraint of the new version, now that the stage has run.
                let constraints = Dictionary(
                    uniqueKeysWithValues: container.coordinator.model.entities.map { entity in
                        (entity.tag, entity.schema.uniquenessConstraints)
                    }
                )
                try PersistentStoreCoordinator.checkNewConstraints(
                    constraints.filter { !$0.value.isEmpty },
                    model: container.coordinator.model,
                    store: coordinator.store,
                    path: path
                )
                try container.close()
            } catch {
                try? container.close()
                throw error
            }
        }
    }

    /// Moves the copy's new blobs beside the store, then renames the copy over it.
    private func install() throws {
        let copyBlobs = copyPath + LogFormat.blobsSuffix
        let blobs = path + LogFormat.blobsSuffix
        if fileSystem.kind(of: copyBlobs) == .directory {
            if fileSystem.kind(of: blobs) != .directory {
                try fileSystem.makeDirectory(blobs, permissions: 0o700)
            }
            let existing = Set(try fileSystem.contents(ofDirectory: blobs))
            for name in try fileSystem.contents(ofDirectory: copyBlobs)
            where !existing.contains(name) {
                try fileSystem.rename(copyBlobs + "/" + name, to: blobs + "/" + name)
            }
            try fileSystem.syncDirectory(blobs)
        }
        // The copy's data must be on disk before its name replaces the store's. Every stage
        // commits to the copy (at least the new model version), which syncs it, so this finds
        // nothing left to write; it keeps the switch safe without counting on that.
        let copy = try fileSystem.open(copyPath, mode: .readWrite)
        do {
            try copy.sync()
            copy.close()
        } catch {
            copy.close()
            throw error
        }
        // The step that switches versions.
        try fileSystem.rename(copyPath, to: path)
        // The copy's index describes the new file; the old one would still be a valid index of
        // the prefix the copy started from, so a crash between the renames costs a longer open.
        if fileSystem.kind(of: copyPath + LogFormat.indexSuffix) == .regular {
            try fileSystem.rename(
                copyPath + LogFormat.indexSuffix,
                to: path + LogFormat.indexSuffix
            )
        }
        try fileSystem.syncDirectory(directoryOf(path))
        removeCopy()
    }

    /// Removes the copy and everything beside it (a crash's leftovers too).
    func removeCopy() {
        for suffix in [
            "", LogFormat.lockSuffix, LogFormat.indexSuffix, LogFormat.creationSuffix,
            LogFormat.indexSuffix + LogFormat.creationSuffix, LogFormat.compactionSuffix,
            LogFormat.compactionSuffix + LogFormat.indexSuffix,
            LogFormat.compactionSuffix + LogFormat.indexSuffix + LogFormat.creationSuffix,
        ] {
            try? fileSystem.remove(copyPath + suffix)
        }
        let copyBlobs = copyPath + LogFormat.blobsSuffix
        for name in (try? fileSystem.contents(ofDirectory: copyBlobs)) ?? [] {
            try? fileSystem.remove(copyBlobs + "/" + name)
        }
        if fileSystem is PosixFileSystem { try? FileManager.default.removeItem(atPath: copyBlobs) }
    }
}

extension MigrationStage {
    /// Whether the stage does more than the plain open infers.
    package var isCustom: Bool {
        if case .lightweight = self { return false }
        return true
    }
}

extension MigrationPlan {
    /// Refuses a plan that names a version twice, or has a stage that does not go from a
    /// version of the plan to a later one.
    /// - Throws: ``ObjectLogError/Code/invalidArgument``.
    package func check() throws(ObjectLogError) {
        let names = versions.map(\.identifier)
        guard Set(names).count == names.count else {
            throw ObjectLogError(.invalidArgument, "the migration plan names a version twice")
        }
        for stage in stages {
            guard let from = names.firstIndex(of: stage.source),
                let to = names.firstIndex(of: stage.destination), to > from
            else {
                throw ObjectLogError(
                    .invalidArgument,
                    "the migration stage \(stage.source) -> \(stage.destination) does not go from "
                        + "a version of the plan to a later one"
                )
            }
        }
    }

    /// The stages from the version `store` (which messages call `name`) is at to the plan's
    /// last; nil for a store at no version of the plan, or one that records no model.
    /// - Throws: ``ObjectLogError/Code/invalidArgument`` when the plan has no stage from the
    ///   store's version; what reading the store's model versions throws.
    package func pendingStages(
        of store: any PersistentStore,
        name: String
    ) throws(ObjectLogError) -> [MigrationStage]? {
        guard let history = try ModelHistory.read(from: store), let stored = history.current
        else { return nil }
        var current: String?
        for version in versions.reversed() {
            let model = try ManagedObjectModel(version.entities)
            let tags = SchemaMapping.tags(
                for: model.entities.map { ($0.name, $0.schema.originalName) },
                continuing: stored.schema,
                earlier: history.versions.dropLast().reversed().map(\.schema),
                used: history.usedTags
            )
            if try model.retagged(tags).versionHash == stored.hash {
                current = version.identifier
                break
            }
        }
        // A store at no version of the plan: the plain open infers what it can, or says why not.
        guard var current else { return nil }
        var pending: [MigrationStage] = []
        while current != versions.last?.identifier {
            guard let stage = stages.first(where: { $0.source == current }) else {
                throw ObjectLogError(
                    .invalidArgument,
                    "the migration plan has no stage from version \(current), the version of "
                        + "the store '\(name)'"
                )
            }
            pending.append(stage)
            current = stage.destination
        }
        return pending
    }
}

extension PersistentContainer {
    /// Runs the stages of `plan` from the version of the store file at `path` (a copy of a
    /// store of another kind), as ``init(path:plan:options:migratesStoreAutomatically:progress:)``
    /// runs them before it opens; returns whether the store was at a version of the plan.
    ///
    /// The file ends at the plan's last version, or is left as it was when a stage fails.
    package static func runStages(
        of plan: MigrationPlan,
        onStoreFileAt path: String,
        progress: ((MigrationProgress) -> Void)?
    ) throws(ObjectLogError) -> Bool {
        try StagedMigration(plan: plan, path: path, options: StoreOptions(), progress: progress)
            .run()
    }

    /// A container of a store of any kind, opened by the caller, for the last version of a
    /// plan whose stages have run (`planned`: the store was at a version of the plan, so what
    /// the open migrates, the plan declares), or that migrates as a plain open does.
    package convenience init(
        store: any PersistentStore,
        model: ManagedObjectModel,
        planned: Bool,
        migratesStoreAutomatically: Bool
    ) throws(ObjectLogError) {
        try self.init(
            coordinator: PersistentStoreCoordinator(
                model: model,
                store: store,
                named: store.displayName,
                authority: planned
                    ? .planned(acceptingUninferred: false)
                    : migratesStoreAutomatically ? .automatic : .manual,
                substitutes: []
            ),
            automaticallyMergesChangesIntoMainContext: true
        )
    }
}
