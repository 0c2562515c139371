import Foundation
import ObjectLog
import ObjectLogStore

/// The engine's schema as stored in a store's metadata, for naming entity tags and decoding
/// payloads; a tag the schema does not name shows as `entity N`.
struct EntityNames: Sendable {
    /// The stored schema, if the store has a readable one (stores written by the engine do).
    let schema: ModelSchema?
    /// Why a stored schema could not be read, if there is one that cannot.
    let schemaProblem: String?
    private let namesByTag: [EntityTag: String]

    /// Reads the schema the engine keeps under ``PersistentStoreCoordinator/modelKey``.
    init(metadata: Metadata) {
        var names: [EntityTag: String] = [:]
        switch metadata[PersistentStoreCoordinator.modelKey] {
        case nil:
            schema = nil
            schemaProblem = nil
        case .string(let json)?:
            do {
                let decoded = try ModelSchema.decode(json: Data(json.utf8))
                for entity in decoded.entities { names[entity.tag] = entity.name }
                schema = decoded
                schemaProblem = nil
            } catch {
                schema = nil
                schemaProblem = "the stored model cannot be read: \(error.message)"
            }
        case let value?:
            schema = nil
            schemaProblem =
                "the stored model is a \(MetadataRendering.typeName(value)), not a JSON string"
        }
        namesByTag = names
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

    /// Live counts by entity name, sorted by name; every entity of the schema is listed, with
    /// 0 when it has no live objects.
    func countsByName(_ counts: [EntityTag: Int]) -> [(name: String, count: Int)] {
        var result: [(name: String, count: Int)] = []
        for tag in Set(counts.keys).union(namesByTag.keys) {
            result.append((name(of: tag), counts[tag] ?? 0))
        }
        return result.sorted { $0.name < $1.name }
    }
}
