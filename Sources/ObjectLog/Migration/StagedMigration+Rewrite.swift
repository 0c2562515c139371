import Foundation
import ObjectLogStore

extension StagedMigration {
    /// Runs a ``MigrationStage/rewrite(from:to:entities:)`` stage: writes the copy anew, every
    /// object in the new layout, the named entities' objects as their closures make them.
    ///
    /// It is one compaction into another file, with the new model version (what the plain
    /// open would record) folded in: each record is read once, decoded and encoded once, with
    /// no context or managed object in between, and nothing is written to the store it reads.
    ///
    /// - Parameters:
    ///   - model: The stage's new version.
    ///   - entities: The stage's closures, by entity name.
    ///   - stage: The stage's name, for errors.
    ///   - original: The store, open read-only, for the first stage: the copy is written
    ///     straight from it (no copy of the old file is made to be rewritten). Nil for a later
    ///     stage, which rewrites the copy into a new file that then replaces it.
    ///   - progress: Called now and then with the share of the stage done.
    /// - Throws: ``ObjectLogError/Code/modelMismatch`` when a closure fails (its error is the
    ///   `underlyingError`) or the copy cannot be made (the store's error is the `storeError`);
    ///   what opening or preparing the store throws.
    func rewrite(
        model: ManagedObjectModel,
        entities: [String: MigrationStage.ObjectRewrite],
        stage: String,
        from original: LogStore?,
        progress: (Double) -> Void
    ) throws {
        let source = try original ?? openReadOnly(copyPath)
        defer { if original == nil { try? source.close() } }
        let target = original == nil ? copyPath + LogFormat.compactionSuffix : copyPath
        // Reads see every record in the new layout, as for a read-only open, which infers
        // what it can and leaves the rest (the stage's changes) at their defaults.
        let model = try PersistentStoreCoordinator.prepare(
            source,
            for: model,
            path: path,
            readOnly: true,
            authority: .planned(acceptingUninferred: true)
        )
        guard let history = try ModelHistory.read(from: source), let stored = history.current
        else {
            throw ObjectLogError(.corrupt, "the store '\(path)' records no model")
        }
        // What the plain open would commit, folded into the copy.
        let (transaction, recorded) = try PersistentStoreCoordinator.recording(
            model.schema,
            history: history,
            in: source,
            deleting: SchemaMapping(from: stored.schema, to: model.schema).removedTags
        )
        // One rewriter per processor: objects are rewritten a window of records at a time, by
        // all of them at once.
        let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8))
        var rewrites: [LogStore.RecordRewrite] = []
        for _ in 0..<workers {
            let rewriter = try ObjectRewriter(
                history: recorded,
                store: source,
                entities: entities,
                stage: stage
            )
            rewrites.append { key, tag, offset, value, record in
                try rewriter.rewrite(
                    key: key,
                    entity: tag,
                    offset: offset,
                    value: value,
                    into: &record
                )
            }
        }
        do {
            try withoutActuallyEscaping(progress) { progress in
                _ = try source.writeCompactedCopy(
                    to: target,
                    folding: transaction,
                    progress: progress,
                    rewriting: rewrites
                )
            }
        } catch {
            // The cause stays at hand to catch by: a store's error as `storeError` (with its
            // code, path and offset), any other (the closure's own) as `underlyingError`.
            throw ObjectLogError(
                .modelMismatch,
                "the migration stage \(stage) failed: \(error); the store '\(path)' is unchanged",
                errors: (error as? ObjectLogError).map { [$0] } ?? [],
                storeError: error as? StoreError,
                underlyingError: error is StoreError ? nil : error
            )
        }
        if original == nil {
            try source.close()
            try fileSystem.rename(target, to: copyPath)
            try fileSystem.rename(
                target + LogFormat.indexSuffix,
                to: copyPath + LogFormat.indexSuffix
            )
            try fileSystem.syncDirectory(directoryOf(copyPath))
        } else {
            try linkBlobs()
        }
        // Every constraint of the new version, now that the stage has set the values.
        let constraints = Dictionary(
            uniqueKeysWithValues: model.entities.map { entity in
                (entity.tag, entity.schema.uniquenessConstraints)
            }
        ).filter { !$0.value.isEmpty }
        guard !constraints.isEmpty else { return }
        let copy = try openReadOnly(copyPath)
        defer { try? copy.close() }
        try PersistentStoreCoordinator.checkNewConstraints(
            constraints,
            model: model,
            store: copy,
            path: path
        )
    }
}

