import CommandLineKit
import ObjectLog
import ObjectLogStore

/// The model `recover` and `repair` copy a damaged store with: the model versions the store
/// records, and, for a version whose schema record the damage lost, the model of the store
/// `--model-from` names.
///
/// A salvage drops each damaged transaction whole; when one held a model version's schema, the
/// metadata of later transactions still names that version, and the objects it wrote cannot be
/// read without it. The schema of the other store stands in for it when it is that version
/// (``ModelHistory/read(from:substitutes:)``), and the copy writes it back, so the recovered
/// store is whole.
struct SalvageModel {
    /// The schemas `--model-from` supplies: every version the other store records, newest first.
    let substitutes: [ModelSchema]
    /// The store `--model-from` names, if any.
    let source: String?

    /// The help of the `--model-from` option.
    static let optionHelp =
        "A store whose recorded model stands in for the damaged store's when the damage lost "
        + "the record of a model version's schema; it must record that version (a new, empty "
        + "store opened by the app with that model does)."

    /// Reads the model versions of the store at `source`, read-only.
    ///
    /// - Throws: ``CommandError`` (exit 65) when that store records no model or its model cannot
    ///   be read; `StoreError` when it cannot be opened.
    init(modelFrom source: String?) throws {
        self.source = source
        guard let source else {
            substitutes = []
            return
        }
        let store = try StoreAccess.openSalvaging(source)
        defer { try? store.close() }
        let history: ModelHistory?
        do {
            history = try ModelHistory.read(from: store)
        } catch {
            throw CommandError(
                "\(source): its model cannot be read: \(error.message)",
                exitCode: .dataError
            )
        }
        guard let history, !history.versions.isEmpty else {
            throw CommandError(
                "\(source): records no ObjectLog model; --model-from needs a store the engine "
                    + "wrote",
                exitCode: .dataError
            )
        }
        substitutes = history.versions.reversed().map(\.schema)
    }

    /// The engine's translation of records of earlier model versions, for the copy.
    var upgrade: (LogStore) throws -> PayloadUpgrade? {
        { [substitutes] store in
            try ModelHistory.read(from: store, substitutes: substitutes)?.upgrade(store: store)
        }
    }

    /// The engine's merge of patches, for the copy.
    var merge: (LogStore) throws -> PatchMerge? {
        { [substitutes] store in
            try ModelHistory.read(from: store, substitutes: substitutes)?.patchMerge(store: store)
        }
    }

    /// Checks that the salvaged state of the store at `path` can be copied with its model, and
    /// returns the schema records to write back.
    ///
    /// - Returns: The puts of the lost schema records (nil when none is lost) and the versions
    ///   they hold.
    /// - Throws: ``CommandError`` (exit 65) when a schema record is lost and no model supplied is
    ///   that version, or when objects are stored as patches and there is no model to merge
    ///   them with; `StoreError` when the store cannot be opened.
    func prepare(
        _ path: String
    ) throws -> (restoring: Transaction?, restored: [ModelHistory.Version]) {
        let store = try StoreAccess.openSalvaging(path)
        defer { try? store.close() }
        let remedy = "only the program that wrote the store can merge patches"
        let history: ModelHistory?
        do {
            history = try ModelHistory.read(from: store, substitutes: substitutes)
        } catch {
            guard error.underlyingError is ModelHistory.LostSchema else {
                // Without a readable model the records are copied as they are: only patches
                // (and records in an older layout, which the copy refuses) need it.
                try StoreAccess.requireMergeablePatches(
                    store,
                    path: path,
                    modelProblem: "its model cannot be read (\(error.message))",
                    remedy: remedy
                )
                return (nil, [])
            }
            throw CommandError(
                "\(path): \(error.message); "
                    + (source.map {
                        "\($0) does not record that version: give --model-from a store that does"
                    }
                        ?? "rerun with --model-from OTHER.olog, a store that records that version "
                        + "(a new, empty store opened by the app with that model does)"),
                exitCode: .dataError
            )
        }
        guard let history else {
            try StoreAccess.requireMergeablePatches(
                store,
                path: path,
                modelProblem: nil,
                remedy: remedy
            )
            return (nil, [])
        }
        let restored = history.versions.filter(\.hasLostRecord)
        guard !restored.isEmpty else { return (nil, []) }
        var transaction = Transaction()
        for version in restored {
            transaction.put(
                key: version.key,
                entity: ModelHistory.schemaEntityTag,
                payload: Array(version.schema.canonicalJSON()),
                isInsert: true
            )
        }
        return (transaction, restored)
    }

    /// The lines that say which schema records the copy wrote back.
    func restoredLines(_ restored: [ModelHistory.Version]) -> [String] {
        restored.map {
            "restored: the schema of model version \($0.hash) (object #\($0.key)), from "
                + (source ?? "the model supplied")
        }
    }
}
