import ObjectLog

/// A ``StoreCondition`` as the text of an SQL condition on a table's rows, and the values of
/// its parameters.
///
/// Every value travels as a parameter (`$1`, `$2`, …, in ``ColumnValue``'s exact text, with a
/// cast to its column's type); the text holds only quoted identifiers from the schema mapping,
/// and SQL keywords, functions and literals this type writes itself. Each case means in
/// PostgreSQL what it means to the engine (see ``StoreCondition``):
///
/// - Every condition is true or false, never `NULL`: a comparison of a column that may be
///   `NULL` is `(column IS NOT NULL AND …)`, so that `NOT` of it is Swift's `!`, and `!=`
///   (`NOT (… = …)`) is true for nil as in Swift.
/// - Strings compare as Swift compares them: `normalize(…, NFC) COLLATE "C"` on both sides,
///   so that canonically equivalent strings are equal and order is by Unicode scalars
///   (UTF-8 bytes) whatever the database's collation. (`normalize` needs a UTF-8 database.)
/// - Floating-point columns and dates: PostgreSQL's NaN equals NaN and is greater than every
///   number, Swift's is neither, so `>` and `>=` also require `<> 'NaN'` (a comparison with
///   a NaN constant is false before it reaches SQL).
/// - Text searches (`contains`, `starts(with:)`, a ``TextMatch``) are decided on ASCII values,
///   with `strpos` and `starts_with` (no `LIKE` pattern, so `%`, `_` and `\` are plain text)
///   and ASCII case folding (`lower` in the "C" collation folds only A to Z); other values
///   pass to the engine, which decides them with Foundation.
/// - Relationships: a to-one through its key column (an `EXISTS` subquery on the destination's
///   table for a condition on it); a to-many through the inverse's key column or the join
///   table, in a correlated `EXISTS` or `count(*)` subquery.
struct SQLCondition: Sendable, Equatable {
    /// The condition's SQL text, on the rows of the table aliased `t0`.
    var text: String
    /// The values of the parameters the text names, from ``firstParameter`` on.
    var parameters: [String?]
    /// Whether the text is the condition exactly; false when a value could not be sent (text
    /// holding a NUL character, which PostgreSQL's text cannot hold either, so no row holds
    /// it) and the part that compares it was widened so that the rows the condition selects
    /// are still among those the text selects.
    var isExact: Bool

    /// The SQL of `condition` on the rows of `entity`, aliased `t0`, in the tables `mapping`
    /// lays out for `schema`, with parameters numbered from `firstParameter`.
    ///
    /// - Throws: ``PostgresError/Code/invalidParameter`` for an entity, attribute or
    ///   relationship the mapping has no table or column for.
    init(
        _ condition: StoreCondition,
        entity: String,
        schema: ModelSchema,
        mapping: SchemaMapping,
        firstParameter: Int = 1
    ) throws(PostgresError) {
        var writer = SQLWriter(schema: schema, mapping: mapping, firstParameter: firstParameter)
        let row = try writer.row(of: entity)
        text = try writer.write(condition, on: row, positive: true)
        parameters = writer.parameters
        isExact = writer.isExact
    }
}

/// Writes ``StoreCondition``s as SQL, collecting their parameters.
struct SQLWriter {
    let schema: ModelSchema
    let mapping: SchemaMapping
    /// The number of the first parameter.
    let firstParameter: Int
    /// The parameters' values so far.
    private(set) var parameters: [String?] = []
    /// Whether every part was written exactly (see ``SQLCondition/isExact``).
    private(set) var isExact = true
    /// How many table aliases are in use (`t0` is the first).
    private var aliases = 0

    init(schema: ModelSchema, mapping: SchemaMapping, firstParameter: Int = 1) {
        self.schema = schema
        self.mapping = mapping
        self.firstParameter = firstParameter
    }

    /// A table's rows under an alias.
    struct Row {
        /// The alias, `t0`, `t1`, ….
        var alias: String
        var table: SchemaMapping.Table

        /// The column with a name, qualified by the alias.
        func column(_ name: String) -> String {
            "\(alias).\(quoted(name))"
        }
    }

    /// The rows of `entity`'s table under a new alias.
    mutating func row(of entity: String) throws(PostgresError) -> Row {
        guard let table = mapping.table(of: entity) else {
            throw PostgresError(.invalidParameter, "the schema mapping has no table of \(entity)")
        }
        return row(in: table)
    }

    private mutating func row(in table: SchemaMapping.Table) -> Row {
        defer { aliases += 1 }
        return Row(alias: "t\(aliases)", table: table)
    }

    /// A new parameter holding `value`, cast to `type`: its placeholder.
    mutating func parameter(_ value: String?, as type: String) -> String {
        parameters.append(value)
        return "$\(firstParameter + parameters.count - 1)::\(type)"
    }