/// Rewrites the records of a stage's named entities as compaction copies them: each value is
/// brought to the old version's layout, handed to the stage's closure as a ``StoredObject`` with
/// a ``MigratedObject`` that the inferred mapping fills, and encoded.
///
/// Compaction calls each rewriter for one record at a time, from one thread at a time (a stage
/// has one rewriter per worker thread); its record storage and scratch buffers are reused from
/// record to record while no object a stage kept still refers to them.
final class ObjectRewriter: @unchecked Sendable {
    /// The stage's entities, searched in order: a stage names a few, and a record's lookup
    /// then costs less than hashing its tag.
    private let entries: [RewriteEntry]
    private let starts: [(generation: UInt64, offset: UInt64)]
    private let generation: UInt64
    /// The inferred mapping of each version to the next.
    private let steps: [SchemaMapping]
    /// The index of the stage's old version in the history (the new one is the last).
    private let oldVersion: Int
    private let blob: @Sendable (BlobID) throws -> Data
    // Scratch, touched by one record at a time (compaction calls on one thread), so without
    // the run-time exclusivity checks a class's stored properties otherwise get. The change
    // list is taken out while a record's objects hold it, so that it is unique (and reused)
    // for the next; the record is reused only while nothing else refers to it.
    @exclusivity(unchecked) private var reusable: StoredRecord?
    @exclusivity(unchecked) private var writer = PayloadWriter()
    @exclusivity(unchecked) private var changes: [StoredValue?] = []
    /// Which of `changes` the last object's stage set (``MigratedObject/changedBits``).
    @exclusivity(unchecked) private var changedBits: UInt64 = 0

    /// - Throws: ``ObjectLogError/Code/invalidArgument`` for a name that is no entity of the
    ///   old version, or one the new version removed.
    init(
        history: ModelHistory,
        store: LogStore,
        entities: [String: MigrationStage.ObjectRewrite],
        stage: String
    ) throws(ObjectLogError) {
        let versions = history.versions
        guard versions.count >= 2 else {
            throw ObjectLogError(
                .invalidArgument,
                "the migration stage \(stage) changes nothing the store records"
            )
        }
        let old = versions[versions.count - 2].schema
        let new = versions[versions.count - 1].schema
        let steps = zip(versions, versions.dropFirst()).map { old, new in
            SchemaMapping(from: old.schema, to: new.schema)
        }
        let reference = StoreReference(store)
        let blob: @Sendable (BlobID) throws -> Data = { id in
            guard let store = reference.store else {
                throw ObjectLogError(.store, "the store is closed")
            }
            return try store.readBlob(id)
        }
        var entries: [EntityTag: RewriteEntry] = [:]
        for (name, closure) in entities.sorted(by: { $0.key < $1.key }) {
            guard let before = old.entity(named: name) else {
                throw ObjectLogError(
                    .invalidArgument,
                    "the migration stage \(stage) rewrites '\(name)', which is no entity of the "
                        + "old version (its entities: "
                        + old.entities.map(\.name).joined(separator: ", ") + ")"
                )
            }
            guard let after = new.entity(tag: before.tag),
                let transcoder = steps[versions.count - 2].transcoder(forOldTag: before.tag)
            else {
                throw ObjectLogError(
                    .invalidArgument,
                    "the migration stage \(stage) rewrites '\(name)', which the new version "
                        + "removes"
                )
            }
            entries[before.tag] = RewriteEntry(
                tag: before.tag,
                old: before,
                new: after,
                transcoder: transcoder,
                closure: closure,
                blob: blob
            )
        }
        self.entries = entries.values.sorted { $0.tag < $1.tag }
        self.starts = history.starts
        self.generation = store.generation
        self.steps = steps
        self.oldVersion = versions.count - 2
        self.blob = blob
    }

    /// Puts the new value of the record into `rewritten` and returns true, or returns false
    /// for a record of another entity (or one the new version wrote), which compaction copies
    /// as usual.
    func rewrite(
        key: ObjectKey,
        entity tag: EntityTag,
        offset: UInt64,
        value: UnsafeRawBufferPointer,
        into rewritten: inout LogStore.RewrittenRecord
    ) throws -> Bool {
        guard let entry = entries.first(where: { $0.tag == tag }) else { return false }
        let version = ModelHistory.version(writing: offset, generation: generation, starts: starts)
        guard version <= oldVersion else { return false }
        // The value in the old version's layout, in the last record's storage when no object
        // still refers to it (a stage may keep objects), else in a new one.
        // (Each reference counted costs an atomic increment and decrement a record: the layout
        // is set only when it changes, and the steps are looked at only for older records.)
        if !isKnownUniquelyReferenced(&reusable) {
            reusable = StoredRecord(layout: entry.old)
        } else if let record = reusable, record.layout !== entry.old {
            record.layout = entry.old
        }
        guard let record = reusable else { return false }
        record.bytes.replaceSubrange(record.bytes.indices, with: value)
        if version < oldVersion {
            for step in steps[version..<oldVersion] {
                guard let transcoder = step.transcoder(forOldTag: tag) else { return false }
                record.bytes = try record.bytes.withUnsafeBytes {
                    try transcoder.transcode($0, blob: blob)
                }
            }
        }
        try record.bytes.withUnsafeBytes { try findRanges(in: $0, entry, into: &record.ranges) }
        var scratch = changes
        changes = []
        if scratch.count == entry.new.names.count {
            // Only what the last object's stage set is cleared (each clear destroys a value).
            if scratch.count > 64 {
                for index in scratch.indices { scratch[index] = nil }
            } else {
                var set = changedBits
                while set != 0 {
                    scratch[set.trailingZeroBitCount] = nil
                    set &= set &- 1
                }
            }
        } else {
            scratch = Array(repeating: nil, count: entry.new.names.count)
        }
        do {
            let old = StoredObject(key: key, record: record)
            // Consumed, so that the object holds the only reference and sets in place.
            var new = MigratedObject(key: key, entry: entry, old: old, changes: consume scratch)
            try entry.closure(old, &new)
            try encode(new)
            changedBits = new.changedBits
            changes = new.takeChanges()
        }
        writer.withUnsafeBytes { rewritten.put($0) }
        return true
    }

