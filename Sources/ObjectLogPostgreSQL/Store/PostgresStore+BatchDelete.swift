import Foundation
import ObjectLog
import ObjectLogStore

// A batch delete of objects with relationships runs as SQL statements in one transaction,
// following the delete rules as `ManagedObjectContext.delete(_:)` does, without loading the
// objects:
//
// 1. The objects the request selects go into a temporary table of the doomed.
// 2. Each relationship with the cascade rule adds the destinations of the doomed objects of
//    its entity, until a round adds none.
// 3. A destination left with fewer objects in its inverse than that relationship's minimum
//    count fails the request with the engine's validation error, as does a relationship with
//    the deny rule that still has a destination outside the doomed.
// 4. A nullify (or cascade) relationship with an inverse changes each destination that stays:
//    its inverse no longer holds the doomed object. Those objects go into a second table, are
//    written with this commit's version, and are reported as updated. A column that points
//    back at a doomed object is set to `NULL`; the rows of join tables go with the doomed rows
//    (their foreign keys cascade).
// 5. The doomed rows are deleted, table by table.
//
// A relationship with the no-action rule changes nothing, as in the engine. Validation and
// lifecycle hooks do not run, as for every batch request (BatchRequests.md).

extension PostgresStore {
    static let doomedTable = "objectlog_doomed"
    static let touchedTable = "objectlog_touched"

    /// One relationship of one entity, as a batch delete follows it from that entity's doomed
    /// rows (`d`) to its destination rows (`x`).
    struct DeleteEdge {
        var entity: ModelSchema.Entity
        var property: ModelSchema.Property
        var rule: DeleteRule
        /// `FROM … WHERE …` over the destination rows `x` of the doomed rows `d` of `entity`.
        var destinations: String
        /// The statement that sets to `NULL` the destinations' column that points back at a
        /// doomed object, when the inverse is kept in such a column.
        var nulling: String?
        /// The inverse relationship, when it has a minimum count: its name, that count, and
        /// the SQL expression of how many objects it keeps for a destination row `x` once the
        /// doomed are gone (nil for a to-one, which keeps none).
        var inverseMinimum: (name: String, minimum: Int, remaining: String?)?
    }

    /// Whether a batch delete of `tags`'s objects must follow delete rules: whether any of
    /// those entities has a relationship.
    func hasRelationships(_ tags: [UInt32]) -> Bool {
        tags.contains { tag in
            schema.entity(tag: tag)?.properties.contains { $0.kind == .relationship } ?? false
        }
    }

