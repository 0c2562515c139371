import Foundation
import ObjectLogStore
import StoreTestSupport
import TestSupport
import Testing

@testable import ObjectLog
@testable import ObjectLogPostgreSQL

/// A model a random walk edits, described as a store records it (classes cannot be made at
/// run time): entities with attributes and relationships, and a hierarchy.
struct WalkModel {
    struct Attribute {
        var name: String
        var type: AttributeType
        var isOptional: Bool
        var isExternal = false
        var originalName: String?
        /// The value objects saved before the attribute existed take.
        var defaultValue: StoredValue
    }

    struct Relation {
        var name: String
        var destination: String
        var inverse: String?
        var isToMany: Bool
        var isOrdered = false
        var originalName: String?
    }

    struct Entity {
        var name: String
        var tag: UInt32
        var superentity: String?
        var isAbstract = false
        var attributes: [Attribute] = []
        var relations: [Relation] = []
        var originalName: String?
        var unique: [[String]] = []
    }

    var entities: [Entity]
    var nextTag: UInt32 = 10
    var nextName = 0

    func entity(_ name: String) -> Entity? { entities.first { $0.name == name } }

    func index(_ name: String) -> Int? { entities.firstIndex { $0.name == name } }

    /// The entity's own and inherited properties, inherited first, as a schema lists them.
    func properties(of entity: Entity) -> [ModelSchema.Property] {
        let inherited = entity.superentity.flatMap { self.entity($0) }.map(properties(of:)) ?? []
        return inherited + entity.attributes.map(Self.property(_:))
            + entity.relations.map(Self.property(_:))
    }

    func constraints(of entity: Entity) -> [[String]] {
        (entity.superentity.flatMap { self.entity($0) }.map(constraints(of:)) ?? []) + entity.unique
    }

    var schema: ModelSchema {
        ModelSchema(
            entities: entities.sorted { $0.tag < $1.tag }.map { entity in
                ModelSchema.Entity(
                    name: entity.name,
                    tag: entity.tag,
                    properties: properties(of: entity),
                    uniquenessConstraints: constraints(of: entity),
                    originalName: entity.originalName,
                    superentity: entity.superentity,
                    isAbstract: entity.isAbstract
                )
            }
        )
    }

    static func property(_ attribute: Attribute) -> ModelSchema.Property {
        var property = ModelSchema.Property.attribute(
            attribute.name,
            type: attribute.type,
            isOptional: attribute.isOptional,
            isExternal: attribute.isExternal,
            originalName: attribute.originalName
        )
        property.defaultValue = ModelSchema.Property.hex(
            encoded(attribute.defaultValue, as: property)
        )
        return property
    }

    static func property(_ relation: Relation) -> ModelSchema.Property {
        ModelSchema.Property(
            name: relation.name,
            kind: .relationship,
            type: nil,
            isOptional: !relation.isToMany,
            isUnique: false,
            isExternal: false,
            destination: relation.destination,
            inverse: relation.inverse,
            isToMany: relation.isToMany,
            isOrdered: relation.isOrdered,
            deleteRule: .nullify,
            minimumCount: 0,
            maximumCount: relation.isToMany ? 0 : 1,
            originalName: relation.originalName,
            defaultValue: nil
        )
    }

    /// The encoding of one value of `property`: a payload of it alone, without the count.
    static func encoded(_ value: StoredValue, as property: ModelSchema.Property) -> [UInt8] {
        var property = property
        property.defaultValue = nil
        let entity = ModelSchema.Entity(
            name: "Value",
            tag: 1,
            properties: [property],
            uniquenessConstraints: []
        )
        return Array((try? StoreInspector.encode([value], entity: entity))?.dropFirst() ?? [])
    }

    mutating func freshName(_ prefix: String) -> String {
        nextName += 1
        return "\(prefix)\(nextName)"
    }
}

@Suite(
    "PostgreSQL migrations against the engine's translation",
    .enabled(if: TestServer.runs, TestServer.skipReason)
)
struct MigrationDifferentialTests {
    static let types: [AttributeType] = [
        .bool, .int8, .int16, .int32, .int64, .uint8, .uint16, .uint32, .float, .double,
        .string, .date, .data, .uuid,
    ]

