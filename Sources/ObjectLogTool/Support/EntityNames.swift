import CommandLineKit
import Foundation
import ObjectLog
import ObjectLogStore

/// The engine's schema as stored in a store (the model version that wrote it last), for naming
/// entity tags and decoding payloads; a tag the schema does not name shows as `entity N`.
struct EntityNames: Sendable {
    /// The stored schema, if the store has a readable one (stores written by the engine do).
    let schema: ModelSchema?
    /// Why a stored schema could not be read, if there is one that cannot.
    let schemaProblem: String?
    /// The store's model versions, when it keeps them.
    let history: ModelHistory?
    /// Whether the stored model cannot be read because the damage lost the record of a
    /// version's schema (`objectlog recover --model-from` supplies it).
    private(set) var hasLostSchema = false
    private let namesByTag: [EntityTag: String]

    /// The schema of the model version that wrote an open store last (its history of versions
    /// is read from the store), with the store set to read records of earlier versions in
    /// that version's layout, as the engine reads them.
    init(store: any PersistentStore) {
        do {
            let history = try ModelHistory.read(from: store)
            if let history { store.installReading(of: history, pendingBoundary: nil) }
            self.init(schema: history?.current?.schema, problem: nil, history: history)
        } catch {
            let isLost = error.underlyingError is ModelHistory.LostSchema
            self.init(
                schema: nil,
                problem: "the stored model cannot be read: \(error.message)"
                    + (isLost
                        ? " ('objectlog recover \(store.displayName) --model-from OTHER.olog' "
                            + "takes it from a store that records that version)" : "")
            )
            hasLostSchema = isLost
        }
    }

    /// The schema of the store at `path`, whose committed metadata is `metadata`: a store
    /// that keeps model versions is opened read-only to read the current version's schema.
    init(path: String, metadata: Metadata) {
        if metadata[ModelHistory.versionsKey] != nil {
            var options = StoreOptions()
            options.readOnly = true
            options.salvage = true
            options.createIfMissing = false
            do {
                let store = try LogStore.open(path: path, options: options)
                defer { try? store.close() }
                self.init(store: store)
            } catch {
                self.init(schema: nil, problem: "the stored model cannot be read: \(error)")
            }
            return
        }
        switch metadata[PersistentStoreCoordinator.modelKey] {
        case nil:
            self.init(schema: nil, problem: nil)
        case .string(let json)?:
            do {
                self.init(schema: try ModelSchema.decode(json: Data(json.utf8)), problem: nil)
            } catch {
                self.init(schema: nil, problem: "the stored model cannot be read: \(error.message)")
            }
        case let value?:
            self.init(
                schema: nil,
                problem:
                    "the stored model is a \(MetadataRendering.typeName(value)), not a JSON string"
            )
        }
    }

    private init(schema: ModelSchema?, problem: String?, history: ModelHistory? = nil) {
        self.history = history
        var names: [EntityTag: String] = [:]
        for entity in schema?.entities ?? [] { names[entity.tag] = entity.name }
        // The records that hold stored schemas are named too, so they are not taken for objects
        // of an unknown entity.
        if schema != nil { names[ModelHistory.schemaEntityTag] = "(model versions)" }
        self.schema = schema
        self.schemaProblem = problem
        self.namesByTag = names
    }

    /// Refuses, with exit 65, objects among `keys` stored as patches when the open store these
    /// names were read from (``init(store:)``) gives no model to merge them with (see
    /// ``StoreAccess/requireMergeablePatches(_:path:keys:modelProblem:remedy:)``).
    ///
    /// - Parameters:
    ///   - keys: The objects the command would read (default: every live object).
    ///   - store: The open store.
    ///   - path: The store, for the message.
    ///   - remedy: What to do when the store records no model.
    /// - Throws: ``CommandError`` (exit 65) naming the first patched object.
    func requireMerge(
        of keys: [ObjectKey]? = nil,
        in store: LogStore,
        path: String,
        remedy: String
    ) throws(CommandError) {
        guard history == nil else { return }
        try StoreAccess.requireMergeablePatches(
            store,
            path: path,
            keys: keys,
            modelProblem: schemaProblem,
            remedy: hasLostSchema
                ? "recover the store with 'objectlog recover \(path) --model-from OTHER.olog', "
                    + "naming a store that records that model version"
                : remedy
        )
    }

    /// The schema's description of the entity with `tag`, if it has one.
    func entity(tag: EntityTag) -> ModelSchema.Entity? {
        schema?.entity(tag: tag)
    }

    /// The entity's name, or `entity N` when the schema does not name tag N.
    func name(of tag: EntityTag) -> String {
        namesByTag[tag] ?? "entity \(tag)"
    }

    /// The tag an entity name (or `entity N`, or the number `N`) stands for; nil if unknown.
    func tag(named name: String) -> EntityTag? {
        if let tag = namesByTag.first(where: { $0.value == name })?.key { return tag }
        if let tag = EntityTag(name) { return tag }
        if name.hasPrefix("entity "), let tag = EntityTag(name.dropFirst("entity ".count)) {
            return tag
        }
        return nil
    }

    /// The tags of an entity and of every entity that inherits from it.
    func familyTags(of tag: EntityTag) -> Set<EntityTag> {
        guard let schema, let entity = schema.entity(tag: tag) else { return [tag] }
        return Set(schema.family(of: entity.name).map(\.tag))
    }

    /// Live counts by entity name, sorted by name; every entity of the schema is listed, with
    /// 0 when it has no live objects.
    func countsByName(_ counts: [EntityTag: Int]) -> [(name: String, count: Int)] {
        var result: [(name: String, count: Int)] = []
        for tag in Set(counts.keys).union(namesByTag.keys) where tag != ModelHistory.schemaEntityTag
        {
            result.append((name(of: tag), counts[tag] ?? 0))
        }
        return result.sorted { $0.name < $1.name }
    }

    /// ``countsByName(_:)`` as a tree: each entity followed by those that inherit from it, one
    /// level deeper, names in order at each level.
    func hierarchy(
        _ counts: [(name: String, count: Int)]
    ) -> [(name: String, count: Int, depth: Int, isAbstract: Bool)] {
        let parents = Dictionary(
            counts.map { ($0.name, schema?.entity(named: $0.name)?.superentity) },
            uniquingKeysWith: { first, _ in first }
        )
        var result: [(name: String, count: Int, depth: Int, isAbstract: Bool)] = []
        func add(parent: String?, depth: Int) {
            for entry in counts where parents[entry.name] ?? nil == parent {
                let isAbstract = schema?.entity(named: entry.name)?.isAbstract ?? false
                result.append((entry.name, entry.count, depth, isAbstract))
                if depth < counts.count { add(parent: entry.name, depth: depth + 1) }
            }
        }
        add(parent: nil, depth: 0)
        // An entity whose superentity the schema does not list still shows, at the top.
        for entry in counts where !result.contains(where: { $0.name == entry.name }) {
            result.append((entry.name, entry.count, 0, false))
        }
        return result
    }
}