    /// Runs a batch delete of the rows `select` finds in `layout`'s table, following the
    /// delete rules (see the steps above); returns its commit, with the objects deleted and
    /// those updated.
    ///
    /// - Throws: ``ObjectLog/ObjectLogError/Code/validation`` when a deny rule refuses, or an
    ///   inverse would be left below its minimum count (nothing is written); ``PostgresError``
    ///   when a statement fails.
    func deleteFollowingRules(_ select: SQLSelect, in layout: RowLayout) throws -> StoreBatchCommit
    {
        let key = quoted(SchemaMapping.keyColumn)
        let entityColumn = quoted(SchemaMapping.entityColumn)
        let doomed = quoted(Self.doomedTable)
        let touched = quoted(Self.touchedTable)
        let edges = deleteEdges()
        return try inCommitTransaction {
            let (version, number, retention) = try takeCommitNumber()
            for table in [doomed, touched] {
                try connection.execute(
                    "CREATE TEMPORARY TABLE \(table) (key bigint PRIMARY KEY, entity integer NOT "
                        + "NULL) ON COMMIT DROP"
                )
            }
            let alias = select.alias
            try connection.execute(
                "INSERT INTO \(doomed) SELECT \(alias).\(key), \(alias).\(entityColumn) FROM "
                    + "\(quoted(layout.table)) AS \(alias)"
                    + (select.condition.map { " WHERE \($0)" } ?? ""),
                select.parameters
            )
            // Cascade until a round finds no object that is not doomed already.
            let cascading = edges.filter { $0.rule == .cascade }
            var added = !cascading.isEmpty
            while added {
                added = false
                for edge in cascading {
                    let rows = try connection.execute(
                        "INSERT INTO \(doomed) SELECT x.\(key), x.\(entityColumn) "
                            + "\(edge.destinations) ON CONFLICT DO NOTHING RETURNING key"
                    ).rows
                    if !rows.isEmpty { added = true }
                }
            }
            let staying = "NOT EXISTS (SELECT 1 FROM \(doomed) e WHERE e.key = x.\(key))"
            // The objects left below an inverse's minimum first, then the deny rules: the
            // order in which a context's save lists the two.
            for edge in edges where edge.rule == .nullify {
                guard let inverse = edge.inverseMinimum else { continue }
                let short = inverse.remaining.map { "(\($0)) < \(inverse.minimum)" } ?? "true"
                let found = try connection.execute(
                    "SELECT x.\(key), x.\(entityColumn), \(inverse.remaining ?? "0") "
                        + "\(edge.destinations) AND \(staying) AND \(short) ORDER BY x.\(key) LIMIT 1"
                ).rows.first
                guard let found, let object = found[0].flatMap({ ObjectKey($0) }),
                    let tag = found[1].flatMap({ Int32($0) }).map({ UInt32(bitPattern: $0) })
                else { continue }
                let id = ObjectID(
                    entityName: schema.entity(tag: tag)?.name ?? edge.property.destination ?? "",
                    key: object
                )
                throw ObjectLogError(
                    .validation,
                    inverse.minimum == 1 && inverse.remaining == nil
                        ? "\(id).\(inverse.name) is required but has no value"
                        : "\(id).\(inverse.name) has \(found[2] ?? "0") objects, fewer than the "
                            + "minimum \(inverse.minimum)",
                    objectID: id,
                    property: inverse.name
                )
            }
            for edge in edges where edge.rule == .deny {
                let found = try connection.execute(
                    "SELECT d.key, count(*) \(edge.destinations) AND \(staying) GROUP BY d.key "
                        + "ORDER BY d.key LIMIT 1"
                ).rows.first
                guard let found, let object = found[0].flatMap({ ObjectKey($0) }) else { continue }
                throw ObjectLogError(
                    .validation,
                    "cannot delete \(ObjectID(entityName: edge.entity.name, key: object)): its "
                        + "relationship '\(edge.property.name)' has the deny rule and "
                        + "\(found[1] ?? "some") related objects",
                    objectID: ObjectID(entityName: edge.entity.name, key: object),
                    property: edge.property.name
                )
            }
            for edge in edges where edge.rule == .nullify && edge.property.inverse != nil {
                try connection.execute(
                    "INSERT INTO \(touched) SELECT x.\(key), x.\(entityColumn) "
                        + "\(edge.destinations) AND \(staying) ON CONFLICT DO NOTHING"
                )
            }
            // The history's old values: every row this batch deletes or changes, as it is.
            var before: [ObjectKey: [UInt8]]?
            if Self.records(retention) {
                var rows: [ObjectKey: [UInt8]] = [:]
                var deletes = Transaction()
                for table in layouts {
                    for row in try records(
                        of: table,
                        where: "t.\(key) IN (SELECT key FROM \(doomed))",
                        []
                    ) {
                        rows[row.key] = row.payload
                        deletes.delete(key: row.key, entity: row.entity)
                    }
                    for row in try records(
                        of: table,
                        where: "t.\(key) IN (SELECT key FROM \(touched))",
                        []
                    ) {
                        rows[row.key] = row.payload
                    }
                }
                before = rows
                // Only deleted values let external data go; the updated keep theirs.
                try keepReplacedBlobs(of: deletes.changes, before: rows, number: number)
            }
            for statement in edges.compactMap(\.nulling) { try connection.execute(statement) }
            var updated: [(key: ObjectKey, entity: EntityTag)] = []
            var deleted: [(key: ObjectKey, entity: EntityTag)] = []
            for table in layouts.map({ quoted($0.table) }) {
                updated += try changedRows(
                    "UPDATE \(table) AS t SET \(quoted(SchemaMapping.versionColumn)) = "
                        + "$1::bigint FROM \(touched) u WHERE u.key = t.\(key) RETURNING "
                        + "t.\(key), t.\(entityColumn)",
                    [String(version)],
                    in: table
                )
                deleted += try changedRows(
                    "DELETE FROM \(table) AS t USING \(doomed) d WHERE d.key = t.\(key) "
                        + "RETURNING t.\(key), t.\(entityColumn)",
                    in: table
                )
            }
            updated.sort { $0.key < $1.key }
            deleted.sort { $0.key < $1.key }
            let info = try finishBatch(
                version: version,
                number: number,
                retention: retention,
                updated: updated,
                deleted: deleted,
                before: before
            )
            return StoreBatchCommit(info: info, objects: deleted, updated: updated)
        }
    }

