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
    /// entity (if selected) and version columns.
    let fields: [Field]
    /// The entity of every row when the table holds one, whose entity column is then not
    /// selected: a column fewer for the server to send on every row of a large fetch.
    let soleEntity: UInt32?
    /// The `SELECT` list, reading the table as `t`.
    let selectList: String
    /// For each entity of the table: its schema, and the field of each of its properties.
    let entities: [UInt32: (entity: ModelSchema.Entity, fields: [Int])]
    /// External data below this many bytes is read inline.
    let externalThreshold: Int
    /// For each entity of the table: the binary column of each of its properties that has a
    /// column (attributes and to-ones); nil for a to-many.
    let binaryColumns: [UInt32: [BinaryColumn?]]

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
        soleEntity = table.entities.count == 1 ? table.entities.keys.first : nil
        var column = soleEntity == nil ? 3 : 2
        var entities: [UInt32: (entity: ModelSchema.Entity, fields: [Int])] = [:]
        var binaryColumns: [UInt32: [BinaryColumn?]] = [:]
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
            binaryColumns[tag] = entity.properties.map { property in
                property.kind == .relationship && property.isToMany
                    ? nil : BinaryColumn(property)
            }
        }
        self.fields = fields
        self.entities = entities
        self.binaryColumns = binaryColumns
        selectList = Self.selectList(
            of: fields,
            alias: "t",
            selectsEntity: soleEntity == nil,
            externalThreshold: externalThreshold
        )
    }

    /// The `SELECT` list, reading the table as `alias`.
    func selectList(alias: String) -> String {
        Self.selectList(
            of: fields,
            alias: alias,
            selectsEntity: soleEntity == nil,
            externalThreshold: externalThreshold
        )
    }

    private static func selectList(
        of fields: [Field],
        alias: String,
        selectsEntity: Bool,
        externalThreshold: Int
    ) -> String {
        let t = alias
        let key = quoted(Self.key)
        var list = ["\(t).\(key)"]
        if selectsEntity { list.append("\(t).\(quoted(Self.entityColumn))") }
        list.append("\(t).\(quoted(Self.version))")
        for field in fields {
            switch field.source {
            case .column(let name):
                list.append("\(t).\(quoted(name))")
            case .external(let name):
                let value = "\(t).\(quoted(name))"
                list.append("length(\(value))")
                list.append(
                    "CASE WHEN length(\(value)) >= \(externalThreshold) THEN sha256(\(value)) "
                        + "ELSE \(value) END"
                )
            case .inverseColumn(let destination, let inverse, let position):
                let order = (position.map { "c.\(quoted($0)), " } ?? "") + "c.\(key)"
                list.append(
                    "(SELECT string_agg(c.\(key)::text, ',' ORDER BY \(order)) FROM "
                        + "\(quoted(destination)) c WHERE c.\(quoted(inverse)) = \(t).\(key))"
                )
            case .join(let join, let isSource, let isOrdered):
                let this = isSource ? "source" : "destination"
                let other = isSource ? "destination" : "source"
                let order = isOrdered ? "j.position, j.\(other)" : "j.\(other)"
                list.append(
                    "(SELECT string_agg(j.\(other)::text, ',' ORDER BY \(order)) FROM "
                        + "\(quoted(join)) j WHERE j.\(this) = \(t).\(key))"
                )
            }
        }
        return list.joined(separator: ", ")
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

    /// How one property of an entity is read from a row: from which column, and how.
    struct ReadStep: Sendable {
        enum Kind: Sendable {
            case column(BinaryColumn)
            /// External data: its length, then its digest or bytes in the next column.
            case external(optional: Bool)
            /// A to-many: its keys as text.
            case keyList
        }

        var kind: Kind
        var column: Int
    }

    /// The steps that read each property of entity `tag`, in payload order; nil for an entity
    /// the table does not hold.
    func readSteps(of tag: UInt32) -> [ReadStep]? {
        guard let (entity, indices) = entities[tag], let columns = binaryColumns[tag] else {
            return nil
        }
        return indices.enumerated().map { position, index in
            let field = fields[index]
            switch field.source {
            case .column:
                // Every property with a column of its own (an attribute, a to-one) has a
                // binary column.
                let column = columns[position] ?? BinaryColumn(entity.properties[position])
                return ReadStep(kind: .column(column), column: field.firstColumn)
            case .external:
                let optional = columns[position]?.hasPresenceByte ?? false
                return ReadStep(kind: .external(optional: optional), column: field.firstColumn)
            case .inverseColumn, .join:
                return ReadStep(kind: .keyList, column: field.firstColumn)
            }
        }
    }

    /// Appends the payload of `row` to `writer`, after what it holds; returns the row's key,
    /// entity and version.
    ///
    /// `steps` caches the read steps of the entity of the rows before, which most rows share.
    func appendRecord(
        _ row: some RowValues,
        to writer: inout PayloadWriter,
        steps: inout (tag: UInt32, steps: [ReadStep])?
    ) throws(PostgresError) -> (key: ObjectKey, entity: UInt32, version: UInt64) {
        let versionColumn = soleEntity == nil ? 2 : 1
        guard let signedKey = row.int64(0),
            let tag = soleEntity ?? row.int32(1).map({ UInt32(bitPattern: $0) }),
            let signedVersion = row.int64(versionColumn), signedKey > 0, signedVersion >= 0
        else { throw Self.corrupt(table, "a row without its key, entity or version") }
        let (key, version) = (ObjectKey(signedKey), UInt64(signedVersion))
        if steps?.tag != tag {
            guard let found = readSteps(of: tag) else {
                throw Self.corrupt(table, "row \(key) is of entity \(tag), which the model lacks")
            }
            steps = (tag, found)
        }
        let entitySteps = steps!.steps
        writer.write(varint: UInt64(entitySteps.count))
        for (position, step) in entitySteps.enumerated() {
            let written: Bool
            switch step.kind {
            case .column(let column):
                written = column.appendPayload(of: row.value(step.column), to: &writer)
            case .external(let optional):
                written = appendExternal(
                    length: row.value(step.column),
                    bytes: row.value(step.column + 1),
                    optional: optional,
                    to: &writer
                )
            case .keyList:
                written = Self.appendKeyList(row.value(step.column), to: &writer)
            }
            guard written else { throw unreadable(key: key, tag: tag, position: position) }
        }
        return (key, tag, version)
    }

    /// The error of a column that does not hold a value of its property.
    private func unreadable(key: ObjectKey, tag: UInt32, position: Int) -> PostgresError {
        guard let (entity, indices) = entities[tag] else {
            return Self.corrupt(table, "row \(key) is of entity \(tag), which the model lacks")
        }
        return Self.corrupt(
            table,
            "row \(key): column '\(fields[indices[position]].name)' does not hold a value of "
                + "\(entity.name).\(entity.properties[position].name)"
        )
    }

    /// Appends an external `data` value: inline below the threshold, else a reference to the
    /// blob its digest names, whose bytes are read only when the engine asks for them.
    private func appendExternal(
        length: UnsafeRawBufferPointer?,
        bytes: UnsafeRawBufferPointer?,
        optional: Bool,
        to writer: inout PayloadWriter
    ) -> Bool {
        guard let length, let count = BinaryColumn.signed(length), let bytes else {
            guard length == nil, optional else { return false }
            writer.write(byte: 0)
            return true
        }
        if optional { writer.write(byte: 1) }
        if count < externalThreshold {
            writer.write(byte: 0)
            writer.write(varint: UInt64(bytes.count))
            writer.write(bytes: bytes)
        } else {
            guard bytes.count == 32, count >= 0 else { return false }
            writer.write(byte: 1)
            writer.write(bytes: bytes)
            writer.write(varint: UInt64(count))
        }
        return true
    }

    /// Appends a to-many value from its keys as text separated by commas (nil for none).
    private static func appendKeyList(
        _ text: UnsafeRawBufferPointer?,
        to writer: inout PayloadWriter
    ) -> Bool {
        guard let text, !text.isEmpty else {
            writer.write(varint: 0)
            return true
        }
        var keys: [ObjectKey] = []
        var current: ObjectKey = 0
        var digits = 0
        for byte in text {
            if byte == UInt8(ascii: ",") {
                guard digits > 0 else { return false }
                keys.append(current)
                (current, digits) = (0, 0)
                continue
            }
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte), digits < 19 else {
                return false
            }
            current = current * 10 + ObjectKey(byte - UInt8(ascii: "0"))
            digits += 1
        }
        guard digits > 0 else { return false }
        keys.append(current)
        writer.write(varint: UInt64(keys.count))
        for key in keys { writer.write(varint: key) }
        return true
    }

    static func corrupt(_ table: String, _ message: String) -> PostgresError {
        PostgresError(.statementFailed, "table '\(table)': \(message)")
    }
}
