import Foundation
import ObjectLog
import ObjectLogStore

/// A row as the engine's record: its key, entity, version and payload.
typealias StoredRow = RecordsPlan.Record

/// How the rows of one table become the engine's records and back: the columns a `SELECT`
/// reads for each property, and the parameters a put writes.
///
/// The engine hands a store each object as a payload (its encoding of the object's property
/// values); this store keeps the values in columns instead, so that the data is PostgreSQL's
/// own to query, constrain and back up. A payload is decoded by the stored schema into
/// ``StoredValue``s on the way in, and encoded from them on the way out.
struct RowLayout: Sendable {
    /// What a property reads from a row.
    enum Source: Sendable {
        /// A column of its own (attributes, to-one relationships).
        case column(String)
        /// External data: its length, then its digest or, below the external threshold, its
        /// bytes, so that large data is fetched only when the engine asks for it.
        case external(String)
        /// A to-many relationship whose inverse is a to-one: the destination rows whose
        /// inverse column holds this row's key, by their position when ordered.
        case inverseColumn(table: String, column: String, position: String?)
        /// A to-many relationship kept in a join table.
        case join(table: String, isSource: Bool, isOrdered: Bool)
    }

    /// One readable property: its name, where its value comes from, and where its columns
    /// start in the `SELECT`.
    struct Field: Sendable {
        var name: String
        var source: Source
        var firstColumn: Int
    }

    /// The table.
    let table: String
    /// Every property of the table's entities, each once, in `SELECT` order after the key,
    /// entity and version columns.
    let fields: [Field]
    /// The `SELECT` list, reading the table as `t`.
    let selectList: String
    /// For each entity of the table: its schema, and the field of each of its properties.
    let entities: [UInt32: (entity: ModelSchema.Entity, fields: [Int])]
    /// External data below this many bytes is read inline.
    let externalThreshold: Int

    static let key = SchemaMapping.keyColumn
    static let entityColumn = SchemaMapping.entityColumn
    static let version = SchemaMapping.versionColumn

    init(
        table: SchemaMapping.Table,
        mapping: SchemaMapping,
        schema: ModelSchema,
        externalThreshold: Int
    ) {
        self.table = table.name
        self.externalThreshold = externalThreshold
        let byName = Dictionary(
            schema.entities.map { ($0.name, $0) },
            uniquingKeysWith: { first, _ in first }
        )
        var fields: [Field] = []
        var fieldIndex: [String: Int] = [:]
        var column = 3
        var entities: [UInt32: (entity: ModelSchema.Entity, fields: [Int])] = [:]
        for tag in table.entities.keys.sorted() {
            guard let name = table.entities[tag], let entity = byName[name] else { continue }
            var indices: [Int] = []
            for property in entity.properties {
                if let index = fieldIndex[property.name] {
                    indices.append(index)
                    continue
                }
                let source = Self.source(of: property, in: entity, mapping: mapping, byName: byName)
                fieldIndex[property.name] = fields.count
                indices.append(fields.count)
                fields.append(Field(name: property.name, source: source, firstColumn: column))
                if case .external = source { column += 2 } else { column += 1 }
            }
            entities[tag] = (entity, indices)
        }
        self.fields = fields
        self.entities = entities
        let key = quoted(Self.key)
        var list = ["t.\(key)", "t.\(quoted(Self.entityColumn))", "t.\(quoted(Self.version))"]
        for field in fields {
            switch field.source {
            case .column(let name):
                list.append("t.\(quoted(name))")
            case .external(let name):
                let value = "t.\(quoted(name))"
                list.append("length(\(value))")
                list.append(
                    "CASE WHEN length(\(value)) >= \(externalThreshold) THEN sha256(\(value)) "
                        + "ELSE \(value) END"
                )
            case .inverseColumn(let destination, let inverse, let position):
                let order = (position.map { "c.\(quoted($0)), " } ?? "") + "c.\(key)"
                list.append(
                    "(SELECT string_agg(c.\(key)::text, ',' ORDER BY \(order)) FROM "
                        + "\(quoted(destination)) c WHERE c.\(quoted(inverse)) = t.\(key))"
                )
            case .join(let join, let isSource, let isOrdered):
                let this = isSource ? "source" : "destination"
                let other = isSource ? "destination" : "source"
                let order = isOrdered ? "j.position, j.\(other)" : "j.\(other)"
                list.append(
                    "(SELECT string_agg(j.\(other)::text, ',' ORDER BY \(order)) FROM "
                        + "\(quoted(join)) j WHERE j.\(this) = t.\(key))"
                )
            }
        }
        selectList = list.joined(separator: ", ")
    }

