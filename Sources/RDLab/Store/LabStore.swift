import CommandLineKit
import Foundation
import ObjectLog
import ObjectLogPostgreSQL
import ReactionDiffusion

/// The lab's store: an ObjectLog container of ``Configuration``s and their ``Snapshot``s, one
/// context to work in, and the ``LabSettings`` kept in the store's metadata.
///
/// Settings are written by a will-save handler, so every save carries their current values and
/// they are always current on disk. Every failure becomes a one-line ``CommandError``; a failed
/// save leaves the store as it was.
final class LabStore {
    /// How a command uses the store.
    enum Access {
        /// Read only; the store must exist. Allowed while another process writes.
        case read
        /// Read and write; the store must exist.
        case write
        /// Read and write; a missing store is created.
        case create
    }

    /// The store used without `--store` or `RDLAB_STORE`.
    static let defaultPath = "rdlab.olog"
    /// The environment variable that names the store.
    static let environmentVariable = "RDLAB_STORE"
    /// The name of the configuration every run saves its last state in.
    static let autosaveName = "autosave"
    /// The entities of the lab's model.
    static let entities: [ManagedObject.Type] = [Configuration.self, Snapshot.self]

    /// The store as messages name it: the file's path, or a database's user, host and database
    /// (never its password).
    let path: String
    /// The store as given: a file's path, or a `postgresql://` URI.
    let location: String
    /// Whether the store is a PostgreSQL database rather than a file.
    var isDatabase: Bool { StoreLocation.isDatabase(location) }
    /// The open container.
    private(set) var container: PersistentContainer
    /// The context all commands work in (kept alive with the store, as its objects need).
    private(set) var context: ManagedObjectContext
    /// The settings, written to the metadata by every save.
    var settings: LabSettings
    /// Whether the store is damaged and was opened read-only with salvage: it shows its intact
    /// transactions, and saves are refused until `objectlog repair` has repaired it.
    private(set) var isSalvaged = false
    /// Whether a damaged store may be opened with salvage (not when creating).
    private let canSalvage: Bool
    /// Where the salvage warning goes.
    private let warn: ((String) -> Void)?

    /// The store path chosen by `--store`, else `RDLAB_STORE`, else ``defaultPath``.
    static func path(option: String?) -> String {
        if let option { return option }
        if let variable = ProcessInfo.processInfo.environment[environmentVariable],
            !variable.isEmpty
        {
            return variable
        }
        return defaultPath
    }

    /// The help text of the `--store` option every store command takes.
    static let storeOptionHelp =
        "The store: a file, or a postgresql:// URI\n(default: $\(environmentVariable), else "
        + "./\(defaultPath))."

    /// The settings of the store at `path`, read from its metadata without opening it; empty
    /// when there is no readable store there.
    static func settingsIfReadable(at path: String) -> LabSettings {
        if StoreLocation.isDatabase(path) { return databaseSettingsIfReadable(at: path) }
        guard FileManager.default.fileExists(atPath: path),
            let metadata = try? PersistentContainer.metadataForStore(at: path)
        else {
            return LabSettings()
        }
        return LabSettings(metadata: metadata)
    }

    /// How long a writer waits for another process's save to finish before giving up: saves
    /// hold the store for well under a second, runs never hold it while they step.
    static let lockWait = Duration.seconds(15)

    /// The reclaimable share of the file past which a save compacts the store.
    static let autoCompactionThreshold = 0.5
    /// The smallest store file a save compacts.
    static let autoCompactionMinimumBytes: UInt64 = 256 << 10
    /// The size from which external-storage data (configurations' thumbnails, snapshots'
    /// states) goes to blob files: thumbnails are a few KB.
    static let externalStorageMinimumByteCount = 1 << 10

