import Foundation
import ObjectLog
import ObjectLogStore

extension PostgresStore {
    // A lightweight migration here is `ALTER TABLE`: the tables of the stored version must all
    // remain, each column as it was, so that every row keeps its values; new tables, columns,
    // join tables, indexes and constraints are added, and the new version is recorded, in one
    // SQL transaction. Anything else (a rename, a removal, a changed type) is left to the
    // engine to refuse.
    package func migrateTables(
        from stored: ModelSchema,
        to schema: ModelSchema,
        recording: Transaction
    ) throws -> Bool {
        let old = try SchemaMapping(stored)
        let new = try SchemaMapping(schema)
        guard let statements = try Self.additions(from: old, to: new, schema: schema) else {
            return false
        }
        let changes = recording.changes
        try lockedForSave { connection in
            try connection.execute("BEGIN")
            do {
                for statement in statements {
                    try connection.execute(statement.text, statement.parameters)
                }
                takenCommit = nil
                _ = try write(changes, metadata: recording.metadata, locks: [])
                try connection.execute("COMMIT")
                takenCommit = nil
            } catch {
                _ = try? connection.execute("ROLLBACK")
                if let taken = takenCommit { ownCommits.remove(taken) }
                takenCommit = nil
                throw error
            }
        }
        use(
            Tables(schema: schema, mapping: new, externalThreshold: externalStorageMinimumByteCount)
        )
        return true
    }

    /// The statements that turn the tables of `old` into those of `new`, with their
    /// parameters; nil when that takes more than additions.
    static func additions(
        from old: SchemaMapping,
        to new: SchemaMapping,
        schema: ModelSchema
    ) throws(PostgresError) -> [(text: String, parameters: [String?])]? {
        var statements: [(text: String, parameters: [String?])] = []
        var references: [String] = []
        for table in old.tables {
            guard let kept = new.tables.first(where: { $0.name == table.name }),
                table.columns.allSatisfy(kept.columns.contains),
                table.entities.allSatisfy({ kept.entities[$0.key] == $0.value })
            else { return nil }
        }
        guard old.joinTables.allSatisfy(new.joinTables.contains),
            old.uniqueIndexes.allSatisfy(new.uniqueIndexes.contains)
        else { return nil }
        for table in new.tables {
            guard let before = old.tables.first(where: { $0.name == table.name }) else {
                let made = SchemaMapping.statements(creating: table)
                statements.append((made.create, []))
                references += made.references
                statements += indexStatements(for: table, columns: nil, schema: schema).map {
                    ($0, [])
                }
                continue
            }
            let added = table.columns.filter { column in
                !before.columns.contains { $0.name == column.name }
            }
            for column in added {
                let type = SchemaMapping.type(of: column)
                let required = type.hasSuffix(" NOT NULL")
                let bare = required ? type.dropLast(" NOT NULL".count) : type
                statements.append(
                    (
                        "ALTER TABLE \(quoted(table.name)) ADD COLUMN \(quoted(column.name)) \(bare)",
                        []
                    )
                )
                // The rows saved before take the attribute's default, as a file's records do.
                if let (property, tags) = attribute(named: column.name, in: table, schema: schema),
                    let value = StoreInspector.defaultValue(of: property), value != .null
                {
                    let tagList = tags.map(String.init).joined(separator: ", ")
                    statements.append(
                        (
                            "UPDATE \(quoted(table.name)) SET \(quoted(column.name)) = $1 WHERE "
                                + "\(quoted(SchemaMapping.entityColumn)) IN (\(tagList))",
                            [try ColumnValue.parameter(value, type: property.type)]
                        )
                    )
                }
                if required {
                    statements.append(
                        (
                            "ALTER TABLE \(quoted(table.name)) ALTER COLUMN "
                                + "\(quoted(column.name)) SET NOT NULL", []
                        )
                    )
                }
                if let reference = SchemaMapping.reference(of: column, in: table) {
                    references.append(reference)
                }
            }
            statements += indexStatements(
                for: table,
                columns: Set(added.map(\.name)),
                schema: schema
            ).map { ($0, []) }
        }
        for join in new.joinTables where !old.joinTables.contains(join) {
            statements.append((SchemaMapping.statement(creating: join), []))
            statements.append((indexStatement(for: join), []))
        }
        statements += references.map { ($0, []) }
        for index in new.uniqueIndexes where !old.uniqueIndexes.contains(index) {
            statements.append((SchemaMapping.statement(creating: index), []))
        }
        return statements
    }

    /// The attribute a column of `table` holds, and the tags of the entities that have it.
    private static func attribute(
        named name: String,
        in table: SchemaMapping.Table,
        schema: ModelSchema
    ) -> (ModelSchema.Property, [UInt32])? {
        var found: ModelSchema.Property?
        var tags: [UInt32] = []
        for (tag, entityName) in table.entities.sorted(by: { $0.key < $1.key }) {
            guard let entity = schema.entity(named: entityName),
                let property = entity.properties.first(where: {
                    $0.name == name && $0.kind == .attribute
                })
            else { continue }
            found = found ?? property
            tags.append(tag)
        }
        return found.map { ($0, tags) }
    }
}
