import ObjectLog

/// A fetch (a ``StoreQuery``) as one `SELECT` statement on its entity's table, and what the
/// engine must still do with the rows it returns.
///
/// ```sql
/// SELECT t0."objectlog_key", … FROM "Item" AS t0
/// WHERE t0.objectlog_entity IN (3, 4) AND (…the predicate…)
/// ORDER BY normalize(t0."name", NFC) COLLATE "C" ASC NULLS FIRST, t0."objectlog_key" ASC
/// LIMIT $4::bigint OFFSET $5::bigint
/// ```
///
/// - Rows: the entity's own and its subentities' (`objectlog_entity IN (…)`, left out when
///   they are all the table holds), that satisfy the query's condition (``SQLCondition``).
/// - Order: each sort key as the engine orders (strings by their scalars after NFC, NaN after
///   every number, nil first in ascending order and last in descending), then the key.
/// - Window: `LIMIT` and `OFFSET` as parameters, only when the statement selects and orders
///   exactly as the engine: otherwise the engine filters, sorts and cuts the window itself.
///
/// The entity tags are the only values written into the text: integers the schema defines,
/// never a value of the request's.
struct SQLSelect: Sendable, Equatable {
    /// The statement.
    var text: String
    /// The values of its parameters, `$1` on.
    var parameters: [String?]
    /// Whether the rows are exactly those the request selects; if not, the engine evaluates
    /// the request's predicate (and text match) on them.
    var isExact: Bool
    /// Whether the rows are in the request's order; if not, the engine sorts them.
    var isOrdered: Bool
    /// Whether the statement applies the request's limit and offset.
    var appliesWindow: Bool

    /// The statement of `query`, in the tables `mapping` lays out for `schema`, selecting
    /// `columns` of the entity's table (all of them when nil, in the table's order).
    ///
    /// - Throws: ``PostgresError/Code/invalidParameter`` for an entity, attribute or
    ///   relationship the mapping has no table or column for.
    init(
        _ query: StoreQuery,
        schema: ModelSchema,
        mapping: SchemaMapping,
        columns: [String]? = nil
    ) throws(PostgresError) {
        var writer = SQLWriter(schema: schema, mapping: mapping)
        let row = try writer.row(of: query.entity)
        var conditions: [String] = []
        let tags = Set(query.entityTags)
        if tags != Set(row.table.entities.keys) {
            conditions.append(
                tags.isEmpty
                    ? "FALSE"
                    : "\(row.column(SchemaMapping.entityColumn)) IN ("
                        + tags.sorted().map(String.init).joined(separator: ", ") + ")"
            )
        }
        let condition = query.translation.condition
        if condition != .constant(true) {
            conditions.append(try writer.write(condition, on: row, positive: true))
        }
        let selected = (columns ?? row.table.columns.map(\.name)).map(row.column)
        var text =
            "SELECT \(selected.joined(separator: ", ")) FROM \(quoted(row.table.name)) AS \(row.alias)"
        if !conditions.isEmpty { text += " WHERE " + conditions.joined(separator: " AND ") }
        isExact = query.translation.isExact && writer.isExact
        if let keys = query.sortKeys {
            var order: [String] = []
            for key in keys {
                guard row.table.column(named: key.attribute.name) != nil else {
                    throw PostgresError(
                        .invalidParameter,
                        "the table \(row.table.name) has no column of '\(key.attribute.entity)."
                            + "\(key.attribute.name)'"
                    )
                }
                order.append(Self.orderTerm(key, on: row))
            }
            order.append("\(row.column(SchemaMapping.keyColumn)) ASC")
            text += " ORDER BY " + order.joined(separator: ", ")
            isOrdered = true
        } else {
            isOrdered = false
        }
        appliesWindow = isExact && isOrdered
        if appliesWindow {
            if let limit = query.fetchLimit {
                text += " LIMIT " + writer.parameter(String(max(0, limit)), as: "bigint")
            }
            if query.fetchOffset > 0 {
                text += " OFFSET " + writer.parameter(String(query.fetchOffset), as: "bigint")
            }
        }
        self.text = text
        parameters = writer.parameters
    }

    /// One term of the `ORDER BY`: the engine's order of the attribute's values.
    private static func orderTerm(_ key: StoreSortKey, on row: SQLWriter.Row) -> String {
        let column = row.column(key.attribute.name)
        let value =
            key.attribute.type == .string ? "normalize(\(column), NFC) COLLATE \"C\"" : column
        // The engine's nil comes before every value (Foundation's order of optionals).
        return value + (key.ascending ? " ASC NULLS FIRST" : " DESC NULLS LAST")
    }
}
