import Foundation
import ObjectLogStore

/// The inferred mapping from one stored model version to another: which entity of the new
/// version each old entity became, and how each old record's value becomes a new one.
///
/// It is inferred from the two schemas alone (names, declared original names, types, defaults),
/// so the engine, which has the classes, and the `objectlog` tool, which has only the stored
/// schemas, translate old records the same way. ``problems`` lists what cannot be inferred,
/// one line per change.
struct SchemaMapping: Sendable {
    /// Per entity of the new version (by tag): how its records of the old version translate.
    ///
    /// An entity that is new in the new version has none.
    private(set) var transcoders: [EntityTag: EntityTranscoder] = [:]
    /// Old entity tags whose entity the new version removed.
    private(set) var removedTags: [EntityTag] = []
    /// New entity tags whose entity continues none of the old version's.
    private(set) var addedTags: [EntityTag] = []
    /// New entities (by tag) whose uniqueness constraints the old objects have not yet met.
    private(set) var newConstraints: [EntityTag: [[String]]] = [:]
    /// Changes that cannot be inferred, one line each, naming entity, property and what to do.
    private(set) var problems: [String] = []

    /// Infers the mapping that takes `old` to `new`.
    init(from old: ModelSchema, to new: ModelSchema) {
        var claimed = Set<String>()
        for entity in new.entities {
            guard let source = Self.source(of: entity, in: old, claimed: claimed) else {
                addedTags.append(entity.tag)
                continue
            }
            claimed.insert(source.name)
            if source.tag != entity.tag {
                problems.append(
                    "entity '\(entity.name)': its records carry tag \(source.tag) but the model "
                        + "gives it \(entity.tag); open the store with a model built by ObjectLog"
                )
                continue
            }
            let transcoder = EntityTranscoder(from: source, to: entity, in: new, old: old)
            problems += transcoder.problems
            transcoders[entity.tag] = transcoder
            let added = entity.uniquenessConstraints.filter { group in
                let renamed = group.map { name in
                    transcoder.sourceName(of: name) ?? "\u{0}"
                }
                return !source.uniquenessConstraints.contains(renamed)
            }
            if !added.isEmpty { newConstraints[entity.tag] = added }
        }
        removedTags = old.entities.filter { !claimed.contains($0.name) }.map(\.tag)
    }

    /// Whether nothing needs translating: every entity keeps its records' layout and tag, no
    /// entity was removed and no constraint was added.
    var isIdentity: Bool {
        removedTags.isEmpty && newConstraints.isEmpty && problems.isEmpty
            && transcoders.values.allSatisfy(\.isIdentity)
    }

    /// The old entity that `entity` continues: the one of its name, else of its original name.
    private static func source(
        of entity: ModelSchema.Entity,
        in old: ModelSchema,
        claimed: Set<String>
    ) -> ModelSchema.Entity? {
        if let same = old.entity(named: entity.name), !claimed.contains(same.name) { return same }
        if let original = entity.originalName, let renamed = old.entity(named: original),
            !claimed.contains(renamed.name)
        {
            return renamed
        }
        return nil
    }

    /// The entity tags a model should use to continue the stored version `old`: each entity
    /// keeps the tag of the old entity it continues (by name or original name); an entity that
    /// an `earlier` version had (newest first) and `old` removed takes its tag back, so that a
    /// model version the store already recorded is recognised by its hash; and a new entity
    /// takes a tag no version has used (above every tag in `used`).
    static func tags(
        for entities: [(name: String, originalName: String?)],
        continuing old: ModelSchema,
        earlier: [ModelSchema] = [],
        used: Set<EntityTag>
    ) -> [String: EntityTag] {
        var tags: [String: EntityTag] = [:]
        var claimed = Set<String>()
        for entity in entities {
            if let same = old.entity(named: entity.name), !claimed.contains(same.name) {
                tags[entity.name] = same.tag
                claimed.insert(same.name)
            }
        }
        for entity in entities where tags[entity.name] == nil {
            if let original = entity.originalName, let renamed = old.entity(named: original),
                !claimed.contains(renamed.name)
            {
                tags[entity.name] = renamed.tag
                claimed.insert(renamed.name)
            }
        }
        for entity in entities where tags[entity.name] == nil {
            let taken = Set(tags.values)
            for schema in earlier {
                if let previous = schema.entity(named: entity.name), !taken.contains(previous.tag),
                    old.entity(tag: previous.tag) == nil
                {
                    tags[entity.name] = previous.tag
                    break
                }
            }
        }
        var next = (used.max() ?? 0) + 1
        for entity in entities.sorted(by: { $0.name < $1.name }) where tags[entity.name] == nil {
            tags[entity.name] = next
            next += 1
        }
        return tags
    }
}