    /// The SQL of `condition` on `row`; `positive` says whether the condition counts as
    /// written or negated (under an odd number of `NOT`s), so that a part that cannot be
    /// written is widened in the right direction.
    mutating func write(
        _ condition: StoreCondition,
        on row: Row,
        positive: Bool
    ) throws(PostgresError) -> String {
        switch condition {
        case .constant(let value):
            return value ? "TRUE" : "FALSE"
        case .and(let parts):
            guard !parts.isEmpty else { return "TRUE" }
            var written: [String] = []
            for part in parts { written.append(try write(part, on: row, positive: positive)) }
            return "(" + written.joined(separator: " AND ") + ")"
        case .or(let parts):
            guard !parts.isEmpty else { return "FALSE" }
            var written: [String] = []
            for part in parts { written.append(try write(part, on: row, positive: positive)) }
            return "(" + written.joined(separator: " OR ") + ")"
        case .not(let inner):
            return "NOT (\(try write(inner, on: row, positive: !positive)))"
        case .comparison(let attribute, let op, let value):
            return try comparison(attribute, op, value, on: row, positive: positive)
        case .isNil(let attribute):
            return "\(try column(attribute, of: row).sql) IS NULL"
        case .isPlainText(let attribute, let excludesCarriageReturn):
            let sql = try column(attribute, of: row).sql
            // A value is ASCII when each of its characters is one byte.
            var test = "\(sql) IS NOT NULL AND octet_length(\(sql)) = char_length(\(sql))"
            if excludesCarriageReturn { test += " AND strpos(\(sql), chr(13)) = 0" }
            return "(\(test))"
        case .text(let search):
            return try text(search, on: row, positive: positive)
        case .toOne(let relationship, let inner):
            return try toOne(relationship, inner, on: row, positive: positive)
        case .anyDestination(let relationship, let inner):
            return try anyDestination(relationship, inner, on: row, positive: positive)
        case .count(let relationship, let op, let number):
            let count = try destinationCount(relationship, on: row)
            return "\(count) \(Self.sql(op)) \(parameter(String(number), as: "bigint"))"
        case .key(let key):
            let constant = parameter(String(key), as: "bigint")
            return "\(row.column(SchemaMapping.keyColumn)) = \(constant)"
        case .entity(let name):
            // A tag the schema defines; an entity of another table has no row here.
            guard let tag = row.table.entities.first(where: { $0.value == name })?.key else {
                return "FALSE"
            }
            return "\(row.column(SchemaMapping.entityColumn)) = \(tag)"
        }
    }

    /// The SQL operator of a comparison.
    static func sql(_ op: StoreComparison) -> String {
        switch op {
        case .less: "<"
        case .lessOrEqual: "<="
        case .greater: ">"
        case .greaterOrEqual: ">="
        case .equal: "="
        }
    }

    /// An attribute's column on `row`, and whether it may be `NULL`.
    private func column(
        _ attribute: StoreAttribute,
        of row: Row
    ) throws(PostgresError) -> (sql: String, isNullable: Bool) {
        guard let column = row.table.column(named: attribute.name) else {
            throw PostgresError(
                .invalidParameter,
                "the table \(row.table.name) has no column of '\(attribute.entity)."
                    + "\(attribute.name)'"
            )
        }
        return (row.column(attribute.name), column.isNullable)
    }

    /// What a part that cannot be written becomes: every row where it counts as written, so
    /// that the whole still selects every row it should, and none under a negation.
    private mutating func widened(positive: Bool) -> String {
        isExact = false
        return positive ? "TRUE" : "FALSE"
    }

    private mutating func comparison(
        _ attribute: StoreAttribute,
        _ op: StoreComparison,
        _ value: StoredValue,
        on row: Row,
        positive: Bool
    ) throws(PostgresError) -> String {
        let (sql, isNullable) = try column(attribute, of: row)
        let type = SchemaMapping.sqlType(attribute.type)
        let text = try ColumnValue.parameter(value, type: attribute.type)
        if text?.utf8.contains(0) == true { return widened(positive: positive) }
        var parts = isNullable ? ["\(sql) IS NOT NULL"] : []
        switch attribute.type {
        case .string:
            // Swift compares strings by their scalars after canonical composition.
            let constant = parameter(text, as: "text")
            parts.append(
                "normalize(\(sql), NFC) COLLATE \"C\" \(Self.sql(op)) normalize(\(constant), NFC)"
            )
        case .float, .double, .date:
            parts.append("\(sql) \(Self.sql(op)) \(parameter(text, as: type))")
            // PostgreSQL's NaN is greater than every number; Swift's compares with nothing.
            if op == .greater || op == .greaterOrEqual { parts.append("\(sql) <> 'NaN'") }
        default:
            parts.append("\(sql) \(Self.sql(op)) \(parameter(text, as: type))")
        }
        return parts.count == 1 ? parts[0] : "(" + parts.joined(separator: " AND ") + ")"
    }

