import CommandLineKit
import Foundation
import ObjectLog
import ReactionDiffusion

/// The lab's use of its store's persistent history: a configuration's edits (`rdlab history`),
/// its values as of an earlier transaction (`rdlab revert`), and the configurations deleted in
/// the transactions the store keeps (`rdlab list --deleted`, `rdlab undelete`).
///
/// What it can tell depends on the history the store keeps: every transaction of the last 30
/// days (``historyRetention``), across the compactions a lab's store makes once half its file
/// is old versions. A read of history the store no longer keeps is reported, never taken for
/// an empty history.
extension LabStore {
    /// How much history the lab keeps in its store: 30 days, as a "recently deleted" list.
    static let historyRetention = HistoryRetention.duration(30 * 24 * 3600)

    /// Which transactions the store's history keeps, as messages and help say it.
    static let historyKept = "for 30 days"

    // MARK: - Reading

    /// The number of the store's latest transaction.
    ///
    /// - Throws: ``CommandError`` when the store cannot be read.
    func currentTransaction() throws(CommandError) -> UInt64 {
        do {
            return try context.currentHistoryToken.transaction
        } catch {
            throw historyError(error)
        }
    }

    /// The transactions after transaction `number` (every one the store keeps when nil),
    /// oldest first; nil when the store no longer keeps all of them.
    ///
    /// - Throws: ``CommandError`` (data error) for a store that keeps no history (one in a
    ///   database), or when the store cannot be read.
    func history(after number: UInt64?) throws(CommandError) -> [HistoryTransaction]? {
        do {
            return try context.history(after: number.map { HistoryToken(transaction: $0) })
        } catch  where error.code == .historyExpired {
            return nil
        } catch {
            throw historyError(error)
        }
    }

    /// The earliest transaction whose values the history still tells: the one before the first
    /// transaction it keeps.
    func earliestKeptTransaction() throws(CommandError) -> UInt64 {
        if let first = try history(after: nil)?.first { return first.token.transaction - 1 }
        return try currentTransaction()
    }

    /// An engine error met while reading the history, as one line and an exit status.
    private func historyError(_ error: ObjectLogError) -> CommandError {
        guard error.code == .unsupported else {
            return Self.commandError(error, path: path, creating: false)
        }
        return CommandError(
            "the store '\(path)' keeps no history of its saves (a store in a database keeps only "
                + "the latest values), so there are no earlier values to show or restore",
            exitCode: .dataError
        )
    }

    /// The configuration called `name`, for a command that reads its history.
    ///
    /// - Throws: ``CommandError`` (missing input) when there is none, saying so when one of
    ///   that name was deleted and `rdlab undelete` can restore it.
    func requireConfigurationWithHistory(named name: String) throws(CommandError) -> Configuration {
        if let configuration = try configuration(named: name) { return configuration }
        guard let deleted = try? deletedConfigurations().first(where: { $0.name == name }) else {
            return try requireConfiguration(named: name)
        }
        throw CommandError(
            "no configuration named '\(name)' in '\(path)': it was deleted in transaction "
                + "#\(deleted.transaction); 'rdlab undelete \(name)' restores it",
            exitCode: .noInput
        )
    }

    // MARK: - A configuration's edits