/// How the value of one entity's record in an older version becomes its value now.
struct EntityTranscoder: Sendable {
    /// Where each property of the new version comes from.
    enum Step: Sendable, Equatable {
        /// The old property at this index, unchanged.
        case copy(Int)
        /// The old property at this index, converted.
        case convert(Int, ValueShape, ValueShape, defaultValue: [UInt8])
        /// A value the old version did not have: the property's default (or "none").
        case constant([UInt8])
    }

    let old: ModelSchema.Entity
    let new: ModelSchema.Entity
    private(set) var steps: [Step] = []
    /// Per new property, the index of the old property it continues (by name or original
    /// name), also where the change cannot be inferred; nil for a property the old version
    /// lacked.
    private(set) var sources: [Int?] = []
    private(set) var problems: [String] = []
    private let oldShapes: [ValueShape]

    init(
        from old: ModelSchema.Entity,
        to new: ModelSchema.Entity,
        in newSchema: ModelSchema,
        old oldSchema: ModelSchema
    ) {
        self.old = old
        self.new = new
        self.oldShapes = old.properties.map(ValueShape.init)
        var claimed = Set<Int>()
        for property in new.properties {
            let index =
                old.properties.firstIndex { $0.name == property.name }
                ?? property.originalName.flatMap { original in
                    old.properties.firstIndex { $0.name == original }
                }
            guard let index, !claimed.contains(index) else {
                steps.append(.constant(Self.absentValue(of: property)))
                sources.append(nil)
                continue
            }
            claimed.insert(index)
            sources.append(index)
            let before = old.properties[index]
            let from = ValueShape(before)
            let to = ValueShape(property)
            if let problem = Self.problem(
                from: before,
                to: property,
                entity: new.name,
                oldSchema: oldSchema,
                newSchema: newSchema
            ) {
                problems.append(problem)
                steps.append(.constant(Self.absentValue(of: property)))
            } else if from == to {
                steps.append(.copy(index))
            } else {
                steps.append(
                    .convert(index, from, to, defaultValue: Self.absentValue(of: property))
                )
            }
        }
    }

    /// Whether old records already have the new layout.
    var isIdentity: Bool {
        steps.count == old.properties.count
            && steps.enumerated().allSatisfy { index, step in step == .copy(index) }
    }

    /// The old name of the new property `name`, or nil for a property the old version lacked.
    func sourceName(of name: String) -> String? {
        guard let index = new.properties.firstIndex(where: { $0.name == name }) else { return nil }
        switch steps[index] {
        case .copy(let source), .convert(let source, _, _, _): return old.properties[source].name
        case .constant: return nil
        }
    }

    /// The encoded value a property takes where the old version had none: an attribute's
    /// default, "no destination" for a relationship.
    static func absentValue(of property: ModelSchema.Property) -> [UInt8] {
        switch property.kind {
        case .relationship: return [0]  // a to-one key 0, or a to-many count 0
        case .attribute:
            if let bytes = property.defaultBytes { return bytes }
            // Written by a version without defaults in its schema: nil where allowed.
            if property.isOptional {
                return property.type == .codable ? [4] + Array("null".utf8) : [0]
            }
            return []
        }
    }

