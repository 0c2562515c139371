import Foundation
import ObjectLog
import ObjectLogStore

extension PostgresStore {
    /// The records of the rows of `layout`'s table that `condition` selects, in key order.
    ///
    /// `condition` is SQL over the table as `t`, with `parameters` as its values.
    func records(
        of layout: RowLayout,
        where condition: String,
        _ parameters: [String?]
    ) throws(PostgresError) -> [StoredRow] {
        try locked { connection throws(PostgresError) in
            try connection.query(
                "SELECT \(layout.selectList) FROM \(quoted(layout.table)) t WHERE \(condition) "
                    + "ORDER BY t.\(quoted(SchemaMapping.keyColumn))",
                parameters.map { $0.map(PostgresParameter.text) }
            ) { rows throws(PostgresError) in
                var records: [StoredRow] = []
                records.reserveCapacity(rows.count)
                var writer = PayloadWriter()
                var steps: (tag: UInt32, steps: [RowLayout.ReadStep])?
                for row in 0..<rows.count {
                    writer.removeAll()
                    let (key, entity, version) = try layout.appendRecord(
                        rows.row(row),
                        to: &writer,
                        steps: &steps
                    )
                    records.append((key, entity, version, writer.bytes))
                }
                return records
            }
        }
    }

    /// The records of the rows of `layout`'s table that `condition` selects, packed side by
    /// side: ``records(of:where:_:)`` for many rows, in the order the server finds them.
    ///
    /// Key order would make the server walk the key index, or sort, where a sequential scan is
    /// cheaper; the engine sorts what it fetches itself.
    func packedRecords(
        of layout: RowLayout,
        where condition: String,
        _ parameters: [String?],
        alias: String
    ) throws(PostgresError) -> PackedRecords {
        let statement =
            "SELECT \(layout.selectList(alias: alias)) FROM \(quoted(layout.table)) \(alias) "
            + "WHERE \(condition)"
        // One value holds what the rows become, and the closures below mutate it in place: a
        // local function capturing several variables instead makes each row pay for dynamic
        // exclusivity checks on them.
        var packing = RecordPacking(layout: layout)
        try locked { connection throws(PostgresError) in
            // A statement without values (a fetch of every object, most often) streams its
            // rows through COPY, which builds no result of them; COPY takes no parameters.
            if parameters.isEmpty {
                // Room for the rows the server's statistics expect, so that a large read does
                // not copy and fault in its arrays again each time they double.
                let expected = try expectedRows(of: layout.table, connection)
                packing.reserve(rows: expected)
                try connection.copyOut("COPY (\(statement)) TO STDOUT (FORMAT binary)") {
                    row throws(PostgresError) in
                    try packing.append(row)
                    if packing.packed.keys.count == 1, expected > 1 {
                        packing.reservePayloads(perRow: 9, of: expected, per: 8)
                    }
                }
                return
            }
            try connection.query(statement, parameters.map { $0.map(PostgresParameter.text) }) {
                rows throws(PostgresError) in
                packing.reserve(rows: rows.count)
                for row in 0..<rows.count {
                    try packing.append(rows.row(row))
                    // Room for the rest at the first row's size, with a margin: growing by
                    // doubling would copy and touch the bytes twice over.
                    if row == 0 { packing.reservePayloads(perRow: 5, of: rows.count, per: 4) }
                }
            }
        }
        return packing.finish()
    }

    /// How many rows the server's statistics say `table` holds (a little more, for the rows
    /// added since they were taken); 0 when it has none.
    private func expectedRows(
        of table: String,
        _ connection: PostgresConnection
    ) throws(PostgresError) -> Int {
        let rows = try connection.execute(
            "SELECT reltuples FROM pg_class WHERE oid = to_regclass($1)",
            [quoted(table)]
        ).rows
        guard let text = rows.first?.first ?? nil, let tuples = Double(text), tuples >= 1,
            tuples < 1e12
        else { return 0 }
        return Int(tuples) + Int(tuples) / 16
    }