    /// The edits of `configuration` in `transactions`: when it was saved, each change of its
    /// values, and the snapshots added to it and removed from it.
    static func edits(
        of configuration: Configuration,
        in transactions: [HistoryTransaction]
    ) -> [ConfigurationEdit] {
        let id = configuration.objectID
        var edits: [ConfigurationEdit] = []
        for transaction in transactions {
            var edit = ConfigurationEdit(
                transaction: transaction.token.transaction,
                date: transaction.date,
                kind: .edited,
                changes: []
            )
            for change in transaction.changes {
                if change.objectID == id {
                    switch change.kind {
                    case .insert:
                        edit.kind = .created
                        edit.changes = createdValues(change.newValues)
                    case .update:
                        edit.changes = change.changedProperties.compactMap { property in
                            guard !ConfigurationEdit.unlisted.contains(property),
                                let new = change.newValues[property]
                            else { return nil }
                            return ConfigurationEdit.Change(
                                property: property,
                                old: change.oldValues[property] ?? .null,
                                new: new
                            )
                        }
                        edit.thumbnailChanged = change.changedProperties.contains("thumbnail")
                    case .delete:
                        break
                    }
                } else if change.objectID.entityName == Snapshot.entityName {
                    let old = change.oldValues["configuration"]?.destinationKey
                    let new = change.newValues["configuration"]?.destinationKey
                    if old == id.key && (change.kind == .delete || new != id.key) {
                        edit.snapshotsRemoved += 1
                    }
                    if new == id.key && (change.kind == .insert || old != id.key) {
                        edit.snapshotsAdded += 1
                    }
                }
            }
            // A save that only stamped `modified` (or changed nothing the lab shows) is left out.
            if edit.kind == .created || !edit.changes.isEmpty || edit.snapshotsAdded > 0
                || edit.snapshotsRemoved > 0 || edit.thumbnailChanged
            {
                edits.append(edit)
            }
        }
        return edits
    }

    /// What `history` shows of a new configuration: its name, model, the model's parameters,
    /// tags and notes.
    private static func createdValues(
        _ values: [String: StoredValue]
    ) -> [ConfigurationEdit.Change] {
        let model = values["model"]?.stringValue.flatMap(Model.init(name:))
        let names =
            ["name", "model"] + (model?.parameterNames ?? Parameters.names) + ["tags", "notes"]
        return names.compactMap { name in
            values[name].map { ConfigurationEdit.Change(property: name, old: nil, new: $0) }
        }
    }

    // MARK: - Values as of a transaction

    /// What `transactions` (every transaction after some transaction N, oldest first) changed of
    /// the object `id`: the transaction that inserted it if one of them did, and else the
    /// values its properties had after N, for those that changed since.
    static func valuesBefore(
        _ transactions: [HistoryTransaction],
        of id: ObjectID
    ) -> (insertedIn: UInt64?, values: [String: StoredValue]) {
        var values: [String: StoredValue] = [:]
        for transaction in transactions {
            for change in transaction.changes where change.objectID == id {
                switch change.kind {
                case .insert:
                    return (transaction.token.transaction, [:])
                case .update:
                    // The first update after N replaced the value N left.
                    for (name, value) in change.oldValues where values[name] == nil {
                        values[name] = value
                    }
                case .delete:
                    break
                }
            }
        }
        return (nil, values)
    }

    // MARK: - Deleted configurations

    /// The configurations deleted in the transactions the store keeps whose names no later
    /// save took, most recently deleted first.
    ///
    /// A configuration deleted and replaced in one transaction (a run's automatic save, or
    /// `run --save NAME --replace`) was replaced, not deleted, and is not listed. Nor is one whose
    /// name a later save took (an `undelete`, a new run, a rename): at most one is listed a name.
    func deletedConfigurations() throws(CommandError) -> [DeletedConfiguration] {
        guard let transactions = try history(after: nil) else { return [] }
        var latest: [String: DeletedConfiguration] = [:]
        for transaction in transactions {
            var deletedSnapshots: [ObjectKey: [[String: StoredValue]]] = [:]
            for change in transaction.changes
            where change.kind == .delete && change.objectID.entityName == Snapshot.entityName {
                if let key = change.oldValues["configuration"]?.destinationKey {
                    deletedSnapshots[key, default: []].append(change.oldValues)
                }
            }
            var taken: Set<String> = []
            for change in transaction.changes
            where change.objectID.entityName == Configuration.entityName {
                switch change.kind {
                case .delete:
                    guard let name = change.oldValues["name"]?.stringValue else { continue }
                    latest[name] = DeletedConfiguration(
                        name: name,
                        date: transaction.date,
                        transaction: transaction.token.transaction,
                        values: change.oldValues,
                        snapshots: deletedSnapshots[change.objectID.key] ?? []
                    )
                case .insert, .update:
                    if let name = change.newValues["name"]?.stringValue { taken.insert(name) }
                }
            }
            for name in taken { latest[name] = nil }
        }
        return latest.values.sorted { ($0.transaction, $0.name) > ($1.transaction, $1.name) }
    }