    /// A random value of `type` (nil only when `optional`); `unique` goes into strings.
    static func value(
        _ type: AttributeType,
        optional: Bool,
        unique: Int,
        using generator: inout SeededGenerator
    ) -> StoredValue {
        if optional, Int.random(in: 0..<4, using: &generator) == 0 { return .null }
        switch type {
        case .bool: return .bool(Bool.random(using: &generator))
        case .int8: return .int(Int64(Int8.random(in: .min ... .max, using: &generator)))
        case .int16: return .int(Int64(Int16.random(in: .min ... .max, using: &generator)))
        case .int32: return .int(Int64(Int32.random(in: .min ... .max, using: &generator)))
        case .int64: return .int(Int64.random(in: .min ... .max, using: &generator))
        case .uint8: return .uint(UInt64(UInt8.random(in: 0 ... .max, using: &generator)))
        case .uint16: return .uint(UInt64(UInt16.random(in: 0 ... .max, using: &generator)))
        case .uint32: return .uint(UInt64(UInt32.random(in: 0 ... .max, using: &generator)))
        case .uint64: return .uint(UInt64.random(in: 0 ... .max, using: &generator))
        case .float: return .float(Float(Int.random(in: -1000...1000, using: &generator)) / 8)
        case .double: return .double(Double(Int.random(in: -1000...1000, using: &generator)) / 16)
        case .string: return .string("é'\"\\ \(unique)")
        case .date:
            return .date(
                Date(
                    timeIntervalSinceReferenceDate: Double(
                        Int.random(in: 0...9999, using: &generator)
                    )
                )
            )
        case .data:
            // Now and then larger than the store's external threshold.
            let count = Int.random(in: 0..<5, using: &generator) == 0 ? 20_000 : 7
            return .data(Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* (unique | 1)) }))
        case .uuid:
            return .uuid(
                UUID(
                    uuid: (
                        UInt8(unique & 255), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
                        UInt8(unique >> 8 & 255)
                    )
                )
            )
        default: return .null
        }
    }

    static func attribute(
        _ model: inout WalkModel,
        using generator: inout SeededGenerator
    ) -> WalkModel.Attribute {
        let type = types.randomElement(using: &generator)!
        let optional = Bool.random(using: &generator)
        return WalkModel.Attribute(
            name: model.freshName("p"),
            type: type,
            isOptional: optional,
            isExternal: type == .data && Bool.random(using: &generator),
            defaultValue: value(type, optional: false, unique: 0, using: &generator)
        )
    }

    /// The first model: `A` with a to-one to `B` (whose inverse may be ordered) and a
    /// many-to-many with `C`; now and then a subentity `A2`.
    static func firstModel(using generator: inout SeededGenerator) -> WalkModel {
        var model = WalkModel(entities: [])
        func attributes(_ count: Int) -> [WalkModel.Attribute] {
            (0..<count).map { _ in attribute(&model, using: &generator) }
        }
        var a = WalkModel.Entity(name: "A", tag: 1, superentity: nil)
        a.attributes = attributes(Int.random(in: 1...3, using: &generator))
        a.relations = [
            WalkModel.Relation(name: "b", destination: "B", inverse: "as", isToMany: false),
            WalkModel.Relation(name: "cs", destination: "C", inverse: "as", isToMany: true),
        ]
        var b = WalkModel.Entity(name: "B", tag: 2, superentity: nil)
        b.attributes = attributes(Int.random(in: 1...3, using: &generator))
        b.relations = [
            WalkModel.Relation(
                name: "as",
                destination: "A",
                inverse: "b",
                isToMany: true,
                isOrdered: Bool.random(using: &generator)
            )
        ]
        var c = WalkModel.Entity(name: "C", tag: 3, superentity: nil)
        c.attributes = attributes(Int.random(in: 1...2, using: &generator))
        c.relations = [
            WalkModel.Relation(name: "as", destination: "A", inverse: "cs", isToMany: true)
        ]
        model.entities = [a, b, c]
        if Bool.random(using: &generator) {
            var sub = WalkModel.Entity(name: "A2", tag: 4, superentity: "A")
            sub.attributes = attributes(Int.random(in: 1...2, using: &generator))
            model.entities.append(sub)
        }
        return model
    }

    /// One random edit of `model`, as a later version makes it; false when the edit chosen
    /// does not apply.
    static func edit(
        _ model: inout WalkModel,
        using generator: inout SeededGenerator
    ) -> Bool {
        let entityIndex = model.entities.indices.randomElement(using: &generator)!
        let entity = model.entities[entityIndex]
        let attributeIndex = entity.attributes.indices.randomElement(using: &generator)
        switch Int.random(in: 0..<14, using: &generator) {
        case 0:  // rename an attribute
            guard let index = attributeIndex else { return false }
            let old = entity.attributes[index].name
            model.entities[entityIndex].attributes[index].name = model.freshName("r")
            // Renamed twice in one version: it continues the stored one all the same.
            model.entities[entityIndex].attributes[index].originalName =
                entity.attributes[index].originalName ?? old
            for other in model.entities.indices {
                model.entities[other].unique = model.entities[other].unique.map { group in
                    group.map {
                        $0 == old ? model.entities[entityIndex].attributes[index].name : $0
                    }
                }
            }
        case 1:  // widen
            guard let index = attributeIndex,
                let wider = lightweightWidenings[entity.attributes[index].type]?.randomElement(
                    using: &generator
                )
            else { return false }
            model.entities[entityIndex].attributes[index].type = wider
            model.entities[entityIndex].attributes[index].defaultValue = value(
                wider,
                optional: false,
                unique: 1,
                using: &generator
            )
        case 2:  // optional to required, or back
            guard let index = attributeIndex else { return false }
            model.entities[entityIndex].attributes[index].isOptional.toggle()
        case 3:  // to or from external storage
            guard let index = attributeIndex, entity.attributes[index].type == .data else {
                return false
            }
            model.entities[entityIndex].attributes[index].isExternal.toggle()
        case 4:  // a new attribute
            model.entities[entityIndex].attributes.append(attribute(&model, using: &generator))
        case 5:  // a removed attribute
            guard let index = attributeIndex, entity.attributes.count > 1 else { return false }
            let name = entity.attributes[index].name
            model.entities[entityIndex].attributes.remove(at: index)
            model.entities[entityIndex].unique.removeAll { $0.contains(name) }
        case 6:  // a renamed entity
            let old = entity.name
            let new = model.freshName("E")
            model.entities[entityIndex].name = new
            model.entities[entityIndex].originalName = entity.originalName ?? old
            for other in model.entities.indices {
                if model.entities[other].superentity == old {
                    model.entities[other].superentity = new
                }
                for relation in model.entities[other].relations.indices
                where model.entities[other].relations[relation].destination == old {
                    model.entities[other].relations[relation].destination = new
                }
            }
        case 7:  // C removed, with the relationship of A to it
            guard let c = model.index("C") ?? model.entities.firstIndex(where: { $0.tag == 3 })
            else { return false }
            let name = model.entities[c].name
            model.entities.remove(at: c)
            for other in model.entities.indices {
                model.entities[other].relations.removeAll { $0.destination == name }
            }
        case 8:  // a new entity
            var added = WalkModel.Entity(
                name: model.freshName("N"),
                tag: model.nextTag,
                superentity: nil
            )
            model.nextTag += 1
            added.attributes = [attribute(&model, using: &generator)]
            model.entities.append(added)
        case 9:  // the inverse of A's to-one made ordered, or unordered
            guard let b = model.entities.firstIndex(where: { $0.tag == 2 }),
                let relation = model.entities[b].relations.firstIndex(where: {
                    $0.isToMany && $0.inverse != nil
                }),
                let a = model.entities.firstIndex(where: { $0.tag == 1 }),
                model.entities[a].relations.contains(where: {
                    $0.name == model.entities[b].relations[relation].inverse && !$0.isToMany
                })
            else { return false }
            model.entities[b].relations[relation].isOrdered.toggle()
        case 10:  // A's to-one to B made a to-many: a many-to-many with its inverse
            guard let a = model.entities.firstIndex(where: { $0.tag == 1 }),
                let relation = model.entities[a].relations.firstIndex(where: { !$0.isToMany })
            else { return false }
            model.entities[a].relations[relation].isToMany = true
        case 11:  // a renamed relationship, its inverse told
            guard let relation = entity.relations.indices.randomElement(using: &generator)
            else { return false }
            let old = entity.relations[relation].name
            let new = model.freshName("q")
            model.entities[entityIndex].relations[relation].name = new
            model.entities[entityIndex].relations[relation].originalName =
                entity.relations[relation].originalName ?? old
            let destination = entity.relations[relation].destination
            guard let inverse = entity.relations[relation].inverse,
                let other = model.index(destination),
                let back = model.entities[other].relations.firstIndex(where: {
                    $0.name == inverse
                })
            else { return true }
            model.entities[other].relations[back].inverse = new
        case 12:  // B under a new abstract superentity
            guard let b = model.entities.firstIndex(where: { $0.tag == 2 }),
                model.entities[b].superentity == nil
            else { return false }
            var parent = WalkModel.Entity(
                name: model.freshName("P"),
                tag: model.nextTag,
                superentity: nil,
                isAbstract: true
            )
            model.nextTag += 1
            parent.attributes = [attribute(&model, using: &generator)]
            model.entities[b].superentity = parent.name
            model.entities.append(parent)
        default:  // a uniqueness constraint on a string attribute, added or removed
            guard let index = entity.attributes.firstIndex(where: { $0.type == .string }),
                entity.superentity == nil
            else { return false }
            let name = entity.attributes[index].name
            if model.entities[entityIndex].unique.contains([name]) {
                model.entities[entityIndex].unique.removeAll { $0 == [name] }
            } else {
                model.entities[entityIndex].unique.append([name])
            }
        }
        return true
    }

    /// A value as the engine reads it: external data as its bytes, a reference to an object
    /// that is gone as none, an unordered list in key order.
    static func normalized(
        _ value: StoredValue,
        _ property: ModelSchema.Property,
        live: Set<ObjectKey>,
        store: PostgresStore
    ) throws -> StoredValue {
        switch value {
        case .externalData(let id, _): return .data(try store.readBlob(id))
        case .toOne(let key?) where !live.contains(key): return .toOne(nil)
        case .toMany(let keys):
            let kept = keys.filter(live.contains)
            return .toMany(property.isOrdered ? kept : kept.sorted())
        default: return value
        }
    }

    /// A schema in one line: each entity with its superentity and properties.
    static func describe(_ schema: ModelSchema) -> String {
        schema.entities.map { entity in
            entity.name + (entity.superentity.map { ":" + $0 } ?? "") + "("
                + entity.properties.map { "\($0.name) \($0.summary)" }.joined(separator: ", ")
                + ")"
                + (entity.uniquenessConstraints.isEmpty
                    ? "" : " unique \(entity.uniquenessConstraints)")
        }.joined(separator: "; ")
    }

    /// A uniqueness constraint of `schema` that two of the `objects` break (non-nil values
    /// equal, as SQL compares them), described; nil when none does.
    static func duplicate(
        in objects: [ObjectKey: (tag: EntityTag, payload: [UInt8])],
        of schema: ModelSchema,
        store: PostgresStore
    ) throws -> String? {
        for owner in schema.entities {
            let inherited =
                owner.superentity.flatMap { schema.entity(named: $0) }?.uniquenessConstraints ?? []
            for group in owner.uniquenessConstraints where !inherited.contains(group) {
                let family = Set(schema.family(of: owner.name).map(\.tag))
                var seen: Set<String> = []
                for (_, object) in objects where family.contains(object.tag) {
                    guard let entity = schema.entity(tag: object.tag) else { continue }
                    let values = try object.payload.withUnsafeBytes {
                        try StoreInspector.decode(payload: $0, entity: entity)
                    }
                    let chosen = values.filter { group.contains($0.name) }.map(\.value)
                    guard !chosen.contains(.null) else { continue }
                    let text = "\(chosen)"
                    if !seen.insert(text).inserted { return "\(owner.name) \(group): \(text)" }
                }
            }
        }
        return nil
    }

    @Test(
        "random schema edits: the rows a migration leaves read as the engine translates",
        arguments: 1...40
    )
    func randomWalks(seed: UInt64) throws {
        var generator = SeededGenerator(seed: seed)
        let url = try TestServer.freshDatabase()
        var model = Self.firstModel(using: &generator)
        let store = try PostgresStore(url: url, schema: model.schema)
        defer { try? store.close() }
        // What the engine reads: each object's key, entity and value in the current layout.
        var expected: [ObjectKey: (tag: EntityTag, payload: [UInt8])] = [:]
        var unique = 0

        /// Saves `count` new objects of every concrete entity, with relationships between the
        /// first ones.
        func insertObjects(_ count: Int, related: Bool) throws {
            let schema = model.schema
            var transaction = Transaction()
            if try store.liveCount(entity: ModelHistory.schemaEntityTag) == 0 {
                transaction.put(
                    key: try store.allocateKeys(1).lowerBound,
                    entity: ModelHistory.schemaEntityTag,
                    payload: Array(schema.canonicalJSON()),
                    isInsert: true
                )
            }
            var keys: [String: [ObjectKey]] = [:]
            for entity in schema.entities where !entity.isAbstract {
                keys[entity.name] = Array(try store.allocateKeys(count))
            }
            // Relationship values, both sides: A's to-one `b` and many-to-many `cs`.
            var toOne: [ObjectKey: ObjectKey] = [:]
            var pairs: [(ObjectKey, ObjectKey)] = []
            let aKeys = (keys["A"] ?? []) + (keys["A2"] ?? [])
            if related {
                for key in aKeys {
                    if let b = keys["B"]?.randomElement(using: &generator),
                        Bool.random(using: &generator)
                    {
                        toOne[key] = b
                    }
                    for c in keys["C"] ?? [] where Bool.random(using: &generator) {
                        pairs.append((key, c))
                    }
                }
            }
            for entity in schema.entities where !entity.isAbstract {
                for key in keys[entity.name] ?? [] {
                    var values: [StoredValue] = []
                    for property in entity.properties {
                        unique += 1
                        switch (property.kind, property.name) {
                        case (.attribute, _):
                            values.append(
                                Self.value(
                                    property.type!,
                                    optional: property.isOptional,
                                    unique: unique,
                                    using: &generator
                                )
                            )
                        case (.relationship, "b"):
                            values.append(
                                property.isToMany
                                    ? .toMany(toOne[key].map { [$0] } ?? []) : .toOne(toOne[key])
                            )
                        case (.relationship, "cs"):
                            values.append(.toMany(pairs.filter { $0.0 == key }.map(\.1).sorted()))
                        case (.relationship, "as") where entity.name == "B":
                            var list = toOne.filter { $0.value == key }.map(\.key).sorted()
                            if property.isOrdered { list.shuffle(using: &generator) }
                            values.append(.toMany(list))
                        case (.relationship, "as") where entity.name == "C":
                            values.append(.toMany(pairs.filter { $0.1 == key }.map(\.0).sorted()))
                        default:
                            values.append(property.isToMany ? .toMany([]) : .toOne(nil))
                        }
                    }
                    let payload = try StoreInspector.encode(values, entity: entity)
                    transaction.put(key: key, entity: entity.tag, payload: payload, isInsert: true)
                    expected[key] = (entity.tag, payload)
                }
            }
            _ = try store.commitSave(transaction, checking: [])
        }

        func check(_ context: String) throws {
            let schema = model.schema
            let live = Set(expected.keys)
            var actual: [ObjectKey: (tag: EntityTag, payload: [UInt8])] = [:]
            try store.forEachLiveObject(entity: nil) { key, tag, payload in
                guard tag != ModelHistory.schemaEntityTag else { return }
                actual[key] = (tag, Array(payload))
            }
            #expect(actual.keys.sorted() == expected.keys.sorted(), "\(context)")
            for (key, want) in expected.sorted(by: { $0.key < $1.key }) {
                guard let got = actual[key], let entity = schema.entity(tag: want.tag) else {
                    continue
                }
                #expect(got.tag == want.tag, "\(context): object \(key)")
                let gotValues = try got.payload.withUnsafeBytes {
                    try StoreInspector.decode(payload: $0, entity: entity)
                }
                let wantValues = try want.payload.withUnsafeBytes {
                    try StoreInspector.decode(payload: $0, entity: entity)
                }
                for (index, property) in entity.properties.enumerated() {
                    let have = try Self.normalized(
                        gotValues[index].value,
                        property,
                        live: live,
                        store: store
                    )
                    let should = try Self.normalized(
                        wantValues[index].value,
                        property,
                        live: live,
                        store: store
                    )
                    #expect(have == should, "\(context): \(entity.name)#\(key).\(property.name)")
                }
            }
        }

        // Now and then enough objects that the store writes the rewritten rows as a bulk
        // update (through a staging table) rather than row by row.
        try insertObjects(seed.isMultiple(of: 4) ? 70 : 3, related: true)
        try check("seed \(seed), version 1")
        for step in 1...4 {
            let before = model.schema
            let saved = model
            for index in model.entities.indices {
                model.entities[index].originalName = nil
                for attribute in model.entities[index].attributes.indices {
                    model.entities[index].attributes[attribute].originalName = nil
                }
                for relation in model.entities[index].relations.indices {
                    model.entities[index].relations[relation].originalName = nil
                }
            }
            var edits = 0
            while edits < Int.random(in: 1...3, using: &generator) {
                if Self.edit(&model, using: &generator) { edits += 1 }
            }
            let after = model.schema
            let context =
                "seed \(seed), step \(step): \(Self.describe(before)) -> \(Self.describe(after))"
            let migration = TableMigration(from: before, to: after)
            guard migration.problems.isEmpty else {
                Issue.record("\(context): the walk made a change that cannot be inferred")
                return
            }
            // What the engine reads after the migration: each record translated.
            var translated: [ObjectKey: (tag: EntityTag, payload: [UInt8])] = [:]
            for (key, record) in expected {
                let payload = try record.payload.withUnsafeBytes {
                    try migration.translate($0, entity: record.tag) { try store.readBlob($0) }
                }
                if let payload { translated[key] = (record.tag, payload) }
            }
            func migrate() throws -> Bool {
                try store.migrateTables(migration) {
                    var transaction = Transaction()
                    transaction.put(
                        key: try store.allocateKeys(1).lowerBound,
                        entity: ModelHistory.schemaEntityTag,
                        payload: Array(after.canonicalJSON()),
                        isInsert: true
                    )
                    return transaction
                }
            }
            if let duplicate = try Self.duplicate(in: translated, of: after, store: store) {
                // The engine refuses such a migration before it asks the store; asked anyway,
                // the store refuses it in its transaction, and writes nothing.
                let keyBefore = try store.nextObjectKey()
                let error = #expect(throws: ObjectLogError.self, "\(context): \(duplicate)") {
                    try migrate()
                }
                #expect(error?.code == .uniqueness, "\(context)")
                #expect(try store.nextObjectKey() == keyBefore, "\(context)")
                model = saved
                try check(context + ", refused")
                continue
            }
            #expect(try migrate(), "\(context)")
            // An unordered relationship keeps no order: what a store read of one is in any
            // order, which the next version that orders it keeps. The database reads it in key
            // order, which the expectation takes.
            expected = try translated.mapValues { record in
                guard let entity = after.entity(tag: record.tag) else { return record }
                var values = try record.payload.withUnsafeBytes {
                    try StoreInspector.decode(payload: $0, entity: entity)
                }.map(\.value)
                for (index, property) in entity.properties.enumerated()
                where property.isToMany && !property.isOrdered {
                    if case .toMany(let keys) = values[index] {
                        values[index] = .toMany(keys.sorted())
                    }
                }
                return (record.tag, try StoreInspector.encode(values, entity: entity))
            }
            try check(context)
            try insertObjects(1, related: false)
            try check(context + ", after a save")
        }
    }
}
