import ObjectLogStore

/// What a backup copied (``PersistentContainer/backup(to:progress:)``).
public struct BackupResult: Sendable, Equatable {
    /// The store file's bytes copied: the store as of its last committed save.
    public var bytes: UInt64
    /// The objects in the copy (of the model's entities: the records that hold the model's
    /// versions are not counted).
    public var objects: Int
    /// The external-data files copied, and their bytes.
    public var externalFiles: Int
    /// See ``externalFiles``.
    public var externalBytes: UInt64

    /// Creates a result.
    public init(bytes: UInt64, objects: Int, externalFiles: Int, externalBytes: UInt64) {
        self.bytes = bytes
        self.objects = objects
        self.externalFiles = externalFiles
        self.externalBytes = externalBytes
    }
}

extension PersistentContainer {
    /// Writes a copy of the store to `destination`, whole and consistent, while contexts keep
    /// saving: the store as of its last committed save, with its external data.
    ///
    /// Copying the store file alone loses the external data (`.externalStorage` attributes),
    /// which lives in files beside it, and copying the files while a save or a compaction runs
    /// can catch them half done. A backup copies the store as of one committed save, the
    /// external-data files it refers to, and an index for a quick open; it starts again if a
    /// compaction replaces the store meanwhile. The copy appears at `destination` whole or not
    /// at all, and opens with the same model. `objectlog backup` does the same from the
    /// command line, for a store an app has open.
    ///
    /// ```swift
    /// try container.backup(to: "/backups/lab-2026-12-07.olog")
    /// ```
    /// - Parameters:
    ///   - destination: The copy's path; nothing may exist there yet.
    ///   - progress: Called now and then with the share done, from 0 to 1.
    /// - Returns: What was copied.
    /// - Throws: ``ObjectLogError/Code/store`` if the store cannot be read, is damaged, or the
    ///   destination exists or cannot be written (its ``ObjectLogError/storeError`` says
    ///   which); nothing is left at `destination` then. ``ObjectLogError/Code/unsupported`` for a
    ///   store on a database server, which its server backs up.
    @discardableResult
    public func backup(
        to destination: String,
        progress: ((Double) -> Void)? = nil
    ) throws(ObjectLogError) -> BackupResult {
        let store = try coordinator.logStore(for: "a backup")
        var options = StoreOptions()
        options.fileSystem = store.options.fileSystem
        let report: BackupReport
        do {
            report = try LogStore.backup(
                path: store.path,
                to: destination,
                options: options,
                progress: progress
            )
        } catch {
            throw ObjectLogError.store(error, "cannot back up the store to '\(destination)'")
        }
        let schemaRecords = store.liveCount(entity: ModelHistory.schemaEntityTag)
        return BackupResult(
            bytes: report.logBytes,
            objects: max(0, report.objects - schemaRecords),
            externalFiles: report.blobs,
            externalBytes: report.blobBytes
        )
    }
}
