import ObjectLogStore

/// What a compaction reclaimed (``PersistentContainer/compact(progress:)``).
public struct CompactionResult: Sendable, Equatable {
    /// The store file's size before.
    public var bytesBefore: UInt64
    /// The store file's size after.
    public var bytesAfter: UInt64
    /// The objects copied (of the model's entities: the records that hold the model's
    /// versions are not counted).
    public var objects: Int
    /// The external-data files removed because no live object refers to them any more.
    public var blobsRemoved: Int
    /// The bytes of those files.
    public var blobBytesRemoved: UInt64

    /// Creates a result.
    public init(
        bytesBefore: UInt64,
        bytesAfter: UInt64,
        objects: Int,
        blobsRemoved: Int,
        blobBytesRemoved: UInt64
    ) {
        self.bytesBefore = bytesBefore
        self.bytesAfter = bytesAfter
        self.objects = objects
        self.blobsRemoved = blobsRemoved
        self.blobBytesRemoved = blobBytesRemoved
    }
}

extension PersistentContainer {
    /// Rewrites the store with only its live objects, crash-safely, and removes the external
    /// data no live object refers to any more.
    ///
    /// An append-only log keeps every earlier version of an object until it is compacted: call
    /// this after large deletes or many edits, or set `StoreOptions.autoCompactionThreshold` to
    /// have saves compact when old versions pass a share of the file. Saves of other contexts
    /// wait while it runs; contexts keep their objects and unsaved changes, and their next
    /// saves check optimistic locking as before. A crash at any point leaves the old store or
    /// the new one, whole.
    ///
    /// ```swift
    /// let result = try container.compact()
    /// print("\(result.bytesBefore) -> \(result.bytesAfter) bytes")
    /// ```
    /// - Parameter progress: Called now and then with the share done, from 0 to 1.
    /// - Returns: What was reclaimed.
    /// - Throws: ``ObjectLogError/Code/store`` for a read-only store or one that cannot be
    ///   written (its ``ObjectLogError/storeError`` says why); the store is unchanged then.
    ///   ``ObjectLogError/Code/unsupported`` for a store on a database server.
    @discardableResult
    public func compact(
        progress: ((Double) -> Void)? = nil
    ) throws(ObjectLogError) -> CompactionResult {
        let store = try coordinator.logStore(for: "compaction")
        let report: CompactionReport
        do {
            report = try store.compact(progress: progress)
        } catch {
            throw ObjectLogError.store(error, "cannot compact the store")
        }
        // The compacted log is a new generation: the declared indexes are stamped with it, so
        // that the next open takes them.
        coordinator.checkpointDeclaredIndexes()
        return CompactionResult(
            bytesBefore: report.bytesBefore,
            bytesAfter: report.bytesAfter,
            objects: report.objects
                - store.liveCount(entity: ModelHistory.schemaEntityTag),
            blobsRemoved: report.blobsRemoved,
            blobBytesRemoved: report.blobBytesRemoved
        )
    }
}
