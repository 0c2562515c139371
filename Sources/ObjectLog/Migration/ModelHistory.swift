import Foundation
import ObjectLogStore

/// The model versions a store has been written with, oldest first (FORMAT.md section 10).
///
/// Each version's schema is stored once, in a record of its own (entity tag
/// ``schemaEntityTag``), and the metadata names the versions by hash: a metadata change no
/// longer rewrites the model. A version also records where its records begin (file generation
/// and offset), so a record is read through the schema of the version that wrote it and
/// translated into the current one as it is read.
public struct ModelHistory: Sendable {
    /// The metadata key of the version list: an array of dictionaries with the keys `hash`,
    /// `key` (the schema record's object key), `transaction`, `generation` and `offset`.
    public static let versionsKey = "ObjectLog.modelVersions"
    /// The entity tag of the records that hold stored schemas (JSON of ``ModelSchema``).
    public static let schemaEntityTag: EntityTag = 0xFFFF_FFFF

    /// One stored model version.
    public struct Version: Sendable {
        /// The schema's ``ModelSchema/versionHash``.
        public var hash: String
        /// The schema.
        public var schema: ModelSchema
        /// The object key of the record that holds the schema (0 for the model description of
        /// a store written before versions were kept, which lives in the metadata).
        public var key: ObjectKey
        /// The number of the transaction that introduced the version.
        public var transaction: UInt64
        /// The file generation and offset where its records begin: records at or after this
        /// position (and before the next version's) were written by this version.
        public var generation: UInt64
        /// See ``generation``.
        public var offset: UInt64
        /// Whether the record that held the schema is lost (a salvage dropped the transaction
        /// that wrote it) and ``schema`` is a model supplied in its place that is this version:
        /// the app's model in a salvaging open, or `objectlog recover --model-from`'s.
        public var hasLostRecord = false
    }

    /// What reading a store's model history throws, as the ``ObjectLogError/underlyingError``
    /// of an ``ObjectLogError/Code/corrupt`` error, when the record holding a version's schema
    /// is lost and no model supplied is that version.
    public struct LostSchema: Error, Sendable, Equatable {
        /// The lost version's hash, as the metadata names it.
        public var hash: String
        /// The object key of the lost schema record.
        public var key: ObjectKey
    }

    /// The versions, oldest first.
    public private(set) var versions: [Version]
    /// Whether the store keeps its model the way stores did before versions were kept: the
    /// whole description in the metadata (`ObjectLog.model`).
    public private(set) var isLegacy: Bool

    /// The version that wrote the store last.
    public var current: Version? { versions.last }

    /// Every entity tag some version used.
    var usedTags: Set<EntityTag> {
        Set(versions.flatMap { $0.schema.entities.map(\.tag) })
    }

    /// Reads the history of an open store; nil if the store records no model.
    ///
    /// A version whose schema record a salvage dropped cannot be read this way: see
    /// ``read(from:substitutes:)``, which the engine's salvaging open calls with the app's
    /// model.
    ///
    /// - Throws: ``ObjectLogError/Code/corrupt`` if the recorded versions cannot be read.
    package static func read(
        from store: any PersistentStore
    ) throws(ObjectLogError) -> ModelHistory? {
        try read(from: store, substitutes: [])
    }