    /// The model-version records among `keys` (all of them when nil).
    func schemaRecords(
        _ keys: [ObjectKey]?
    ) throws(PostgresError) -> [StoredRow] {
        let key = quoted(SchemaMapping.keyColumn)
        let rows = try locked { connection throws(PostgresError) in
            try connection.execute(
                "SELECT \(key), \(quoted(SchemaMapping.versionColumn)), schema FROM "
                    + "\(quoted(Self.versionsTable))"
                    + (keys == nil ? "" : " WHERE \(key) = ANY($1::bigint[])")
                    + " ORDER BY \(key)",
                keys.map { [Self.array($0)] } ?? []
            ).rows
        }
        return rows.compactMap { row in
            guard let key = row[0].flatMap({ ObjectKey($0) }),
                let version = row[1].flatMap({ UInt64($0) }), let schema = row[2]
            else { return nil }
            return (key, ModelHistory.schemaEntityTag, version, Array(schema.utf8))
        }
    }

    /// `keys` as a PostgreSQL array parameter.
    static func array(_ keys: some Sequence<ObjectKey>) -> String {
        "{" + keys.map(String.init).joined(separator: ",") + "}"
    }

    /// The condition that selects the rows of `entity` in `layout`'s table (every entity of
    /// the table when nil): none when the table holds that entity alone, so that the server
    /// tests nothing on each row.
    static func entityCondition(_ entity: EntityTag?, in layout: RowLayout) -> String {
        guard let entity, entity != layout.soleEntity else { return "true" }
        return "t.\(quoted(SchemaMapping.entityColumn)) = \(entity)"
    }

    /// The records of `keys`, wherever they are, in the order of `keys` (keys without a live
    /// object left out).
    func records(
        keys: [ObjectKey]
    ) throws(PostgresError) -> [StoredRow] {
        guard !keys.isEmpty else { return [] }
        let parameter = Self.array(keys)
        var found: [ObjectKey: StoredRow] =
            [:]
        for layout in layouts {
            for record in try records(
                of: layout,
                where: "t.\(quoted(SchemaMapping.keyColumn)) = ANY($1::bigint[])",
                [parameter]
            ) {
                found[record.key] = record
            }
        }
        // Model versions are read rarely: only keys no table holds are looked for there.
        let missing = keys.filter { found[$0] == nil }
        if !missing.isEmpty {
            for record in try schemaRecords(missing) { found[record.key] = record }
        }
        return keys.compactMap { found[$0] }
    }

    /// The records of the live objects of `entity` (of every entity when nil), in key order.
    func records(
        entity: EntityTag?
    ) throws(PostgresError) -> [StoredRow] {
        if entity == ModelHistory.schemaEntityTag { return try schemaRecords(nil) }
        if let entity {
            guard let index = layoutOfTag[entity] else { return [] }
            let layout = layouts[index]
            return try records(of: layout, where: Self.entityCondition(entity, in: layout), [])
        }
        var all: [StoredRow] = []
        for layout in layouts { all += try records(of: layout, where: "true", []) }
        all += try schemaRecords(nil)
        return all.sorted { $0.key < $1.key }
    }

    /// Keys, entities and versions of the rows of `keys` (every row when nil) of `entity` (of
    /// every entity when nil), over every table, in key order.
    func keysAndVersions(
        keys: [ObjectKey]?,
        entity: EntityTag?
    ) throws(PostgresError) -> [(key: ObjectKey, entity: UInt32, version: UInt64)] {
        let key = quoted(SchemaMapping.keyColumn)
        let version = quoted(SchemaMapping.versionColumn)
        let keyCondition = keys == nil ? "true" : "t.\(key) = ANY($1::bigint[])"
        var selects: [String] = []
        for layout in layouts where entity == nil || layout.entities[entity!] != nil {
            selects.append(
                "SELECT t.\(key), t.\(quoted(SchemaMapping.entityColumn)), t.\(version) FROM "
                    + "\(quoted(layout.table)) t WHERE \(keyCondition) AND "
                    + Self.entityCondition(entity, in: layout)
            )
        }
        if entity == nil || entity == ModelHistory.schemaEntityTag {
            selects.append(
                "SELECT t.\(key), \(ModelHistory.schemaEntityTag), t.\(version) FROM "
                    + "\(quoted(Self.versionsTable)) t WHERE \(keyCondition)"
            )
        }
        guard !selects.isEmpty else { return [] }
        let rows = try locked { connection throws(PostgresError) in
            try connection.execute(
                selects.joined(separator: " UNION ALL ") + " ORDER BY 1",
                keys.map { [Self.array($0)] } ?? []
            ).rows
        }
        return rows.compactMap { row in
            guard let key = row[0].flatMap({ ObjectKey($0) }),
                let entity = row[1].flatMap({ UInt32($0) }),
                let version = row[2].flatMap({ UInt64($0) })
            else { return nil }
            return (key, entity, version)
        }
    }