    /// Why the old property cannot be inferred to become the new one, as one line, or nil.
    static func problem(
        from old: ModelSchema.Property,
        to new: ModelSchema.Property,
        entity: String,
        oldSchema: ModelSchema,
        newSchema: ModelSchema
    ) -> String? {
        let place = "'\(entity).\(new.name)'"
        switch (old.kind, new.kind) {
        case (.attribute, .attribute):
            guard let from = old.type, let to = new.type else { return nil }
            if old.isOptional, !new.isOptional, new.defaultBytes == nil {
                return "\(place): optional \(from.rawValue) became required without a default; "
                    + "give the attribute a default value"
            }
            if from == to || ValueShape.widens(from, to) { return nil }
            return "\(place): type \(from.rawValue) -> \(to.rawValue) cannot be inferred (only "
                + "widening is); keep '\(old.name)' and declare the new type under a new name, "
                + "then copy the values in code"
        case (.relationship, .relationship):
            let oldDestination = old.destination.flatMap { name in
                oldSchema.entity(named: name)
            }
            let newDestination = new.destination.flatMap { name in
                newSchema.entity(named: name)
            }
            if let oldDestination, let newDestination, oldDestination.tag != newDestination.tag {
                return "\(place): destination \(oldDestination.name) -> \(newDestination.name) "
                    + "cannot be inferred; declare the new relationship under a new name"
            }
            if old.isToMany, !new.isToMany {
                return "\(place): to-many -> to-one cannot be inferred (which destination would "
                    + "stay?); keep it to-many, or declare the to-one under a new name"
            }
            return nil
        default:
            return "\(place): \(old.kind.rawValue) -> \(new.kind.rawValue) cannot be inferred; "
                + "give the new property a new name"
        }
    }

    /// Translates the value of one old record into the new layout.
    ///
    /// - Parameters:
    ///   - value: The old record's value.
    ///   - blob: Reads an external blob, for data that moves inline.
    /// - Returns: The value in the new layout.
    /// - Throws: ``PayloadError`` for a value its version cannot decode, or what `blob` throws.
    func transcode(
        _ value: UnsafeRawBufferPointer,
        blob: (BlobID) throws -> Data
    ) throws -> [UInt8] {
        var ranges: [Range<Int>] = []
        try findRanges(in: value, into: &ranges)
        var writer = PayloadWriter()
        writer.write(varint: UInt64(steps.count))
        for index in steps.indices {
            try write(step: index, of: value, ranges: ranges, blob: blob, into: &writer)
        }
        return writer.bytes
    }

    /// The byte range of each old property's value in the old record's `value`, into `ranges`
    /// (replacing what it held).
    /// - Throws: ``PayloadError`` for a value its version cannot decode.
    func findRanges(in value: UnsafeRawBufferPointer, into ranges: inout [Range<Int>]) throws {
        var reader = PayloadReader(value)
        let count = try reader.readVarint()
        guard count == UInt64(oldShapes.count) else {
            throw PayloadError.malformed(
                offset: 0,
                "a payload of \(old.name) with \(count) properties; its version has "
                    + "\(oldShapes.count)"
            )
        }
        // Written in place: a rewriting stage finds the ranges of every record it visits.
        if ranges.count != oldShapes.count {
            ranges = Array(repeating: 0..<0, count: oldShapes.count)
        }
        try ranges.withUnsafeMutableBufferPointer { ranges throws(PayloadError) in
            for index in oldShapes.indices {
                let start = reader.offset
                try oldShapes[index].skip(&reader)
                ranges[index] = start..<reader.offset
            }
        }
    }

    /// Writes the new property at `index` of the old record's `value`, whose old properties lie
    /// at `ranges` (``findRanges(in:into:)``).
    func write(
        step index: Int,
        of value: UnsafeRawBufferPointer,
        ranges: [Range<Int>],
        blob: (BlobID) throws -> Data,
        into writer: inout PayloadWriter
    ) throws {
        switch steps[index] {
        case .copy(let source):
            writer.write(bytes: UnsafeRawBufferPointer(rebasing: value[ranges[source]]))
        case .constant(let bytes):
            writer.write(raw: bytes)
        case .convert(let source, let from, let to, let defaultValue):
            try ValueShape.convert(
                UnsafeRawBufferPointer(rebasing: value[ranges[source]]),
                from: from,
                to: to,
                defaultValue: defaultValue,
                blob: blob,
                into: &writer
            )
        }
    }
}