    /// Reads the history of an open store, taking the schema of a version whose record is lost
    /// from `substitutes`; nil if the store records no model.
    ///
    /// A salvage that drops a damaged transaction drops the schema record it wrote, while later
    /// metadata still names that version. A schema of `substitutes` stands in for the lost one
    /// when it is that version: its ``ModelSchema/versionHash`` is the recorded hash, as it is or
    /// with its entities tagged as the engine tags a model that continues the versions before
    /// (in a store's first version, 1, 2, 3… in the order of their names). The version is then
    /// marked ``Version/hasLostRecord``. When `ObjectLog.modelVersions` is present it is the
    /// store's model, whatever `ObjectLog.model` holds.
    ///
    /// ```swift
    /// let history = try ModelHistory.read(from: damaged, substitutes: [appModel.schema])
    /// ```
    ///
    /// - Throws: ``ObjectLogError/Code/corrupt`` if the recorded versions cannot be read: with a
    ///   ``LostSchema`` as its ``ObjectLogError/underlyingError`` when a schema record is lost
    ///   and no substitute is that version.
    package static func read(
        from store: any PersistentStore,
        substitutes: [ModelSchema]
    ) throws(ObjectLogError) -> ModelHistory? {
        let metadata = try readingStore { try store.metadata }
        if case .array(let entries)? = metadata[versionsKey] {
            var versions: [Version] = []
            for entry in entries {
                guard case .dictionary(let fields) = entry,
                    case .string(let hash)? = fields["hash"],
                    case .integer(let key)? = fields["key"], key > 0,
                    case .integer(let transaction)? = fields["transaction"], transaction >= 0,
                    case .integer(let generation)? = fields["generation"], generation >= 0,
                    case .integer(let offset)? = fields["offset"], offset >= 0
                else {
                    throw ObjectLogError(
                        .corrupt,
                        "the store's list of model versions is malformed"
                    )
                }
                let record: [UInt8]?
                do {
                    record = try store.readObject(ObjectKey(key))?.payload
                } catch {
                    throw ObjectLogError.store(error, "cannot read model version \(hash)")
                }
                let schema: ModelSchema
                if let record {
                    guard
                        try readingStore({ try store.location(of: ObjectKey(key)) })?.entity
                            == schemaEntityTag
                    else {
                        throw ObjectLogError(
                            .corrupt,
                            "object \(key), named as the schema of model version \(hash), is an "
                                + "object of another entity"
                        )
                    }
                    schema = try ModelSchema.decode(json: Data(record))
                } else if let substitute = substitute(
                    for: hash,
                    continuing: versions,
                    among: substitutes
                ) {
                    schema = substitute
                } else {
                    let supplied = substitutes.map(\.versionHash).joined(separator: ", ")
                    throw ObjectLogError(
                        .corrupt,
                        "the store has lost the schema of model version \(hash) (object \(key))"
                            + (supplied.isEmpty
                                ? "" : ", and no model supplied is that version (\(supplied))"),
                        underlyingError: LostSchema(hash: hash, key: ObjectKey(key))
                    )
                }
                versions.append(
                    Version(
                        hash: hash,
                        schema: schema,
                        key: ObjectKey(key),
                        transaction: UInt64(transaction),
                        generation: UInt64(generation),
                        offset: UInt64(offset),
                        hasLostRecord: record == nil
                    )
                )
            }
            guard !versions.isEmpty else {
                throw ObjectLogError(.corrupt, "the store's list of model versions is empty")
            }
            return ModelHistory(versions: versions, isLegacy: false)
        }
        guard case .string(let hash)? = metadata[PersistentStoreCoordinator.modelHashKey] else {
            return nil
        }
        guard case .string(let json)? = metadata[PersistentStoreCoordinator.modelKey] else {
            throw ObjectLogError(
                .corrupt,
                "the store names model \(hash) but holds no description of it"
            )
        }
        let schema = try ModelSchema.decode(json: Data(json.utf8))
        return ModelHistory(
            versions: [
                Version(
                    hash: hash,
                    schema: schema,
                    key: 0,
                    transaction: 1,
                    generation: 0,
                    offset: 0
                )
            ],
            isLegacy: true
        )
    }

    /// The schema among `candidates` that is the version `hash` recorded after `earlier`: as it
    /// is, or tagged as the engine tags a model that continues `earlier` (a first version's
    /// entities take 1, 2, 3… in the order of their names).
    private static func substitute(
        for hash: String,
        continuing earlier: [Version],
        among candidates: [ModelSchema]
    ) -> ModelSchema? {
        for candidate in candidates {
            if candidate.versionHash == hash { return candidate }
            let tags: [String: EntityTag]
            if let previous = earlier.last {
                tags = SchemaMapping.tags(
                    for: candidate.entities.map { ($0.name, $0.originalName) },
                    continuing: previous.schema,
                    earlier: earlier.dropLast().reversed().map(\.schema),
                    used: Set(earlier.flatMap { $0.schema.entities.map(\.tag) })
                )
            } else {
                // In the order the engine tags a new model's entities.
                let names = candidate.entities.map(\.name).sorted()
                tags = Dictionary(
                    names.enumerated().map { ($1, EntityTag($0 + 1)) },
                    uniquingKeysWith: { first, _ in first }
                )
            }
            var retagged = candidate
            for index in retagged.entities.indices {
                retagged.entities[index].tag = tags[retagged.entities[index].name] ?? 0
            }
            retagged.entities.sort { $0.tag < $1.tag }
            if retagged.versionHash == hash { return retagged }
        }
        return nil
    }

    /// A history without versions, for a store that records no model yet.
    static var empty: ModelHistory { ModelHistory(versions: [], isLegacy: false) }

    private init(versions: [Version], isLegacy: Bool) {
        self.versions = versions
        self.isLegacy = isLegacy
    }