    // MARK: The seam's reads

    package func location(of key: ObjectKey) throws -> RecordLocation? {
        guard let found = try keysAndVersions(keys: [key], entity: nil).first else { return nil }
        return RecordLocation(entity: found.entity, offset: found.version, length: 0)
    }

    package func locationAndGeneration(
        of key: ObjectKey
    ) throws -> (location: RecordLocation?, generation: UInt64) {
        (try location(of: key), 1)
    }

    package func recordOffsetsAndGeneration(
        of keys: [ObjectKey]
    ) throws -> (offsets: [UInt64?], generation: UInt64) {
        let found = try keysAndVersions(keys: keys, entity: nil)
        let versions = Dictionary(
            found.map { ($0.key, $0.version) },
            uniquingKeysWith: { first, _ in first }
        )
        return (keys.map { versions[$0] }, 1)
    }

    package func liveKeys(entity: EntityTag?) throws -> [ObjectKey] {
        try keysAndVersions(keys: nil, entity: entity).map(\.key)
    }

    package func liveCount(entity: EntityTag?) throws -> Int {
        if entity == ModelHistory.schemaEntityTag { return try schemaRecords(nil).count }
        var selects: [String] = []
        for layout in layouts where entity.map({ layout.entities[$0] != nil }) ?? true {
            selects.append(
                "SELECT count(*) AS n FROM \(quoted(layout.table)) t WHERE "
                    + Self.entityCondition(entity, in: layout)
            )
        }
        if entity == nil {
            selects.append("SELECT count(*) AS n FROM \(quoted(Self.versionsTable))")
        }
        guard !selects.isEmpty else { return 0 }
        let total = try locked { connection throws(PostgresError) in
            try connection.execute(
                "SELECT sum(n) FROM (\(selects.joined(separator: " UNION ALL "))) counts"
            ).rows.first?.first
        }
        guard let text = total ?? nil, let count = Int(text) else {
            throw PostgresError(.statementFailed, "the server returned no count")
        }
        return count
    }

    package func readObject(_ key: ObjectKey) throws -> (payload: [UInt8], blobs: [BlobID])? {
        guard let record = try records(keys: [key]).first else { return nil }
        return (record.payload, [])
    }

    package func withObject(
        _ key: ObjectKey,
        entity: EntityTag?,
        _ body: (
            _ value: UnsafeRawBufferPointer, _ blobs: [BlobID], _ location: RecordLocation,
            _ generation: UInt64
        ) throws -> Void
    ) throws -> Bool {
        // An object of a known entity is in its hierarchy's table: one query, not one a table.
        let record: StoredRow?
        if let entity, let index = layoutOfTag[entity] {
            record = try records(
                of: layouts[index],
                where: "t.\(quoted(SchemaMapping.keyColumn)) = $1",
                [String(key)]
            ).first
        } else {
            record = try records(keys: [key]).first
        }
        guard let record else { return false }
        let location = RecordLocation(
            entity: record.entity,
            offset: record.version,
            length: UInt32(clamping: record.payload.count)
        )
        try record.payload.withUnsafeBytes { try body($0, [], location, 1) }
        return true
    }

    package func forEachLiveObject(
        entity: EntityTag?,
        _ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        for record in try records(entity: entity) {
            try record.payload.withUnsafeBytes { try body(record.key, record.entity, $0) }
        }
    }

    package func forEachObject(
        keys: [ObjectKey],
        _ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        try forEachObject(in: readPlan(keys: keys), body)
    }

    package func readPlan(keys: [ObjectKey]) throws -> any StoreReadPlan {
        RecordsPlan(try records(keys: keys))
    }

    package func readPlan(keyParts: [[ObjectKey]]) throws -> any StoreReadPlan {
        RecordsPlan(try records(keys: keyParts.flatMap { $0 }))
    }

    package func liveObjectPlans(entity: EntityTag?, parts: Int) throws -> [any StoreReadPlan] {
        RecordsPlan(try records(entity: entity)).split(parts: parts)
    }

    package func split(_ plan: any StoreReadPlan, parts: Int) -> [any StoreReadPlan] {
        RecordsPlan.of(plan, store: "a PostgreSQL store").split(parts: parts)
    }

    package func forEachObject(
        in plan: any StoreReadPlan,
        _ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        try RecordsPlan.of(plan, store: "a PostgreSQL store").forEach(body)
    }

    // MARK: External data