    private static func source(
        of property: ModelSchema.Property,
        in entity: ModelSchema.Entity,
        mapping: SchemaMapping,
        byName: [String: ModelSchema.Entity]
    ) -> Source {
        if property.kind == .attribute {
            return property.isExternal && property.type == .data
                ? .external(property.name) : .column(property.name)
        }
        guard property.isToMany else { return .column(property.name) }
        if let join = Self.joinSide(of: property, in: entity, mapping: mapping, byName: byName) {
            let isOrdered = mapping.joinTables.first { $0.name == join.table }?.isOrdered ?? false
            return .join(table: join.table, isSource: join.isSource, isOrdered: isOrdered)
        }
        // The inverse is a to-one, whose column in the destination's table holds the owner.
        let destination = property.destination.flatMap { byName[$0] }
        let table = destination.map { root(of: $0, byName: byName).name } ?? ""
        let inverse = property.inverse ?? ""
        return .inverseColumn(
            table: table,
            column: inverse,
            position: property.isOrdered ? inverse + "_position" : nil
        )
    }

    /// The join table of a to-many relationship, found by the entity that declares it (the
    /// nearest ancestor of `entity` that has it).
    static func joinSide(
        of property: ModelSchema.Property,
        in entity: ModelSchema.Entity,
        mapping: SchemaMapping,
        byName: [String: ModelSchema.Entity]
    ) -> SchemaMapping.JoinSide? {
        var current: ModelSchema.Entity? = entity
        var found: SchemaMapping.JoinSide?
        while let candidate = current {
            if let side = mapping.joinSides["\(candidate.name).\(property.name)"] { found = side }
            current = candidate.superentity.flatMap { byName[$0] }
        }
        return found
    }

    static func root(
        of entity: ModelSchema.Entity,
        byName: [String: ModelSchema.Entity]
    ) -> ModelSchema.Entity {
        var current = entity
        while let parent = current.superentity.flatMap({ byName[$0] }) { current = parent }
        return current
    }

    // MARK: Rows to records

    /// The record of a row read through ``selectList``: its key, entity, version and payload.
    func record(
        _ row: [String?]
    ) throws(PostgresError) -> StoredRow {
        guard let keyText = row[0], let key = ObjectKey(keyText),
            let tagText = row[1], let tag = UInt32(tagText),
            let versionText = row[2], let version = UInt64(versionText)
        else { throw Self.corrupt(table, "a row without its key, entity or version") }
        guard let (entity, indices) = entities[tag] else {
            throw Self.corrupt(table, "row \(key) is of entity \(tag), which the model lacks")
        }
        var values: [StoredValue] = []
        values.reserveCapacity(indices.count)
        for (property, index) in zip(entity.properties, indices) {
            let field = fields[index]
            guard let value = Self.value(of: property, field: field, row: row, layout: self)
            else {
                throw Self.corrupt(
                    table,
                    "row \(key): column '\(field.name)' does not hold a value of "
                        + "\(entity.name).\(property.name)"
                )
            }
            values.append(value)
        }
        do {
            return (key, tag, version, try StoreInspector.encode(values, entity: entity))
        } catch {
            throw Self.corrupt(table, "row \(key): \(error.message)")
        }
    }

    private static func value(
        of property: ModelSchema.Property,
        field: Field,
        row: [String?],
        layout: RowLayout
    ) -> StoredValue? {
        let text = row[field.firstColumn]
        switch field.source {
        case .column:
            return ColumnValue.value(text, type: property.kind == .attribute ? property.type : nil)
        case .external:
            guard let text, let length = Int(text) else { return text == nil ? .null : nil }
            guard let bytes = ColumnValue.value(row[field.firstColumn + 1], type: .data),
                case .data(let data) = bytes
            else { return nil }
            guard length >= layout.externalThreshold else { return .data(data) }
            return BlobID(bytes: Array(data)).map { .externalData($0, byteCount: length) }
        case .inverseColumn, .join:
            guard let text, !text.isEmpty else { return .toMany([]) }
            var keys: [ObjectKey] = []
            for part in text.split(separator: ",") {
                guard let key = ObjectKey(part) else { return nil }
                keys.append(key)
            }
            return .toMany(keys)
        }
    }

    static func corrupt(_ table: String, _ message: String) -> PostgresError {
        PostgresError(.statementFailed, "table '\(table)': \(message)")
    }
}
