import Foundation
import ObjectLog

/// How a model's entities lie in PostgreSQL tables: the PostgreSQL store's schema.
///
/// As Core Data's SQLite store does, an entity hierarchy shares one table, named after its root
/// entity: a row's `objectlog_entity` column holds its entity's tag, and a column of a
/// subentity's own attribute is `NULL` in the rows of other entities. Every table has the
/// object's key (`objectlog_key`, the primary key) and the version of its last save
/// (`objectlog_version`, for optimistic locking).
///
/// - Attributes: one column each, typed as the value is (a `Date` as `double precision`
///   seconds since 2001-01-01, as Core Data's SQLite store keeps it, so that it comes back
///   exactly; a `Codable` value as `json`, whose text is kept as written; external data as
///   `bytea`). A non-optional attribute of the root entity is `NOT NULL`.
/// - To-one relationships: a column holding the destination's key, a foreign key checked at
///   the end of the save's transaction (a save inserts related objects in any order).
/// - To-many relationships whose inverse is to-one: nothing on their side (the inverse's column
///   says it); an ordered one keeps each object's position in a column beside that inverse.
/// - Many-to-many relationships, and to-many ones without an inverse: a join table of
///   source and destination keys (and positions, when ordered), one for a relationship and its
///   inverse.
/// - Uniqueness constraints: an exclusion constraint of equal values over their columns (a
///   unique index that can wait for the end of the save's transaction), limited to the rows
///   of the constraint's entity and its subentities; its name leads back to the entity and
///   attributes, so that a violation is reported as the engine reports one.
struct SchemaMapping: Sendable {
    /// A table of an entity hierarchy.
    struct Table: Sendable, Equatable {
        /// The root entity's name, which is the table's.
        var name: String
        /// The entities whose rows it holds, by tag.
        var entities: [UInt32: String]
        /// Its columns, in order, with their SQL types and constraints.
        var columns: [Column]
    }

    /// One column of a table.
    struct Column: Sendable, Equatable {
        var name: String
        /// The SQL type, with `NOT NULL` and references where they apply.
        var definition: String
    }

    /// A join table of a to-many relationship.
    struct JoinTable: Sendable, Equatable {
        var name: String
        var sourceTable: String
        var destinationTable: String
        var isOrdered: Bool
        /// Whether its rows are written from the source side's lists (the destination's
        /// otherwise: the ordered side's, when only that one is ordered).
        var writtenFromSource: Bool
    }

    /// Where a to-many relationship kept in a join table finds its rows.
    struct JoinSide: Sendable, Equatable {
        /// The join table.
        var table: String
        /// Whether the relationship's objects are the table's sources.
        var isSource: Bool
    }

    /// A uniqueness constraint's index.
    struct UniqueIndex: Sendable, Equatable {
        var name: String
        var table: String
        /// The entity that declares the constraint, and the constraint's attributes.
        var entity: String
        var attributes: [String]
        /// The tags of the entity and its subentities: the rows the constraint spans.
        var tags: [UInt32]
    }

    private(set) var tables: [Table] = []
    private(set) var joinTables: [JoinTable] = []
    private(set) var uniqueIndexes: [UniqueIndex] = []
    /// The join table of each to-many relationship kept in one, by `Entity.relationship` of the
    /// entity that declares it.
    private(set) var joinSides: [String: JoinSide] = [:]

    /// The columns every table starts with.
    static let keyColumn = "objectlog_key"
    static let entityColumn = "objectlog_entity"
    static let versionColumn = "objectlog_version"

