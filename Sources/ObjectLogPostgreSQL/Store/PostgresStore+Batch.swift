import Foundation
import ObjectLog
import ObjectLogStore

extension PostgresStore {
    // A batch request is one `UPDATE … SET … WHERE` or `DELETE … WHERE` on its entity's table,
    // the `WHERE` the fetch's own (``SQLSelect``), in a commit like a save's: the store row's
    // next commit number as every changed row's version, the changes recorded and announced.
    // Uniqueness holds through the table's constraints, checked when the commit ends; the
    // engine hands over only deletes of entities without relationships, so no delete rule is
    // left undone.
    package func execute(_ batch: StoreBatch) throws -> StoreBatchCommit? {
        var query = batch.query
        query.sortKeys = nil
        query.fetchLimit = nil
        query.fetchOffset = 0
        guard let select = keySelect(query) else { return nil }
        guard select.isExact, let tag = query.entityTags.first, let index = layoutOfTag[tag]
        else { return nil }
        let layout = layouts[index]
        var parameters = select.parameters
        var assignments: [String] = []
        if case .update(let values) = batch.change {
            guard let (entity, _) = layout.entities[tag] else { return nil }
            for (attribute, value) in values {
                guard
                    let property = entity.properties.first(where: {
                        $0.name == attribute && $0.kind == .attribute && !$0.isExternal
                    })
                else { return nil }
                parameters.append(try ColumnValue.parameter(value, type: property.type))
                let type = SchemaMapping.sqlType(property.type ?? .string)
                assignments.append("\(quoted(attribute)) = $\(parameters.count)::\(type)")
            }
        }
        if isReadOnly {
            throw PostgresError(.statementFailed, "the store at \(displayName) is open read-only")
        }
        let alias = select.alias
        let condition = select.condition.map { " WHERE \($0)" } ?? ""
        let key = quoted(SchemaMapping.keyColumn)
        let entityColumn = quoted(SchemaMapping.entityColumn)
        return try inCommitTransaction {
            let (version, number) = try takeCommitNumber()
            let statement: String
            let kind: UInt8
            switch batch.change {
            case .delete:
                statement =
                    "DELETE FROM \(quoted(layout.table)) AS \(alias)\(condition) "
                    + "RETURNING \(alias).\(key), \(alias).\(entityColumn)"
                kind = 2
            case .update:
                parameters.append(String(version))
                let assigned =
                    assignments
                    + ["\(quoted(SchemaMapping.versionColumn)) = $\(parameters.count)::bigint"]
                statement =
                    "UPDATE \(quoted(layout.table)) AS \(alias) SET "
                    + assigned.joined(separator: ", ") + condition
                    + " RETURNING \(alias).\(key), \(alias).\(entityColumn)"
                kind = 1
            }
            let objects = try connection.query(
                statement,
                parameters.map { $0.map(PostgresParameter.text) }
            ) { rows throws(PostgresError) in
                var objects: [(key: ObjectKey, entity: EntityTag)] = []
                objects.reserveCapacity(rows.count)
                for row in 0..<rows.count {
                    guard let key = rows.int64(row, 0), let entity = rows.int32(row, 1) else {
                        throw RowLayout.corrupt(layout.table, "a row without its key or entity")
                    }
                    objects.append((ObjectKey(key), EntityTag(bitPattern: entity)))
                }
                return objects.sorted { $0.key < $1.key }
            }
            let list = CommitChanges.encode(
                objects.map { CommitChanges.Entry(key: $0.key, entity: $0.entity, kind: kind) }
            )
            let date = Date()
            try recordCommit(version, date: date, changes: list)
            let info = CommitInfo(
                number: number,
                offset: version,
                date: date,
                inserted: 0,
                updated: kind == 1 ? objects.count : 0,
                deleted: kind == 2 ? objects.count : 0
            )
            return StoreBatchCommit(info: info, objects: objects)
        }
    }
}
