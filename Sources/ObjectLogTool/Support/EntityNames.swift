import ObjectLogStore

/// Entity names for the tags in record frames, from the schema the engine keeps in a store's
/// metadata; a tag without a known name shows as `entity N`.
struct EntityNames: Sendable {
    private var namesByTag: [EntityTag: String] = [:]

    /// The names found in `metadata` (none yet when the store has no engine schema).
    init(metadata: Metadata) {
        namesByTag = [:]
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

    /// Whether the schema names any entity.
    var hasSchema: Bool { !namesByTag.isEmpty }

    /// Live counts by entity name, sorted by name.
    func countsByName(_ counts: [EntityTag: Int]) -> [(name: String, count: Int)] {
        var result: [(name: String, count: Int)] = []
        for tag in Set(counts.keys).union(namesByTag.keys) {
            result.append((name(of: tag), counts[tag] ?? 0))
        }
        return result.sorted { $0.name < $1.name }
    }
}