    /// Every relationship of every entity whose delete rule does something (cascade, deny, or
    /// nullify with an inverse), as a batch delete follows it.
    func deleteEdges() -> [DeleteEdge] {
        let key = quoted(SchemaMapping.keyColumn)
        let doomed = quoted(Self.doomedTable)
        var edges: [DeleteEdge] = []
        for entity in schema.entities {
            guard let index = layoutOfTag[entity.tag],
                let (_, fields) = layouts[index].entities[entity.tag]
            else { continue }
            let layout = layouts[index]
            for (position, property) in entity.properties.enumerated()
            where property.kind == .relationship {
                let rule = property.deleteRule ?? .nullify
                guard rule != .noAction,
                    let destination = property.destination.flatMap(schema.entity(named:)),
                    let destinationIndex = layoutOfTag[destination.tag]
                else { continue }
                let destinationTable = quoted(layouts[destinationIndex].table)
                let source = quoted(layout.table)
                let inverse = property.inverse.flatMap { name in
                    destination.properties.first { $0.name == name }
                }
                let destinations: String
                var nulling: String?
                switch layout.fields[fields[position]].source {
                case .column(let column):
                    destinations =
                        "FROM \(destinationTable) x JOIN \(source) s ON s.\(quoted(column)) = "
                        + "x.\(key) JOIN \(doomed) d ON d.key = s.\(key) WHERE d.entity = "
                        + "\(entity.tag)"
                    // A one-to-one: the destination's own column holds the doomed object.
                    if let inverse, !inverse.isToMany {
                        let back = quoted(inverse.name)
                        nulling =
                            "UPDATE \(destinationTable) AS x SET \(back) = NULL FROM \(doomed) d "
                            + "WHERE d.key = x.\(back) AND d.entity = \(entity.tag)"
                    }
                case .inverseColumn(_, let column, let positionColumn):
                    let back = quoted(column)
                    destinations =
                        "FROM \(destinationTable) x JOIN \(doomed) d ON d.key = x.\(back) WHERE "
                        + "d.entity = \(entity.tag)"
                    let positions = positionColumn.map { ", \(quoted($0)) = NULL" } ?? ""
                    nulling =
                        "UPDATE \(destinationTable) AS x SET \(back) = NULL\(positions) FROM "
                        + "\(doomed) d WHERE d.key = x.\(back) AND d.entity = \(entity.tag)"
                case .join(let table, let isSource, _):
                    let (near, far) =
                        isSource ? ("source", "destination") : ("destination", "source")
                    destinations =
                        "FROM \(destinationTable) x JOIN \(quoted(table)) j ON j.\(far) = x.\(key) "
                        + "JOIN \(doomed) d ON d.key = j.\(near) WHERE d.entity = \(entity.tag)"
                case .external:
                    continue
                }
                // Without an inverse, nullify leaves the destinations as they are.
                if rule == .nullify, inverse == nil { continue }
                var inverseMinimum: (name: String, minimum: Int, remaining: String?)?
                if let inverse, inverse.minimumCount > 0 {
                    inverseMinimum = (
                        inverse.name, inverse.minimumCount,
                        remainingCount(of: inverse, in: destination)
                    )
                }
                edges.append(
                    DeleteEdge(
                        entity: entity,
                        property: property,
                        rule: rule,
                        destinations: destinations,
                        nulling: rule == .nullify ? nulling : nil,
                        inverseMinimum: inverseMinimum
                    )
                )
            }
        }
        return edges
    }

    /// The SQL expression of how many objects the to-many `relationship` of a row `x` of
    /// `entity` holds that are not doomed; nil for a to-one.
    private func remainingCount(
        of relationship: ModelSchema.Property,
        in entity: ModelSchema.Entity
    ) -> String? {
        guard relationship.isToMany, let index = layoutOfTag[entity.tag],
            let (_, fields) = layouts[index].entities[entity.tag],
            let position = entity.properties.firstIndex(where: { $0.name == relationship.name })
        else { return nil }
        let key = quoted(SchemaMapping.keyColumn)
        let doomed = quoted(Self.doomedTable)
        switch layouts[index].fields[fields[position]].source {
        case .inverseColumn(let table, let column, _):
            return "SELECT count(*) FROM \(quoted(table)) r WHERE r.\(quoted(column)) = x.\(key) "
                + "AND NOT EXISTS (SELECT 1 FROM \(doomed) e WHERE e.key = r.\(key))"
        case .join(let table, let isSource, _):
            let (near, far) = isSource ? ("source", "destination") : ("destination", "source")
            return "SELECT count(*) FROM \(quoted(table)) r WHERE r.\(near) = x.\(key) AND NOT "
                + "EXISTS (SELECT 1 FROM \(doomed) e WHERE e.key = r.\(far))"
        case .column, .external:
            return nil
        }
    }
}
