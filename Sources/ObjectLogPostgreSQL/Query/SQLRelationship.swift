import ObjectLog

/// Where a relationship's keys lie in the PostgreSQL schema (``SchemaMapping``), for the
/// subqueries of an ``SQLCondition``.
enum SQLRelationship: Equatable {
    /// A to-one relationship: a column of the source's table holding the destination's key.
    case column(name: String, destinationTable: String)
    /// A to-many relationship whose inverse is to-one: the inverse's column, in the
    /// destination's table, holds the source's key.
    case inverseColumn(name: String, destinationTable: String)
    /// A many-to-many relationship, or a to-many one without an inverse: a join table, whose
    /// `sourceColumn` holds the source's key and `destinationColumn` the destination's.
    case joinTable(
        name: String,
        sourceColumn: String,
        destinationColumn: String,
        destinationTable: String
    )

    /// The table of the destination's rows.
    var destinationTable: String {
        switch self {
        case .column(_, let table), .inverseColumn(_, let table), .joinTable(_, _, _, let table):
            table
        }
    }

    /// How `relationship` lies in `mapping`, the mapping of `schema`.
    ///
    /// - Throws: ``PostgresError/Code/invalidParameter`` when the schema has no such
    ///   relationship, or the mapping no table or column for it.
    init(
        _ relationship: StoreRelationship,
        schema: ModelSchema,
        mapping: SchemaMapping
    ) throws(PostgresError) {
        guard let entity = schema.entity(named: relationship.entity),
            let property = entity.property(named: relationship.name),
            property.kind == .relationship,
            let destinationName = property.destination,
            let destination = schema.entity(named: destinationName),
            let destinationTable = mapping.table(of: destinationName)
        else {
            throw PostgresError(
                .invalidParameter,
                "the model has no relationship '\(relationship.entity).\(relationship.name)'"
            )
        }
        let inverse = property.inverse.flatMap { destination.property(named: $0) }
        if !property.isToMany {
            guard mapping.table(of: entity.name)?.column(named: property.name) != nil else {
                throw Self.unmapped(relationship)
            }
            self = .column(name: property.name, destinationTable: destinationTable.name)
        } else if let inverse, !inverse.isToMany {
            guard destinationTable.column(named: inverse.name) != nil else {
                throw Self.unmapped(relationship)
            }
            self = .inverseColumn(name: inverse.name, destinationTable: destinationTable.name)
        } else {
            // Named as SchemaMapping names it: from the relationship and its inverse, the first
            // in order, where the entity that declares the relationship is the source.
            let declaring = schema.declaringEntity(of: property.name, in: entity.name)
            let own = "\(declaring)_\(property.name)"
            var names = [own]
            if let inverse { names.append("\(destinationName)_\(inverse.name)") }
            let name = names.sorted()[0]
            guard mapping.joinTables.contains(where: { $0.name == name }) else {
                throw Self.unmapped(relationship)
            }
            let isSource = name == own
            self = .joinTable(
                name: name,
                sourceColumn: isSource ? "source" : "destination",
                destinationColumn: isSource ? "destination" : "source",
                destinationTable: destinationTable.name
            )
        }
    }

    private static func unmapped(_ relationship: StoreRelationship) -> PostgresError {
        PostgresError(
            .invalidParameter,
            "the schema mapping has no column or table of '\(relationship.entity)."
                + "\(relationship.name)'"
        )
    }
}

extension SchemaMapping {
    /// The table that holds the rows of `entity`: its hierarchy's root's.
    func table(of entity: String) -> Table? {
        tables.first { $0.entities.values.contains(entity) }
    }
}

extension SchemaMapping.Table {
    /// The column with a name.
    func column(named name: String) -> SchemaMapping.Column? {
        columns.first { $0.name == name }
    }
}

extension SchemaMapping.Column {
    /// Whether the column may hold `NULL`: a subentity's attribute is `NULL` in the rows of
    /// other entities, an optional attribute or a to-one key in any.
    var isNullable: Bool {
        !definition.contains("NOT NULL") && !definition.contains("PRIMARY KEY")
    }
}

extension ModelSchema {
    /// The highest entity of `entity`'s superentities (or itself) that has the property: the
    /// one that declares it.
    func declaringEntity(of property: String, in entity: String) -> String {
        var declaring = entity
        for ancestor in superentities(of: entity) {
            guard self.entity(named: ancestor)?.property(named: property) != nil else { break }
            declaring = ancestor
        }
        return declaring
    }
}