    /// The transaction that adds `schema` as the newest version, with the changes to the
    /// metadata, written at the store's current end.
    ///
    /// Every object record after that point is written by the new version; those before it keep
    /// their versions. A legacy description is moved out of the metadata.
    func recording(
        _ schema: ModelSchema,
        in store: any PersistentStore,
        metadata: Metadata,
        into transaction: inout Transaction
    ) throws(ObjectLogError) -> ModelHistory {
        let (end, generation) = try readingStore { try store.endAndGeneration }
        var next = self
        if next.isLegacy {
            // The old description gets a record of its own, like every later version.
            let legacyKey = try readingStore { try store.allocateKeys(1).lowerBound }
            transaction.put(
                key: legacyKey,
                entity: Self.schemaEntityTag,
                payload: Array(next.versions[0].schema.canonicalJSON()),
                isInsert: true
            )
            next.versions[0].key = legacyKey
            next.isLegacy = false
        }
        if next.versions.last?.hash != schema.versionHash {
            let key = try readingStore { try store.allocateKeys(1).lowerBound }
            transaction.put(
                key: key,
                entity: Self.schemaEntityTag,
                payload: Array(schema.canonicalJSON()),
                isInsert: true
            )
            next.versions.append(
                Version(
                    hash: schema.versionHash,
                    schema: schema,
                    key: key,
                    transaction: try readingStore { try store.transactionCount } + 1,
                    generation: generation,
                    offset: end
                )
            )
        }
        var metadata = metadata
        metadata[PersistentStoreCoordinator.modelKey] = nil
        metadata[PersistentStoreCoordinator.modelHashKey] = .string(schema.versionHash)
        metadata[Self.versionsKey] = .array(
            next.versions.map { version in
                .dictionary([
                    "hash": .string(version.hash),
                    "key": .integer(Int64(version.key)),
                    "transaction": .integer(Int64(version.transaction)),
                    "generation": .integer(Int64(version.generation)),
                    "offset": .integer(Int64(version.offset)),
                ])
            }
        )
        if let current = next.versions.last {
            metadata[LogStore.upgradeBoundaryKey] = .array([
                .integer(Int64(current.generation)), .integer(Int64(current.offset)),
            ])
        }
        transaction.metadata = metadata
        return next
    }

    /// The history with `schema` appended as a version that has not been written (for a
    /// read-only open, which translates without recording anything).
    func appendingUnrecorded(_ schema: ModelSchema, generation: UInt64, end: UInt64) -> ModelHistory
    {
        var next = self
        next.versions.append(
            Version(
                hash: schema.versionHash,
                schema: schema,
                key: 0,
                transaction: 0,
                generation: generation,
                offset: end
            )
        )
        return next
    }

    /// The translation of records written by earlier versions into the newest one's layout,
    /// for the store's current file generation; nil when there is nothing to translate.
    ///
    /// A record is read through the schema of the version that wrote it, then through each
    /// later version's inferred mapping in turn. Records of other entities (schemas, entities
    /// that were removed) pass unchanged.
    package func upgrade(store: LogStore) -> PayloadUpgrade? {
        upgrade(store: store, pendingBoundary: nil)
    }

    /// The translation, applied below `pendingBoundary` (in the store's current generation)
    /// rather than below the boundary the metadata records: for a newest version that has not
    /// been recorded.
    func upgrade(store: LogStore, pendingBoundary: UInt64?) -> PayloadUpgrade? {
        guard versions.count > 1 else { return nil }
        let generation = store.generation
        // Per step i (version i to i + 1), the transcoder of each entity tag of version i + 1.
        let steps = zip(versions, versions.dropFirst()).map { old, new in
            SchemaMapping(from: old.schema, to: new.schema)
        }
        let starts = self.starts
        // Weak: the store keeps the translation, which must not keep the store.
        let reference = StoreReference(store)
        return PayloadUpgrade(
            pendingBoundary: pendingBoundary.map { (generation: generation, offset: $0) }
        ) { tag, offset, value in
            let version = Self.version(writing: offset, generation: generation, starts: starts)
            guard version < steps.count, tag != Self.schemaEntityTag else { return Array(value) }
            var bytes = Array(value)
            for step in steps[version...] {
                guard let transcoder = step.transcoder(forOldTag: tag) else {
                    return Array(value)
                }
                bytes = try bytes.withUnsafeBytes { buffer in
                    try transcoder.transcode(buffer) { id in
                        guard let store = reference.store else {
                            throw ObjectLogError(.store, "the store is closed")
                        }
                        return try store.readBlob(id)
                    }
                }
            }
            return bytes
        }
    }
}

extension ModelHistory {
    /// Where each version's records begin.
    var starts: [(generation: UInt64, offset: UInt64)] {
        versions.map { (generation: $0.generation, offset: $0.offset) }
    }

    /// The index of the version that wrote the record at `offset` of file generation
    /// `generation`: the last version to begin at or before it.
    static func version(
        writing offset: UInt64,
        generation: UInt64,
        starts: [(generation: UInt64, offset: UInt64)]
    ) -> Int {
        var version = 0
        for (index, start) in starts.enumerated()
        where (start.generation, start.offset) <= (generation, offset) {
            version = index
        }
        return version
    }
}

extension SchemaMapping {
    /// The transcoder of the entity whose old records carry `tag` (tags are kept across
    /// versions, so it is the new entity of the same tag).
    func transcoder(forOldTag tag: EntityTag) -> EntityTranscoder? {
        transcoders[tag]
    }
}

/// A weak reference to a store, for a translation the store itself keeps.
final class StoreReference: Sendable {
    // Set once, in `init`; a weak reference is read atomically.
    nonisolated(unsafe) weak var store: LogStore?

    init(_ store: LogStore) { self.store = store }
}