    /// The byte range of each old property's value in `value`, into `ranges`: what
    /// `EntityTranscoder.findRanges` finds, and throws, with the skips decided once.
    private func findRanges(
        in value: UnsafeRawBufferPointer,
        _ entry: RewriteEntry,
        into ranges: inout [Range<Int>]
    ) throws {
        var reader = PayloadReader(value)
        let count = try reader.readVarint()
        let skips = entry.oldSkips
        guard count == UInt64(skips.count) else {
            throw PayloadError.malformed(
                offset: 0,
                "a payload of \(entry.transcoder.old.name) with \(count) properties; its version "
                    + "has \(skips.count)"
            )
        }
        if ranges.count != skips.count { ranges = Array(repeating: 0..<0, count: skips.count) }
        try ranges.withUnsafeMutableBufferPointer { ranges throws(PayloadError) in
            try skips.withUnsafeBufferPointer { skips throws(PayloadError) in
                for index in skips.indices {
                    let start = reader.offset
                    try skips[index].skip(&reader)
                    ranges[index] = start..<reader.offset
                }
            }
        }
    }

    /// Writes the new value of `object` to `writer`: the properties set encoded, the others
    /// translated.
    private func encode(_ object: MigratedObject) throws {
        let entry = object.entry
        // Built only for an error: an interpolation per object would cost as much as the rest.
        var place: String { "object #\(object.key) of \(entry.new.name)" }
        if let name = object.unknownNames.first {
            throw ObjectLogError(
                .invalidArgument,
                "\(place): the new version has no property '\(name)' (its properties: "
                    + entry.new.names.joined(separator: ", ") + ")"
            )
        }
        writer.removeAll()
        let record = object.old.record
        let ranges = record.ranges
        let shapes = entry.new.shapes
        let transcoder = entry.transcoder
        let changes = object.changes
        let copies = entry.copies
        try record.bytes.withUnsafeBytes { value in
            writer.write(varint: UInt64(shapes.count))
            var index = 0
            while index < shapes.count {
                // Properties the inferred mapping copies one after another, none of them set,
                // go over in one piece.
                let copy = copies[index]
                if copy.end > index + 1, !object.mayHaveChanges(in: index..<copy.end) {
                    let last = copy.source + (copy.end - index - 1)
                    let bytes = ranges[copy.source].lowerBound..<ranges[last].upperBound
                    writer.write(bytes: UnsafeRawBufferPointer(rebasing: value[bytes]))
                    index = copy.end
                    continue
                }
                defer { index += 1 }
                guard let change = changes[index] else {
                    try transcoder.write(
                        step: index,
                        of: value,
                        ranges: ranges,
                        blob: blob,
                        into: &writer
                    )
                    continue
                }
                try check(change, at: index, of: object)
                if let problem = change.encode(as: shapes[index], into: &writer) {
                    let name = entry.new.names[index]
                    throw ObjectLogError(
                        .invalidArgument,
                        "\(place): '\(name)' cannot take \(problem)",
                        property: name
                    )
                }
            }
        }
    }

    /// Refuses a changed relationship and a blob the old object did not refer to.
    private func check(
        _ value: StoredValue,
        at index: Int,
        of object: MigratedObject
    ) throws {
        let entry = object.entry
        let name = entry.new.names[index]
        var place: String { "object #\(object.key) of \(entry.new.name)" }
        if entry.new.shapes[index].isRelationship, try object.inferredValue(at: index) != value {
            throw ObjectLogError(
                .invalidArgument,
                "\(place): a rewriting stage cannot change the relationship '\(name)' (its "
                    + "inverse would not follow); change it in a custom stage",
                property: name
            )
        }
        if case .externalData(let id, _) = value,
            !object.old.values.contains(where: {
                if case .externalData(id, _) = $0.value { true } else { false }
            })
        {
            throw ObjectLogError(
                .invalidArgument,
                "\(place): '\(name)' refers to a blob the old object did not; set the data "
                    + "itself",
                property: name
            )
        }
    }
}