    package func readBlob(_ id: BlobID) throws -> Data {
        if let pending = withPendingBlobs({ $0[id] }) { return pending }
        let digest = try ColumnValue.parameter(.data(Data(id.bytes)), type: .data)
        for (table, column) in externalColumns {
            let rows = try locked { connection throws(PostgresError) in
                try connection.execute(
                    "SELECT \(quoted(column)) FROM \(quoted(table)) WHERE "
                        + "sha256(\(quoted(column))) = $1::bytea LIMIT 1",
                    [digest]
                ).rows
            }
            if let text = rows.first?.first ?? nil,
                case .data(let bytes)? = ColumnValue.value(text, type: .data)
            {
                return bytes
            }
        }
        // Data that no row holds any more may be an old value the history keeps.
        if let kept = try historyBlob(id) { return kept }
        throw StoreError(.missingBlob, "external data \(id.hex) is missing", path: displayName)
    }

    package func writeBlob(_ bytes: Data) throws -> BlobID {
        let id = BlobID(contentsOf: bytes)
        withPendingBlobs { $0[id] = bytes }
        return id
    }
}

extension PostgresStore {
    // The query's rows are read by one statement: the query's own (``SQLSelect``) selects the
    // keys, and the rows of those keys come back whole, in no particular order. The engine
    // sorts what it fetches itself (ties in key order, as the statement's window orders
    // them), so the order they come in changes nothing.
    package func candidates(
        for query: StoreQuery,
        adding keys: [ObjectKey]
    ) throws
        -> (any StoreReadPlan)?
    {
        var query = query
        // The server cuts the window only when every row it leaves out would be left out by
        // the engine too: not when the context has changed objects, which the engine tests as
        // the context has them. It returns the whole window from the start; the engine skips
        // the offset itself.
        if query.appliesWindow, keys.isEmpty, let limit = query.fetchLimit {
            query.fetchLimit = limit + query.fetchOffset
        } else {
            query.fetchLimit = nil
        }
        query.fetchOffset = 0
        // Without a window the engine's sort is all the order there is to keep.
        if query.fetchLimit == nil { query.sortKeys = nil }
        guard let select = keySelect(query) else { return nil }
        guard let tag = query.entityTags.first, let index = layoutOfTag[tag] else { return nil }
        // The rows come from the query's own statement: its condition (and its order and
        // window, when it cuts one) on the table, with the whole rows selected.
        var selected = try packedRecords(
            of: layouts[index],
            where: (select.condition ?? "true")
                + (select.appliesWindow ? select.orderAndWindow : ""),
            select.parameters,
            alias: select.alias
        )
        if !keys.isEmpty {
            let found = Set(selected.keys)
            for record in try records(keys: keys.filter { !found.contains($0) }) {
                selected.append(record)
            }
        }
        return RecordsPlan(packed: selected)
    }

    /// The statement that selects the keys of `query`'s objects; nil when the store cannot
    /// write it (an entity of another model version, say).
    func keySelect(_ query: StoreQuery) -> SQLSelect? {
        try? SQLSelect(query, schema: schema, mapping: mapping, columns: [SchemaMapping.keyColumn])
    }
}

/// The records of rows as they arrive, packed: each row's key, entity and version, and its
/// payload after the others in one buffer.
private struct RecordPacking {
    let layout: RowLayout
    var packed = PackedRecords()
    var writer = PayloadWriter()
    /// The read steps of the entity of the rows before, which most rows share.
    var steps: (tag: UInt32, steps: [RowLayout.ReadStep])?

    init(layout: RowLayout) {
        self.layout = layout
    }

    mutating func reserve(rows: Int) {
        guard rows > 0 else { return }
        packed.keys.reserveCapacity(rows)
        packed.entities.reserveCapacity(rows)
        packed.versions.reserveCapacity(rows)
        packed.ends.reserveCapacity(rows)
    }

    /// Room for the payloads of `rows` rows at the size of those so far, times
    /// `numerator / denominator`.
    mutating func reservePayloads(perRow numerator: Int, of rows: Int, per denominator: Int) {
        writer.reserveCapacity(writer.count * rows * numerator / denominator)
    }

    mutating func append(_ row: some RowValues) throws(PostgresError) {
        let (key, entity, version) = try layout.appendRecord(row, to: &writer, steps: &steps)
        packed.keys.append(key)
        packed.entities.append(entity)
        packed.versions.append(version)
        packed.ends.append(writer.count)
    }

    consuming func finish() -> PackedRecords {
        packed.bytes = writer.bytes
        return packed
    }
}