    /// The mapping of `schema`.
    ///
    /// - Throws: ``PostgresError/Code/invalidParameter`` for a name PostgreSQL would cut
    ///   short (identifiers hold at most 63 bytes), which could make two names one.
    init(_ schema: ModelSchema) throws(PostgresError) {
        let byName = Dictionary(
            schema.entities.map { ($0.name, $0) },
            uniquingKeysWith: { a, _ in a }
        )
        func root(of entity: ModelSchema.Entity) -> ModelSchema.Entity {
            var current = entity
            while let parent = current.superentity.flatMap({ byName[$0] }) { current = parent }
            return current
        }
        func members(of entity: ModelSchema.Entity) -> [ModelSchema.Entity] {
            [entity]
                + schema.entities.filter { $0.superentity == entity.name }.flatMap {
                    members(of: $0)
                }
        }
        var joins: [String: JoinTable] = [:]
        for rootEntity in schema.entities where rootEntity.superentity == nil {
            let hierarchy = members(of: rootEntity)
            var table = Table(
                name: rootEntity.name,
                entities: Dictionary(
                    hierarchy.map { ($0.tag, $0.name) },
                    uniquingKeysWith: { a, _ in a }
                ),
                columns: [
                    Column(name: Self.keyColumn, definition: "bigint PRIMARY KEY"),
                    Column(name: Self.entityColumn, definition: "integer NOT NULL"),
                    Column(name: Self.versionColumn, definition: "bigint NOT NULL"),
                ]
            )
            var seen = Set(table.columns.map(\.name))
            for entity in hierarchy {
                for property in entity.properties where !seen.contains(property.name) {
                    let inRoot = entity.name == rootEntity.name
                    switch property.kind {
                    case .attribute:
                        guard let type = property.type else { continue }
                        let required = inRoot && !property.isOptional ? " NOT NULL" : ""
                        table.columns.append(
                            Column(name: property.name, definition: Self.sqlType(type) + required)
                        )
                        seen.insert(property.name)
                    case .relationship:
                        guard let destinationName = property.destination,
                            let destination = byName[destinationName]
                        else { continue }
                        let destinationTable = root(of: destination).name
                        let inverse = property.inverse.flatMap { name in
                            destination.properties.first { $0.name == name }
                        }
                        if !property.isToMany {
                            table.columns.append(
                                Column(
                                    name: property.name,
                                    definition: "bigint REFERENCES \(quoted(destinationTable)) "
                                        + "(\(Self.keyColumn)) DEFERRABLE INITIALLY DEFERRED"
                                )
                            )
                            seen.insert(property.name)
                        } else if let inverse, !inverse.isToMany {
                            // The inverse's column says it; an ordered one keeps positions there.
                            continue
                        } else {
                            // Many-to-many, or to-many without an inverse: one join table for
                            // the relationship and its inverse, named from the pair in order.
                            var names = ["\(entity.name)_\(property.name)"]
                            if let inverse { names.append("\(destination.name)_\(inverse.name)") }
                            let name = names.sorted()[0]
                            let sourceFirst = name == "\(entity.name)_\(property.name)"
                            joinSides["\(entity.name).\(property.name)"] = JoinSide(
                                table: name,
                                isSource: sourceFirst
                            )
                            if let inverse {
                                joinSides["\(destination.name).\(inverse.name)"] = JoinSide(
                                    table: name,
                                    isSource: !sourceFirst
                                )
                            }
                            if joins[name] == nil {
                                // This side's lists are written when it is ordered, or when
                                // neither side is.
                                let fromThisSide = property.isOrdered || inverse?.isOrdered != true
                                joins[name] = JoinTable(
                                    name: name,
                                    sourceTable: sourceFirst ? rootEntity.name : destinationTable,
                                    destinationTable: sourceFirst
                                        ? destinationTable : rootEntity.name,
                                    isOrdered: property.isOrdered || inverse?.isOrdered == true,
                                    writtenFromSource: fromThisSide == sourceFirst
                                )
                            }
                        }
                    }
                }
            }
            // The position of each object in an ordered to-many relationship whose inverse,
            // a to-one in this hierarchy, holds the owner.
            for entity in schema.entities {
                for property in entity.properties
                where property.kind == .relationship && property.isToMany && property.isOrdered {
                    guard let inverseName = property.inverse,
                        let destination = property.destination.flatMap({ byName[$0] }),
                        root(of: destination).name == rootEntity.name,
                        let inverse = destination.properties.first(where: { $0.name == inverseName }
                        ),
                        !inverse.isToMany
                    else { continue }
                    let column = inverseName + "_position"
                    if !seen.contains(column) {
                        table.columns.append(Column(name: column, definition: "bigint"))
                        seen.insert(column)
                    }
                }
            }
            for entity in hierarchy {
                let tags = members(of: entity).map(\.tag).sorted()
                // A subentity lists the constraints it inherits too; they span the entity that
                // declares them, and are indexed once, for it.
                let inherited =
                    entity.superentity.flatMap { byName[$0] }?.uniquenessConstraints ?? []
                for attributes in entity.uniquenessConstraints where !inherited.contains(attributes)
                {
                    uniqueIndexes.append(
                        UniqueIndex(
                            name: "\(rootEntity.name)_unique_\(uniqueIndexes.count + 1)",
                            table: rootEntity.name,
                            entity: entity.name,
                            attributes: attributes,
                            tags: tags
                        )
                    )
                }
            }
            tables.append(table)
        }
        joinTables = joins.values.sorted { $0.name < $1.name }
        let columnNames = tables.flatMap { table in table.columns.map(\.name) }
        let names = tables.map(\.name) + columnNames + joinTables.map(\.name)
        for name in names + uniqueIndexes.map(\.name) where name.utf8.count > 63 {
            throw PostgresError(
                .invalidParameter,
                "the name '\(name)' is longer than PostgreSQL's 63 bytes"
            )
        }
    }