    /// Inserts (without saving) `deleted` again with its last values, and its snapshots, their
    /// states and thumbnails as the store's history keeps them.
    ///
    /// Its record and its snapshots' are new objects: the store gives them new keys.
    ///
    /// - Throws: ``CommandError`` (data error) when a blob it needs is gone.
    func restore(_ deleted: DeletedConfiguration) throws(CommandError) -> Configuration {
        let reader = BlobReader(context: context, path: path, name: deleted.name)
        let values = deleted.values
        let configuration = Configuration(context: context)
        configuration.name = deleted.name
        if let model = values["model"]?.stringValue { configuration.model = model }
        configuration.preset = values["preset"]?.stringValue
        var parameters = configuration.parameters
        for name in Parameters.names {
            if let value = values[name]?.floatValue {
                try? parameters.setValue(value, forName: name)
            }
        }
        configuration.parameters = parameters
        if let precision = values["precision"]?.stringValue { configuration.precision = precision }
        if let boundary = values["boundary"]?.stringValue { configuration.boundary = boundary }
        if let width = values["width"]?.intValue { configuration.width = width }
        if let height = values["height"]?.intValue { configuration.height = height }
        if let created = values["created"]?.dateValue { configuration.created = created }
        if let autoSaved = values["autoSaved"]?.boolValue { configuration.autoSaved = autoSaved }
        configuration.thumbnail = try reader.data(values["thumbnail"], of: "its thumbnail")
        if let notes = values["notes"]?.stringValue { configuration.notes = notes }
        if let tags = values["tags"]?.stringsValue { configuration.tags = tags }
        for snapshotValues in deleted.snapshots {
            let snapshot = Snapshot(context: context)
            let step = snapshotValues["step"]?.intValue ?? 0
            snapshot.step = step
            if let precision = snapshotValues["precision"]?.stringValue {
                snapshot.precision = precision
            }
            if let rule = snapshotValues["unorm8Rule"]?.intValue { snapshot.unorm8Rule = rule }
            if let count = snapshotValues["chemicalCount"]?.intValue {
                snapshot.chemicalCount = count
            }
            if let width = snapshotValues["width"]?.intValue { snapshot.width = width }
            if let height = snapshotValues["height"]?.intValue { snapshot.height = height }
            snapshot.state =
                try reader.data(
                    snapshotValues["state"],
                    of: "the state of its snapshot at step \(step)"
                )
                ?? Data()
            snapshot.thumbnail = try reader.data(
                snapshotValues["thumbnail"],
                of: "the thumbnail of its snapshot at step \(step)"
            )
            if let savedAt = snapshotValues["savedAt"]?.dateValue { snapshot.savedAt = savedAt }
            snapshot.configuration = configuration
        }
        return configuration
    }
}

/// Reads the bytes of external data a deleted object referred to, which the store's history
/// keeps (``ManagedObjectContext/externalData(_:)``).
private struct BlobReader {
    let context: ManagedObjectContext
    /// The store as messages name it.
    let path: String
    /// The configuration being restored, for messages.
    let name: String

    /// The bytes of a `data` value: inline, or the external data the history keeps; nil for
    /// `nil`.
    ///
    /// - Throws: ``CommandError`` (data error) when the data is gone.
    func data(_ value: StoredValue?, of what: String) throws(CommandError) -> Data? {
        switch value {
        case .data(let data):
            return data
        case .externalData(let blob, _):
            do {
                return try context.externalData(blob)
            } catch  where error.storeError?.code == .missingBlob {
                throw CommandError(
                    "cannot undelete '\(name)': \(what) (blob \(blob.hex.prefix(12))…) is no "
                        + "longer kept by the store '\(path)'",
                    exitCode: .dataError
                )
            } catch {
                throw LabStore.commandError(error, path: path, creating: false)
            }
        default:
            return nil
        }
    }
}