    /// Opens the store at `path`.
    ///
    /// A reader takes no lock and writes nothing, so it works on a read-only file and while
    /// another process writes. A writer that finds the store locked by another process's save
    /// waits up to ``lockWait`` for it. A damaged store (corruption, not a torn tail) is opened
    /// read-only with salvage for ``Access/read`` and ``Access/write``: commands see its intact
    /// transactions, `warn` gets one line naming `objectlog repair`, and ``save()`` refuses
    /// changes.
    ///
    /// - Throws: ``CommandError`` saying what is wrong with the store and what to do.
    init(
        path: String,
        access: Access,
        warn: ((String) -> Void)? = nil
    ) throws(CommandError) {
        try Self.checkPath(path)
        self.location = path
        self.path = StoreLocation.displayName(path)
        self.warn = warn
        guard !StoreLocation.isDatabase(path) else {
            canSalvage = false
            container = try Self.openDatabase(path, access: access)
            context = container.newContext()
            settings = LabSettings(metadata: container.metadata)
            observeSaves()
            return
        }
        var options = StoreOptions()
        options.readOnly = access == .read
        options.createIfMissing = access == .create
        // Every edit, rename and resume writes the configuration's record again (its
        // thumbnail stays in its blob unless it changed): compact once half the file is old
        // versions, so a lab store stays small.
        options.autoCompactionThreshold = Self.autoCompactionThreshold
        options.autoCompactionMinimumBytes = Self.autoCompactionMinimumBytes
        options.externalStorageMinimumByteCount = Self.externalStorageMinimumByteCount
        if access != .create && !FileManager.default.fileExists(atPath: path) {
            throw CommandError(
                "no store at '\(path)'; save a run into it first ('rdlab run … --save NAME'), or "
                    + "choose another with --store or \(Self.environmentVariable)",
                exitCode: .noInput
            )
        }
        if FileManager.default.fileExists(atPath: path) {
            try Self.checkHasModel(path)
        }
        canSalvage = access != .create
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: Self.lockWait)
        while true {
            do {
                container = try PersistentContainer(
                    path: path,
                    for: Self.entities,
                    options: options
                )
                break
            } catch  where access != .create && Self.isDamage(error) {
                container = try Self.openSalvaging(path)
                isSalvaged = true
                warn?(Self.salvageWarning(path))
                break
            } catch {
                if error.storeError?.code == .locked && clock.now < deadline {
                    Thread.sleep(forTimeInterval: 0.05)
                    continue
                }
                throw Self.commandError(error, path: path, creating: access == .create)
            }
        }
        context = container.newContext()
        settings = LabSettings(metadata: container.metadata)
        observeSaves()
    }

    /// Writes the settings with every save.
    private func observeSaves() {
        context.onWillSave { [weak self] context in
            guard let self else { return }
            let stored = self.container.metadata
            // `history`, `revert` and `undelete` read the store's history (LabStore+History):
            // the original kept deleted configurations for a while as "recently deleted", so
            // the lab keeps its store's history across compactions for as long, set with the
            // first save that finds it otherwise.
            if context.coordinator.historyRetention != Self.historyRetention {
                try context.coordinator.setHistoryRetention(Self.historyRetention)
            }
            // A malformed entry is left as it is: it is another program's value, not rdlab's to
            // drop, until the setting is set again.
            for key in LabSettings.Key.allCases where self.settings.malformed[key] == nil {
                let value = self.settings.metadataValue(key)
                if stored[key.metadataKey] != value {
                    try context.coordinator.setMetadata(value, forKey: key.metadataKey)
                }
            }
        }
    }

    /// Refuses an empty store path before anything is created: the engine would otherwise make
    /// its lock and temporary files (`-lock`, `-new`) in the working directory.
    static func checkPath(_ path: String) throws(CommandError) {
        guard !path.isEmpty else {
            throw .usage(
                "the store path is empty; give a file name with --store, or leave --store out "
                    + "for ./\(defaultPath)"
            )
        }
    }

    // MARK: - Damaged stores

    /// Whether `error` is damage to committed data (an open through the index checkpoint meets
    /// it only when it reads the damaged record).
    private static func isDamage(_ error: ObjectLogError) -> Bool {
        error.storeError?.code == .corrupt || error.code == .corrupt
    }

    /// The store at `path` opened read-only with salvage: its intact transactions.
    private static func openSalvaging(_ path: String) throws(CommandError) -> PersistentContainer {
        var options = StoreOptions()
        options.readOnly = true
        options.createIfMissing = false
        options.salvage = true
        do {
            return try PersistentContainer(path: path, for: entities, options: options)
        } catch {
            throw commandError(error, path: path, creating: false)
        }
    }

    private static func salvageWarning(_ path: String) -> String {
        "warning: the store '\(path)' is damaged; showing what its intact transactions hold, "
            + "read-only: repair it with 'objectlog repair \(path)' to write again"
    }

    /// Runs `fetch`; if it meets damage, reopens the store read-only with salvage (warning once)
    /// and runs it again.
    private func fetchFallingBack<T>(
        _ fetch: () throws(ObjectLogError) -> T
    ) throws(CommandError) -> T {
        do {
            return try fetch()
        } catch  where canSalvage && !isSalvaged && Self.isDamage(error) {
            try? container.close()
            container = try Self.openSalvaging(path)
            context = container.newContext()
            settings = LabSettings(metadata: container.metadata)
            observeSaves()
            isSalvaged = true
            warn?(Self.salvageWarning(path))
        } catch {
            throw Self.commandError(error, path: path, creating: false)
        }
        do {
            return try fetch()
        } catch {
            throw Self.commandError(error, path: path, creating: false)
        }
    }

    /// Refuses an existing store that records no model: the engine would adopt it on a write
    /// open, recording rdlab's model in it, even when it holds another program's objects.
    private static func checkHasModel(_ path: String) throws(CommandError) {
        let metadata: Metadata
        do {
            metadata = try PersistentContainer.metadataForStore(at: path)
        } catch {
            throw commandError(error, path: path, creating: false)
        }
        guard metadata[PersistentStoreCoordinator.modelHashKey] != nil else {
            throw CommandError(
                "'\(path)' is an ObjectLog store without rdlab's model (another program's data); "
                    + "choose another path with --store",
                exitCode: .dataError
            )
        }
    }

    /// Closes the store, writing its index checkpoint.
    func close() throws(CommandError) {
        do {
            try container.close()
        } catch {
            throw Self.commandError(error, path: path, creating: false)
        }
    }

    /// Saves every change and the settings as one transaction.
    ///
    /// - Throws: ``CommandError``; the store is then unchanged and the context rolled back.
    func save() throws(CommandError) {
        if isSalvaged {
            // Only the settings' bookkeeping (the last configuration opened) is not written.
            guard context.hasChanges else { return }
            context.rollback()
            throw CommandError(
                "the store '\(path)' is damaged, so it is read-only; repair it with 'objectlog "
                    + "repair \(path)', then try again",
                exitCode: .dataError
            )
        }
        do {
            try context.save()
        } catch {
            context.rollback()
            throw Self.commandError(error, path: path, creating: false)
        }
    }

    // MARK: - Fetching

    /// Every configuration, the automatic save first, then by name.
    func configurations() throws(CommandError) -> [Configuration] {
        let all = try fetchFallingBack { () throws(ObjectLogError) in
            try context.fetch(FetchRequest<Configuration>(sortBy: [SortDescriptor(\.name)]))
        }
        return all.filter(\.autoSaved) + all.filter { !$0.autoSaved }
    }

    /// The configuration called `name`, if there is one.
    func configuration(named name: String) throws(CommandError) -> Configuration? {
        try fetchFallingBack { () throws(ObjectLogError) in
            try context.fetch(
                FetchRequest<Configuration>(predicate: #Predicate { $0.name == name })
            ).first
        }
    }

    /// The configuration called `name`.
    ///
    /// - Throws: ``CommandError`` (missing input) naming the store when there is none.
    func requireConfiguration(named name: String) throws(CommandError) -> Configuration {
        guard let configuration = try configuration(named: name) else {
            let hint =
                name == Self.autosaveName
                ? "run something first ('rdlab run …')" : "see 'rdlab list' for the saved names"
            throw CommandError(
                "no configuration named '\(name)' in '\(path)'; \(hint)",
                exitCode: .noInput
            )
        }
        return configuration
    }

    // MARK: - Inserting

    /// Inserts a configuration (not yet saved) holding `run`'s settings.
    func insertConfiguration(name: String, for run: RunRecord, autoSaved: Bool) -> Configuration {
        let configuration = Configuration(context: context)
        configuration.name = name
        configuration.model = run.model.name
        configuration.preset = run.preset
        configuration.parameters = run.parameters
        configuration.precision = run.precision.rawValue
        configuration.boundary = run.boundary.rawValue
        configuration.width = run.field.width
        configuration.height = run.field.height
        configuration.autoSaved = autoSaved
        return configuration
    }

    /// Adds a snapshot of `run`'s final state to `configuration`, and makes its thumbnail the
    /// configuration's.
    func addSnapshot(of run: RunRecord, to configuration: Configuration) {
        let snapshot = Snapshot(context: context)
        snapshot.step = run.step
        snapshot.precision = run.precision.rawValue
        snapshot.unorm8Rule = run.unorm8Rule.rawValue
        snapshot.chemicalCount = run.field.chemicalCount
        snapshot.width = run.field.width
        snapshot.height = run.field.height
        snapshot.state = StateCoding.encode(run.field, precision: run.precision)
        snapshot.thumbnail = run.thumbnail
        snapshot.configuration = configuration
        configuration.thumbnail = run.thumbnail
    }

    /// Saves `run` as the configuration `name` (replacing one of that name when `replace`), and
    /// as the automatic save of the last run unless `autosave` is `false`, in one transaction.
    ///
    /// - Throws: ``CommandError`` when `name` exists and `replace` is `false`, or the save fails.
    func saveRun(
        _ run: RunRecord,
        as name: String?,
        replace: Bool,
        autosave: Bool = true
    ) throws(CommandError) {
        if let name {
            if let existing = try configuration(named: name) {
                guard replace else { throw Self.nameTaken(name) }
                context.delete(existing)
            }
            let configuration = insertConfiguration(name: name, for: run, autoSaved: false)
            addSnapshot(of: run, to: configuration)
            settings.lastOpened = name
        }
        if autosave {
            try replaceAutosave(with: run)
        }
        try save()
    }

    /// For tests of concurrent use only: holds a run between stepping and saving.
    ///
    /// When the environment variable `RDLAB_TEST_HOLD_BEFORE_SAVE` names a file, a run or
    /// resume that has finished stepping creates `<file>.waiting` and waits (up to a minute) for
    /// the file to exist before it opens the store to save. A test can then act while the run is provably past its checks and not
    /// yet saving, on any machine, however fast it steps.
    static func holdBeforeSaveForTests() {
        guard let release = ProcessInfo.processInfo.environment["RDLAB_TEST_HOLD_BEFORE_SAVE"],
            !release.isEmpty
        else { return }
        _ = FileManager.default.createFile(atPath: release + ".waiting", contents: nil)
        let deadline = Date().addingTimeInterval(60)
        while !FileManager.default.fileExists(atPath: release), Date() < deadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    /// Checks, before a run steps, that its result can be saved at `path`: an existing store is
    /// opened read-only (no lock: other processes may be writing) and must not already hold
    /// `saveName`; a missing one must have a writable directory to be created in.
    ///
    /// - Throws: ``CommandError`` saying what stops the save.
    static func checkBeforeRun(path: String, saveName: String?) throws(CommandError) {
        try checkPath(path)
        if StoreLocation.isDatabase(path) {
            try checkDatabaseBeforeRun(path, saveName: saveName)
            return
        }
        let files = FileManager.default
        guard files.fileExists(atPath: path) else {
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
            var isFolder: ObjCBool = false
            guard files.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue
            else {
                throw CommandError(
                    "cannot create the store '\(path)': its directory does not exist; create it "
                        + "or choose another path with --store",
                    exitCode: .cannotCreate
                )
            }
            guard files.isWritableFile(atPath: folder) else {
                throw CommandError(
                    "cannot create the store '\(path)': the directory '\(folder)' is not "
                        + "writable; choose another path with --store",
                    exitCode: .cannotCreate
                )
            }
            return
        }
        let store = try LabStore(path: path, access: .read)
        if let saveName, try store.configuration(named: saveName) != nil {
            throw nameTaken(saveName)
        }
        try store.close()
    }

    /// Saves `run` as ``saveRun(_:as:replace:autosave:)`` does, but when another process saved
    /// a configuration called `name` while the run stepped (and `replace` is `false`), keeps the
    /// run as the automatic save rather than losing it, then reports the clash.
    ///
    /// - Throws: ``CommandError`` (data error) for such a clash, after the automatic save.
    func saveRunKeepingWork(
        _ run: RunRecord,
        as name: String?,
        replace: Bool
    ) throws(CommandError) {
        if let name, !replace, try configuration(named: name) != nil {
            try replaceAutosave(with: run)
            try save()
            try close()
            throw CommandError(
                "another process saved a configuration named '\(name)' while this run stepped; "
                    + "this run is kept as '\(Self.autosaveName)' (keep it with 'rdlab rename "
                    + "\(Self.autosaveName) NEW')",
                exitCode: .dataError
            )
        }
        try saveRun(run, as: name, replace: replace)
    }

    /// Replaces the automatic save (not yet saved) with `run`.
    func replaceAutosave(with run: RunRecord) throws(CommandError) {
        // Every one: a salvaged store can hold two (a dropped transaction's delete is lost).
        for old in try configurations() where old.name == Self.autosaveName {
            context.delete(old)
        }
        let configuration = insertConfiguration(name: Self.autosaveName, for: run, autoSaved: true)
        addSnapshot(of: run, to: configuration)
    }

    // MARK: - Errors

    /// The error for a name that is already used.
    static func nameTaken(_ name: String) -> CommandError {
        CommandError(
            "a configuration named '\(name)' already exists; pass --replace to overwrite it, or "
                + "choose another name",
            exitCode: .dataError
        )
    }

    /// Checks a name given for a new configuration.
    ///
    /// - Throws: ``CommandError`` (usage) for an empty name, one with control characters, or the
    ///   automatic save's name.
    static func checkNewName(_ name: String) throws(CommandError) {
        guard !name.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw .usage("a configuration's name cannot be empty")
        }
        guard !name.unicodeScalars.contains(where: { CharacterSet.controlCharacters.contains($0) })
        else {
            throw .usage("a configuration's name cannot contain control characters")
        }
        guard name != autosaveName else {
            throw .usage(
                "'\(autosaveName)' is the automatic save of the last run; choose another name"
            )
        }
    }

    /// Turns an engine error into a one-line message with what to do, and an exit status.
    static func commandError(
        _ error: ObjectLogError,
        path: String,
        creating: Bool
    ) -> CommandError {
        let detail = oneLine(error.storeError?.message ?? error.message)
        if let databaseError = databaseCommandError(error, store: path) { return databaseError }
        switch error.code {
        case .store:
            guard let storeError = error.storeError else {
                // A failed scan while fetching reports the damage only in its message (the
                // engine drops the StoreError underneath), so a store error without one is
                // taken for what it almost always is: stored bytes that cannot be read.
                return CommandError(
                    "the store '\(path)' is damaged or unreadable (\(detail)); check it with "
                        + "'objectlog verify \(path)'",
                    exitCode: .dataError
                )
            }
            switch storeError.code {
            case .locked:
                return CommandError(
                    "the store '\(path)' is open for writing in another process; wait for it to "
                        + "finish, then try again",
                    exitCode: .ioError
                )
            case .notAStore:
                return CommandError(
                    // The store's message says what the file is ("is a directory, not an
                    // ObjectLog store", "not an ObjectLog store (no OBJLOG magic …)").
                    "'\(path)' \(detail.hasPrefix("is ") ? "" : "is ")\(detail); choose another "
                        + "path with --store",
                    exitCode: .dataError
                )
            case .corrupt, .missingBlob, .unsupportedVersion:
                return CommandError(
                    "the store '\(path)' is damaged or unreadable (\(oneLine(storeError.description))); "
                        + "check it with 'objectlog verify \(path)', then repair it with "
                        + "'objectlog repair \(path)'",
                    exitCode: .dataError
                )
            case .notFound where creating:
                return CommandError(
                    "cannot create the store '\(path)': its directory does not exist; create it "
                        + "or choose another path with --store",
                    exitCode: .cannotCreate
                )
            case .notFound:
                return CommandError(
                    "no store at '\(path)'; choose another with --store",
                    exitCode: .noInput
                )
            default:
                return CommandError(
                    "cannot \(creating ? "create or write" : "use") the store '\(path)': \(detail)",
                    exitCode: creating ? .cannotCreate : .ioError
                )
            }
        case .modelMismatch:
            if let newer = newerStoreError(path: path) { return newer }
            return CommandError(
                "'\(path)' is a store of another program (its model is not rdlab's); choose "
                    + "another path with --store",
                exitCode: .dataError
            )
        case .corrupt:
            return CommandError(
                "the store '\(path)' holds damaged data (\(detail)); check it with "
                    + "'objectlog verify \(path)'",
                exitCode: .dataError
            )
        case .uniqueness:
            return CommandError(
                "a configuration of that name already exists (\(detail)); choose another name",
                exitCode: .dataError
            )
        default:
            return CommandError("store '\(path)': \(detail)", exitCode: .ioError)
        }
    }

    /// The error for a store that a newer rdlab wrote (its model is newer than this rdlab's),
    /// naming both model versions; nil for another mismatch.
    private static func newerStoreError(path: String) -> CommandError? {
        var options = StoreOptions()
        options.readOnly = true
        guard
            let preview = try? PersistentContainer.migrationPreview(
                at: path,
                for: entities,
                options: options
            ),
            let ours = preview.olderRecordedVersion
        else { return nil }
        return CommandError(
            "the store '\(path)' was written by a newer rdlab (model version "
                + "\(preview.storeVersionCount), \(preview.storeVersion ?? "?")) than this one "
                + "(rdlab \(RDLab.version), model version \(ours), \(preview.modelVersion)); "
                + "upgrade rdlab to open it: this one neither reads nor writes it",
            exitCode: .dataError
        )
    }

    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).joined(separator: " ")
    }
}
