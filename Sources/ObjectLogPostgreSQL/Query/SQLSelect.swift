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
///
/// ## Predicates that run in SQL
///
/// These forms of a `#Predicate` (and of a ``TextMatch``), combined in any way, are tested by
/// the server, with the engine's semantics (``SQLCondition`` says how each is written):
///
/// - `==`, `!=`, `<`, `<=`, `>`, `>=` between an attribute and a constant, either side first,
///   for every integer width, `Float`, `Double`, `Date` and `String`; `==` and `!=` for `Bool`,
///   `UUID` and `Data`; negative literals (`$0.count > -1`).
/// - `== nil` and `!= nil` of an optional attribute or a to-one relationship; `!=` with a
///   value is true for nil, as in Swift.
/// - `&&`, `||`, `!`, `? :`, and `??` with a default (`($0.rank ?? 0) > 2`); a `Bool`
///   attribute on its own (`$0.isActive`).
/// - A constant range's or list's `contains` (`(1...5).contains($0.count)`,
///   `["a", "b"].contains($0.name)`, lists of up to 1000 values).
/// - To-one chains through optional chaining (`$0.owner?.name == "x"`,
///   `$0.owner?.manager?.rating == 5`, `$0.owner == nil`): `EXISTS` on the destination's table.
/// - To-many relationships: `count` compared with a constant, `isEmpty`, and
///   `contains(where:)` or `allSatisfy` with a condition on the destination alone: correlated
///   subqueries on the inverse's key column or the join table.
/// - Objects by ID (a `#Predicate` cannot capture a managed object): `$0.objectID == id`,
///   `$0.owner?.objectID == id`, `$0.tags.contains { $0.objectID == id }`,
///   `ids.contains($0.objectID)`.
/// - The entity and its subentities (``FetchRequest/includesSubentities``).
/// - Sorts by an attribute: integers, `Float`, `Double`, `Date` and `String` (with `String`'s
///   own order or the `.lexical` comparator), optional integers and strings (nil first);
///   ties in key order. `LIMIT` and `OFFSET` when every part of the fetch is in SQL.
///
/// ## Filtered in SQL, decided in Swift
///
/// The server narrows these down and the engine evaluates the predicate again on the rows it
/// returns (``isExact`` is false):
///
/// - `contains` and `starts(with:)` of a constant on a string attribute, and every
///   ``TextMatch`` (contains, prefix, equals, with or without case and diacritics): decided
///   on ASCII values (without a carriage return, for a `#Predicate`, which compares by
///   `Character`); a value with other characters is returned for the engine to decide, since
///   Foundation folds case and compares canonically beyond ASCII ("straße" contains "SS").
///   With a non-ASCII search text, only "not nil" of an optional attribute runs in SQL.
/// - A part that does not translate, inside `&&`: `a && x` selects the rows of `a`, and
///   `!(a || x)` those of `!a`. Under `||` it leaves every row to the engine.
/// - Text holding a NUL character, which no PostgreSQL text holds.
///
/// ## Evaluated in Swift after the fetch
///
/// - Arithmetic (`$0.price * 2 > 3`), a string's `count`, comparisons of two attributes
///   (`$0.low < $0.high`), forced unwraps, casts (`is`, `as?`), regular expressions,
///   `min()`, `max()`, `filter`, and closures that refer to the outer object.
/// - Key paths that are not one attribute or relationship (computed properties that
///   transform a value), `URL` and `Codable` attributes, external data, the order of UUIDs.
/// - Sorts by anything else (through relationships, optional `Float`, `Double` or `Date`,
///   other string comparators, computed properties): the engine sorts, and applies the limit
///   and offset itself.
///
/// Limits of the equivalence: strings are normalized with PostgreSQL's Unicode tables, which
/// may be older than Swift's for characters assigned since; a NaN date, which `Date` orders
/// with no other date, sorts after every date here; an object a predicate names by ID is
/// compared by key and entity; and a predicate that would throw (a forced unwrap of nil) on a
/// row the server filtered out no longer throws. `normalize` needs a UTF-8 database.
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
    /// The table's alias in the statement.
    var alias: String
    /// The statement's `WHERE` condition, on the table as ``alias``; nil when it selects
    /// every row.
    var condition: String?
    /// What follows the condition: the `ORDER BY`, `LIMIT` and `OFFSET`, if any.
    var orderAndWindow = ""

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
        let translated = query.translation.condition
        if translated != .constant(true) {
            conditions.append(try writer.write(translated, on: row, positive: true))
        }
        let selected = (columns ?? row.table.columns.map(\.name)).map(row.column)
        var text =
            "SELECT \(selected.joined(separator: ", ")) FROM \(quoted(row.table.name)) AS \(row.alias)"
        alias = row.alias
        let condition = conditions.isEmpty ? nil : conditions.joined(separator: " AND ")
        self.condition = condition
        if let condition { text += " WHERE " + condition }
        isExact = query.translation.isExact && writer.isExact
        var tail = ""
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
            tail += " ORDER BY " + order.joined(separator: ", ")
            isOrdered = true
        } else {
            isOrdered = false
        }
        appliesWindow = isExact && isOrdered
        if appliesWindow {
            if let limit = query.fetchLimit {
                tail += " LIMIT " + writer.parameter(String(max(0, limit)), as: "bigint")
            }
            if query.fetchOffset > 0 {
                tail += " OFFSET " + writer.parameter(String(query.fetchOffset), as: "bigint")
            }
        }
        text += tail
        orderAndWindow = tail
        guard writer.parameters.count <= Self.parameterLimit else {
            throw PostgresError(
                .invalidParameter,
                "the fetch of \(query.entity) needs \(writer.parameters.count) parameters, "
                    + "more than PostgreSQL's \(Self.parameterLimit)"
            )
        }
        self.text = text
        parameters = writer.parameters
    }

    /// The most parameters a statement may have (the protocol counts them in 16 bits).
    static let parameterLimit = 65_535

    /// One term of the `ORDER BY`: the engine's order of the attribute's values.
    private static func orderTerm(_ key: StoreSortKey, on row: SQLWriter.Row) -> String {
        let column = row.column(key.attribute.name)
        let value =
            key.attribute.type == .string ? "normalize(\(column), NFC) COLLATE \"C\"" : column
        // The engine's nil comes before every value (Foundation's order of optionals).
        return value + (key.ascending ? " ASC NULLS FIRST" : " DESC NULLS LAST")
    }
}