    private mutating func text(
        _ search: StoreTextSearch,
        on row: Row,
        positive: Bool
    ) throws(PostgresError) -> String {
        let plain = try write(
            .isPlainText(search.attribute, excludesCarriageReturn: search.excludesCarriageReturn),
            on: row,
            positive: positive
        )
        let sql = try column(search.attribute, of: row).sql
        // In the "C" collation, `lower` folds A to Z alone, as the engine's ASCII comparison.
        let value = search.ignoresCase ? "lower(\(sql) COLLATE \"C\")" : "(\(sql) COLLATE \"C\")"
        let text = search.ignoresCase ? search.foldedText : search.text
        guard !text.utf8.contains(0) else { return widened(positive: positive) }
        let constant = parameter(text, as: "text")
        let match: String
        switch search.kind {
        case .contains: match = "strpos(\(value), \(constant)) > 0"
        case .prefix: match = "starts_with(\(value), \(constant))"
        case .equals: match = "\(value) = \(constant)"
        }
        return "(\(plain) AND \(match))"
    }

    private mutating func toOne(
        _ relationship: StoreRelationship,
        _ inner: StoreCondition,
        on row: Row,
        positive: Bool
    ) throws(PostgresError) -> String {
        let storage = try SQLRelationship(relationship, schema: schema, mapping: mapping)
        guard case .column(let name, let table) = storage else {
            throw PostgresError(
                .invalidParameter,
                "'\(relationship.entity).\(relationship.name)' is not a to-one relationship"
            )
        }
        let key = row.column(name)
        switch inner {
        case .constant(true):
            return "\(key) IS NOT NULL"
        case .key(let destination):
            let constant = parameter(String(destination), as: "bigint")
            return "(\(key) IS NOT NULL AND \(key) = \(constant))"
        default:
            let destination = try self.row(ofTable: table)
            let condition = try write(inner, on: destination, positive: positive)
            return
                "EXISTS (SELECT 1 FROM \(quoted(destination.table.name)) AS \(destination.alias) "
                + "WHERE \(destination.column(SchemaMapping.keyColumn)) = \(key) AND \(condition))"
        }
    }

    /// The rows of the table with a name under a new alias.
    private mutating func row(ofTable name: String) throws(PostgresError) -> Row {
        guard let table = mapping.tables.first(where: { $0.name == name }) else {
            throw PostgresError(.invalidParameter, "the schema mapping has no table \(name)")
        }
        return row(in: table)
    }

    private mutating func anyDestination(
        _ relationship: StoreRelationship,
        _ inner: StoreCondition,
        on row: Row,
        positive: Bool
    ) throws(PostgresError) -> String {
        let storage = try SQLRelationship(relationship, schema: schema, mapping: mapping)
        let ownKey = row.column(SchemaMapping.keyColumn)
        switch storage {
        case .column:
            throw PostgresError(
                .invalidParameter,
                "'\(relationship.entity).\(relationship.name)' is not a to-many relationship"
            )
        case .inverseColumn(let name, let table):
            let destination = try self.row(ofTable: table)
            let condition = try write(inner, on: destination, positive: positive)
            return "EXISTS (SELECT 1 FROM \(quoted(table)) AS \(destination.alias) "
                + "WHERE \(destination.column(name)) = \(ownKey) AND \(condition))"
        case .joinTable(let name, let sourceColumn, let destinationColumn, let table):
            let join = "j\(aliases)"
            aliases += 1
            let joined = "\(join).\(quoted(destinationColumn))"
            let source = "\(join).\(quoted(sourceColumn)) = \(ownKey)"
            switch inner {
            case .constant(true):
                return "EXISTS (SELECT 1 FROM \(quoted(name)) AS \(join) WHERE \(source))"
            case .key(let key):
                let constant = parameter(String(key), as: "bigint")
                return "EXISTS (SELECT 1 FROM \(quoted(name)) AS \(join) WHERE \(source) "
                    + "AND \(joined) = \(constant))"
            default:
                let destination = try self.row(ofTable: table)
                let condition = try write(inner, on: destination, positive: positive)
                return "EXISTS (SELECT 1 FROM \(quoted(name)) AS \(join) JOIN \(quoted(table)) AS "
                    + "\(destination.alias) ON \(destination.column(SchemaMapping.keyColumn)) = "
                    + "\(joined) WHERE \(source) AND \(condition))"
            }
        }
    }

    /// A subquery counting the destinations of a to-many relationship of `row`.
    private mutating func destinationCount(
        _ relationship: StoreRelationship,
        on row: Row
    ) throws(PostgresError) -> String {
        let storage = try SQLRelationship(relationship, schema: schema, mapping: mapping)
        let ownKey = row.column(SchemaMapping.keyColumn)
        let alias = "t\(aliases)"
        aliases += 1
        switch storage {
        case .column:
            throw PostgresError(
                .invalidParameter,
                "'\(relationship.entity).\(relationship.name)' is not a to-many relationship"
            )
        case .inverseColumn(let name, let table):
            return "(SELECT count(*) FROM \(quoted(table)) AS \(alias) "
                + "WHERE \(alias).\(quoted(name)) = \(ownKey))"
        case .joinTable(let name, let sourceColumn, _, _):
            return "(SELECT count(*) FROM \(quoted(name)) AS \(alias) "
                + "WHERE \(alias).\(quoted(sourceColumn)) = \(ownKey))"
        }
    }
}
