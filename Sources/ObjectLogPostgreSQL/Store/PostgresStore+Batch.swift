import Foundation
import ObjectLog
import ObjectLogStore

extension PostgresStore {
    // A batch request is one `UPDATE … SET … WHERE` or `DELETE … WHERE` on its entity's table,
    // the `WHERE` the fetch's own (``SQLSelect``), in a commit like a save's: the store row's
    // next commit number as every changed row's version, the changes recorded and announced.
    // Uniqueness holds through the table's constraints, checked when the commit ends. A delete
    // of objects with relationships follows their delete rules in statements of its own
    // (PostgresStore+BatchDelete.swift). When the store keeps history, the rows are read before the statement (the
    // old values) and, for an update, after it (the new ones), and the batch is a transaction
    // of the history like a save.
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
        if case .delete = batch.change, hasRelationships(query.entityTags) {
            return try deleteFollowingRules(select, in: layout)
        }
        let alias = select.alias
        let condition = select.condition.map { " WHERE \($0)" } ?? ""
        let key = quoted(SchemaMapping.keyColumn)
        let entityColumn = quoted(SchemaMapping.entityColumn)
        return try inCommitTransaction {
            let (version, number, retention) = try takeCommitNumber()
            // The history's old values: the rows the statement is about to change, as they are.
            var before: [ObjectKey: [UInt8]]?
            if Self.records(retention) {
                let changing = try records(
                    of: layout,
                    where: "t.\(key) IN (SELECT \(alias).\(key) FROM \(quoted(layout.table)) AS "
                        + "\(alias)\(condition))",
                    select.parameters
                )
                before = Dictionary(changing.map { ($0.key, $0.payload) }) { first, _ in first }
                // A batch update sets no external data: only a delete lets any go.
                if case .delete = batch.change {
                    var deletes = Transaction()
                    for row in changing { deletes.delete(key: row.key, entity: row.entity) }
                    try keepReplacedBlobs(of: deletes.changes, before: before!, number: number)
                }
            }
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
            let objects = try changedRows(statement, parameters, in: quoted(layout.table)).sorted {
                $0.key < $1.key
            }
            let info = try finishBatch(
                version: version,
                number: number,
                retention: retention,
                updated: kind == 1 ? objects : [],
                deleted: kind == 2 ? objects : [],
                before: before
            )
            return StoreBatchCommit(info: info, objects: objects)
        }
    }

    /// Records a batch's commit (the objects it changed, each list in key order, announced to
    /// other processes) and, when `before` holds the old values, its history; returns the
    /// commit.
    func finishBatch(
        version: UInt64,
        number: UInt64,
        retention: LogHistoryRetention,
        updated: [(key: ObjectKey, entity: EntityTag)],
        deleted: [(key: ObjectKey, entity: EntityTag)],
        before: [ObjectKey: [UInt8]]?
    ) throws(PostgresError) -> CommitInfo {
        let entries =
            (updated.map { CommitChanges.Entry(key: $0.key, entity: $0.entity, kind: 1) }
            + deleted.map { CommitChanges.Entry(key: $0.key, entity: $0.entity, kind: 2) })
            .sorted { $0.key < $1.key }
        let date = Date()
        try recordCommit(version, date: date, changes: CommitChanges.encode(entries))
        if let before {
            try recordBatchHistory(
                number: number,
                date: date,
                updated: updated,
                deleted: deleted,
                before: before,
                retention: retention
            )
        }
        return CommitInfo(
            number: number,
            offset: version,
            date: date,
            inserted: 0,
            updated: updated.count,
            deleted: deleted.count
        )
    }

    /// The key and entity of each row that `statement` (ending `RETURNING key, entity`)
    /// changed in `table`.
    func changedRows(
        _ statement: String,
        _ parameters: [String?] = [],
        in table: String
    ) throws(PostgresError) -> [(key: ObjectKey, entity: EntityTag)] {
        try connection.query(statement, parameters.map { $0.map(PostgresParameter.text) }) {
            rows throws(PostgresError) in
            var objects: [(key: ObjectKey, entity: EntityTag)] = []
            objects.reserveCapacity(rows.count)
            for row in 0..<rows.count {
                guard let key = rows.int64(row, 0), let entity = rows.int32(row, 1) else {
                    throw RowLayout.corrupt(table, "a row without its key or entity")
                }
                objects.append((ObjectKey(key), EntityTag(bitPattern: entity)))
            }
            return objects
        }
    }

    /// Records a batch's transaction in the history: the old values read before it, and the
    /// new values of the rows it updated.
    private func recordBatchHistory(
        number: UInt64,
        date: Date,
        updated: [(key: ObjectKey, entity: EntityTag)],
        deleted: [(key: ObjectKey, entity: EntityTag)],
        before: [ObjectKey: [UInt8]],
        retention: LogHistoryRetention
    ) throws(PostgresError) {
        var after: [ObjectKey: [UInt8]] = [:]
        for record in try records(keys: updated.map(\.key)) {
            after[record.key] = record.payload
        }
        var transaction = Transaction()
        for object in updated {
            if let payload = after[object.key] {
                transaction.put(
                    key: object.key,
                    entity: object.entity,
                    payload: payload,
                    isInsert: false
                )
            }
        }
        for object in deleted { transaction.delete(key: object.key, entity: object.entity) }
        try recordHistory(
            HistoryEntry(
                number: number,
                date: date,
                changes: transaction.changes,
                before: before,
                note: HistoryNote()
            ),
            retention: retention,
            metadata: nil
        )
    }
}
