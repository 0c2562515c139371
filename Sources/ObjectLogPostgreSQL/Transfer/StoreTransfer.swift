import Foundation
import ObjectLog
import ObjectLogStore

/// Copies a whole store into another, empty one, through the store seam: objects with their
/// keys, relationships, external data, metadata and model versions, in one commit.
///
/// The source is read as the engine reads it (``ObjectLog/StoreInspector``): records an older
/// model version wrote come out in the current version's layout, patches merged. So the copy
/// records every version (each one's schema record and hash, in order), but all of them as
/// beginning where the copy begins: the destination reads every copied record as the current
/// version, and translates none.
///
/// The destination gets the source's keys, and hands out only keys above every key the source
/// has handed out (a reference to a deleted object never comes to name a new one). External
/// data goes through ``ObjectLog/PersistentStore/readBlob(_:)`` and
/// ``ObjectLog/PersistentStore/writeBlob(_:)``; data of an external-storage attribute that the
/// source kept inline and that reaches the destination's threshold becomes a blob there.
package enum StoreTransfer {
    /// What a copy copied.
    package struct Report: Sendable, Equatable {
        /// The objects (schema records not counted).
        package var objects: Int
        /// The model versions recorded.
        package var modelVersions: Int
        /// The external data, as blobs, and their bytes.
        package var blobs: Int
        /// See ``blobs``.
        package var blobBytes: UInt64
        /// The metadata keys (the engine's own included).
        package var metadataKeys: Int
        /// The number of the destination's transaction that holds the copy.
        package var transaction: UInt64
    }

    /// One record to put, before the transaction is built.
    private struct Put {
        var key: ObjectKey
        var entity: EntityTag
        var payload: [UInt8]
        var blobs: [BlobID]
    }

    /// Copies every record, blob and metadata value of `source` into `destination`, which
    /// must be empty, as one transaction.
    ///
    /// - Parameters:
    ///   - source: The store to read; only read.
    ///   - destination: An empty store.
    ///   - progress: Called now and then with the share done, from 0 to 1.
    /// - Returns: What was copied.
    /// - Throws: ``ObjectLogError`` (`corrupt`) for a source without a readable model;
    ///   ``StoreTransferError`` for a destination that is not empty or a record that cannot be
    ///   copied; what the stores throw. Nothing is committed then.
    package static func copy(
        from source: any PersistentStore,
        to destination: any PersistentStore,
        progress: ((Double) -> Void)? = nil
    ) throws -> Report {
        guard try destination.liveCount(entity: nil) == 0,
            try committedMetadata(of: destination).isEmpty
        else {
            throw StoreTransferError(
                .destinationHoldsStore,
                "\(destination.displayName) is not empty"
            )
        }
        var (transaction, report, nextKey) = try transaction(
            copying: source,
            into: destination,
            progress: progress
        )
        try reserveKeys(in: destination, below: nextKey)
        let commit = try destination.commitSave(transaction, checking: [])
        progress?(1)
        report.transaction = commit.info.number
        return report
    }

    /// The transaction that puts every record, blob and metadata value of `source` into
    /// `destination` (whose blobs it writes), what it copies (its ``Report/transaction`` not
    /// yet known), and the key past every key `source` has handed out: the copy, made but not
    /// committed, for a caller that commits it its own way (a staged migration's return to a
    /// database).
    package static func transaction(
        copying source: any PersistentStore,
        into destination: any PersistentStore,
        progress: ((Double) -> Void)? = nil
    ) throws -> (Transaction, Report, nextKey: ObjectKey) {
        let metadata = try committedMetadata(of: source)
        let inspector = try StoreInspector(store: source)
        let history = inspector.history
        let schema = inspector.schema
        let total = max(try source.liveCount(entity: nil), 1)
        var nextKey = try nextKey(of: source)
        var puts: [Put] = []
        puts.reserveCapacity(total)
        var copiedBlobs: Set<BlobID> = []
        var blobBytes: UInt64 = 0
        var objects = 0

        func copyBlob(_ id: BlobID) throws {
            guard copiedBlobs.insert(id).inserted else { return }
            let bytes = try source.readBlob(id)
            guard try destination.writeBlob(bytes) == id else {
                throw StoreTransferError(
                    .unreadableRecord,
                    "\(source.displayName): external data \(id.hex) does not match its address"
                )
            }
            blobBytes += UInt64(bytes.count)
        }

        try source.forEachLiveObject(entity: nil) { key, tag, buffer in
            nextKey = max(nextKey, key + 1)
            defer {
                if puts.count.isMultiple(of: 256) {
                    progress?(Double(puts.count) / Double(total) * 0.5)
                }
            }
            guard tag != ModelHistory.schemaEntityTag else {
                puts.append(Put(key: key, entity: tag, payload: Array(buffer), blobs: []))
                return
            }
            guard let entity = schema.entity(tag: tag) else {
                throw StoreTransferError(
                    .unreadableRecord,
                    "\(source.displayName): object #\(key) is of entity tag \(tag), which the "
                        + "store's model does not describe"
                )
            }
            var values = try StoreInspector.decode(payload: buffer, entity: entity)
            var blobs: [BlobID] = []
            var changed = false
            for (index, property) in entity.properties.enumerated() {
                switch values[index].value {
                case .externalData(let id, _):
                    try copyBlob(id)
                    blobs.append(id)
                case .data(let bytes)
                where property.isExternal
                    && bytes.count >= destination.externalStorageMinimumByteCount:
                    let id = try destination.writeBlob(bytes)
                    if copiedBlobs.insert(id).inserted { blobBytes += UInt64(bytes.count) }
                    values[index].value = .externalData(id, byteCount: bytes.count)
                    blobs.append(id)
                    changed = true
                default:
                    continue
                }
            }
            let payload =
                changed
                ? try StoreInspector.encode(values.map(\.value), entity: entity) : Array(buffer)
            puts.append(Put(key: key, entity: tag, payload: payload, blobs: blobs))
            objects += 1
        }

        // The destination's first transaction: every version begins there.
        let (end, generation) = try destination.endAndGeneration
        let transactionNumber = try destination.transactionCount + 1
        var versions: [MetadataValue] = []
        for version in history.versions {
            var key = version.key
            if key == 0 {
                // A store from before versions were kept holds its model in the metadata: the
                // copy gives it a record, as the engine does when it next records a version.
                key = nextKey
                nextKey += 1
                puts.append(
                    Put(
                        key: key,
                        entity: ModelHistory.schemaEntityTag,
                        payload: Array(version.schema.canonicalJSON()),
                        blobs: []
                    )
                )
            }
            versions.append(
                .dictionary([
                    "hash": .string(version.hash),
                    "key": .integer(Int64(key)),
                    "transaction": .integer(Int64(transactionNumber)),
                    "generation": .integer(Int64(generation)),
                    "offset": .integer(Int64(end)),
                ])
            )
        }
        var copiedMetadata = metadata
        copiedMetadata[PersistentStoreCoordinator.modelKey] = nil
        copiedMetadata[PersistentStoreCoordinator.modelHashKey] = .string(
            history.current?.hash ?? schema.versionHash
        )
        copiedMetadata[ModelHistory.versionsKey] = .array(versions)
        copiedMetadata[LogStore.upgradeBoundaryKey] = .array([
            .integer(Int64(generation)), .integer(Int64(end)),
        ])

        // By entity, then key: a database writes each entity's rows in few statements.
        puts.sort { ($0.entity, $0.key) < ($1.entity, $1.key) }
        var transaction = Transaction()
        transaction.reserveCapacity(
            changes: puts.count,
            valueBytes: puts.reduce(0) { $0 + $1.payload.count }
        )
        for put in puts {
            transaction.put(
                key: put.key,
                entity: put.entity,
                payload: put.payload,
                blobs: put.blobs,
                isInsert: true
            )
        }
        transaction.metadata = copiedMetadata
        puts = []
        progress?(0.5)
        let report = Report(
            objects: objects,
            modelVersions: history.versions.count,
            blobs: copiedBlobs.count,
            blobBytes: blobBytes,
            metadataKeys: copiedMetadata.count,
            transaction: 0
        )
        return (transaction, report, nextKey)
    }

    /// The committed metadata of `store`; a read that fails throws.
    static func committedMetadata(of store: any PersistentStore) throws -> Metadata {
        if let store = store as? PostgresStore { return try store.readMetadata() }
        return try store.metadata
    }

    /// The key `store` hands out next: no copied key may be handed out again.
    static func nextKey(of store: any PersistentStore) throws -> ObjectKey {
        if let store = store as? PostgresStore { return try store.nextObjectKey() }
        // A log store's counter lives in the handle; on a read-only handle an allocation
        // writes nothing, and tells the next key.
        if let store = store as? LogStore { return store.allocateKeys(1).lowerBound }
        return (try store.liveKeys(entity: nil).max() ?? 0) + 1
    }

    /// Makes `store` hand out only keys from `nextKey` on.
    static func reserveKeys(in store: any PersistentStore, below nextKey: ObjectKey) throws {
        if let store = store as? PostgresStore {
            try store.reserveKeys(below: nextKey)
            return
        }
        // A store file counts keys up to 2^62 (a database's keys are PostgreSQL's bigint).
        guard nextKey <= LogFormat.maximumCounter else {
            throw StoreTransferError(
                .unreadableRecord,
                "the source hands out keys up to \(nextKey), more than \(store.displayName) can "
                    + "hold (at most \(LogFormat.maximumCounter))"
            )
        }
        let first = try store.allocateKeys(1).lowerBound
        if nextKey > first + 1 { _ = try store.allocateKeys(Int(nextKey - first - 1)) }
    }
}