    /// The SQL type of an attribute's column.
    static func sqlType(_ type: AttributeType) -> String {
        switch type {
        case .bool: "boolean"
        case .int8, .int16, .uint8: "smallint"
        case .int32, .uint16: "integer"
        case .int64, .uint32: "bigint"
        case .uint64: "numeric(20, 0)"
        case .float: "real"
        case .double, .date: "double precision"
        case .string, .url: "text"
        case .data: "bytea"
        case .uuid: "uuid"
        case .codable: "json"
        }
    }

    /// The statements that create the tables, join tables and uniqueness constraints, in an
    /// order PostgreSQL accepts (foreign keys are added once every table exists).
    var creationStatements: [String] {
        let made = tables.map(Self.statements(creating:))
        return made.map(\.create) + joinTables.map(Self.statement(creating:))
            + made.flatMap(\.references) + uniqueIndexes.map(Self.statement(creating:))
    }

    /// The statement that creates `table` without its foreign keys, and the statements that
    /// add those.
    static func statements(creating table: Table) -> (create: String, references: [String]) {
        var references: [String] = []
        let columns = table.columns.map { column -> String in
            if let reference = Self.reference(of: column, in: table) {
                references.append(reference)
                return "\(quoted(column.name)) \(Self.type(of: column))"
            }
            return "\(quoted(column.name)) \(column.definition)"
        }
        return (
            "CREATE TABLE \(quoted(table.name)) (\(columns.joined(separator: ", ")))", references
        )
    }

    /// A column's definition without its foreign key.
    static func type(of column: Column) -> Substring {
        guard let range = column.definition.range(of: " REFERENCES ") else {
            return column.definition[...]
        }
        return column.definition[..<range.lowerBound]
    }

    /// The statement that adds a column's foreign key; nil for a column without one.
    static func reference(of column: Column, in table: Table) -> String? {
        guard let range = column.definition.range(of: " REFERENCES ") else { return nil }
        return "ALTER TABLE \(quoted(table.name)) ADD FOREIGN KEY (\(quoted(column.name)))"
            + column.definition[range.lowerBound...]
    }

    /// The statement that creates a join table.
    static func statement(creating join: JoinTable) -> String {
        let key = Self.keyColumn
        return "CREATE TABLE \(quoted(join.name)) (source bigint NOT NULL REFERENCES "
            + "\(quoted(join.sourceTable)) (\(key)) ON DELETE CASCADE DEFERRABLE INITIALLY "
            + "DEFERRED, destination bigint NOT NULL REFERENCES "
            + "\(quoted(join.destinationTable)) (\(key)) ON DELETE CASCADE DEFERRABLE "
            + "INITIALLY DEFERRED, "
            + (join.isOrdered ? "position bigint NOT NULL, " : "")
            + "PRIMARY KEY (source, destination))"
    }

    // An exclusion constraint rather than a unique index: it can be deferred to the end of the
    // save's transaction (a partial unique index cannot), so that one save may move a value
    // from one object to another in any order, as the engine allows.
    /// The statement that adds a uniqueness constraint.
    static func statement(creating index: UniqueIndex) -> String {
        let columns = index.attributes.map { "\(quoted($0)) WITH =" }.joined(separator: ", ")
        let tags = index.tags.map(String.init).joined(separator: ", ")
        return "ALTER TABLE \(quoted(index.table)) ADD CONSTRAINT \(quoted(index.name)) EXCLUDE "
            + "USING btree (\(columns)) WHERE (\(Self.entityColumn) IN (\(tags))) "
            + "DEFERRABLE INITIALLY DEFERRED"
    }

    /// The entity and attributes of the constraint whose index PostgreSQL named in a
    /// violation.
    func constraint(named name: String) -> (entity: String, attributes: [String])? {
        uniqueIndexes.first { $0.name == name }.map { ($0.entity, $0.attributes) }
    }
}

/// `name` as a PostgreSQL identifier: in double quotes, with any double quote doubled, so that
/// no name can end the identifier early.
func quoted(_ name: String) -> String {
    // Spelt out rather than Foundation's `replacingOccurrences`, whose first call in a process
    // costs milliseconds of runtime lookups, paid again by every short-lived tool that opens
    // a store.
    var result = "\""
    result.reserveCapacity(name.utf8.count + 2)
    for character in name {
        if character == "\"" { result.append("\"") }
        result.append(character)
    }
    result.append("\"")
    return result
}
