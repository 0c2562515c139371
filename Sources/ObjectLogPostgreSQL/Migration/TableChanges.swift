import Foundation
import ObjectLog
import ObjectLogStore

/// The statements that take the tables of one model version to those of the next, and the
/// rows to write anew: the PostgreSQL store's side of a migration (the engine's side,
/// ``ObjectLog/TableMigration``, says where each property's values come from).
///
/// Values stay where they are whenever they can: a table, column, join table or uniqueness
/// constraint that continues one of the stored version is renamed (`ALTER TABLE … RENAME`)
/// rather than copied, and a new column takes its default in one `UPDATE`. The rows of an
/// entity whose values change (a converted attribute, a relationship kept another way) are
/// written anew from the engine's own translation, so that they end as the log store reads
/// them. When an entity changes hierarchy (its table), every table is made anew from the
/// translated rows (``isRebuild``).
///
/// A migration runs the statements in this order, all in one SQL transaction:
/// 1. ``cleanup``, on the stored version's tables: the objects of removed entities are deleted,
///    and references to them set to `NULL` (the log store reads such a reference as none);
/// 2. the rows of ``rewritten`` are read and translated, through the stored version's tables;
/// 3. ``restructuring``: drops, renames, new tables and columns, defaults;
/// 4. the translated rows are written through the new version's tables, then what their lists
///    give of ``joinFills`` and ``inverseFills``;
/// 5. ``completion``: `NOT NULL`, foreign keys, uniqueness constraints (which check every
///    row), indexes.
struct TableChanges {
    typealias Statement = (text: String, parameters: [String?])

    /// Run first, on the stored version's tables.
    private(set) var cleanup: [Statement] = []
    /// Run once the rows to write anew are read.
    private(set) var restructuring: [Statement] = []
    /// Run last.
    private(set) var completion: [Statement] = []
    /// The entities whose rows are written anew, each with whether its rows are inserted (in a
    /// table that did not hold them) rather than updated.
    private(set) var rewritten: [EntityTag: Bool] = [:]
    /// The join tables made anew whose pairs come from the lists of both sides (each pair
    /// once): the written rows of a side fill them only from the side that writes them.
    private(set) var joinFills: [JoinFill] = []
    /// The to-many relationships whose objects are recorded by their inverse's column, which
    /// no stored value fills (the inverse is new): the owners' lists set that column in the
    /// rows of their objects, so that the relationship keeps them.
    private(set) var inverseFills: [InverseFill] = []

    /// The pairs of a join table made anew that the lists of one side give.
    struct JoinFill {
        var table: String
        var isSource: Bool
        var isOrdered: Bool
        /// The entities whose lists give them, and the relationship.
        var tags: [EntityTag]
        var property: String
    }

    /// The column of a to-many relationship's inverse that the lists of its owners give.
    struct InverseFill {
        var table: String
        var column: String
        var owners: [EntityTag]
        var property: String
    }

    /// Whether every table is made anew: an entity moved to another hierarchy.
    private(set) var isRebuild = false
    /// The tables and join tables that continue the stored version's (by their new names),
    /// whose indexes and foreign keys may carry names PostgreSQL made from their old names.
    private(set) var keptTables: [String] = []

    private let old: SchemaMapping
    private let new: SchemaMapping
    private let migration: TableMigration
    private var stored: ModelSchema { migration.stored }
    private var schema: ModelSchema { migration.schema }
    /// The old table each new table continues (by name), for tables whose root entity was a
    /// root in the stored version.
    private var continued: [String: String] = [:]
    /// Per new table, how each of its columns is made.
    private var plans: [String: [String: ColumnPlan]] = [:]
    private var temporaryNames = 0

    /// How a column of a continued table is made.
    private enum ColumnPlan: Equatable {
        /// The old column of this name, renamed if it is another.
        case inPlace(String)
        /// A new column, filled by defaults and by rewritten rows.
        case fresh
    }

    /// The changes that take the tables of `old` (the mapping of `migration.stored`) to those
    /// of `new` (of `migration.schema`).
    init(from old: SchemaMapping, to new: SchemaMapping, migration: TableMigration) {
        self.old = old
        self.new = new
        self.migration = migration
        planCleanup()
        for table in new.tables {
            guard let root = schema.entity(named: table.name),
                let oldRoot = stored.entity(tag: root.tag), oldRoot.superentity == nil,
                old.tables.contains(where: { $0.name == oldRoot.name })
            else { continue }
            continued[table.name] = oldRoot.name
        }
        // An entity that keeps its objects in another table: every table is made anew.
        for entity in schema.entities {
            guard let before = stored.entity(tag: entity.tag),
                let newTable = tableName(of: entity.tag, in: new),
                let oldTable = tableName(of: before.tag, in: old)
            else { continue }
            if continued[newTable] != oldTable { isRebuild = true }
        }
        if isRebuild { planRebuild() } else { planInPlace() }
        planInverseFills()
    }

    // MARK: - Removed entities

    /// Deletes the objects of removed entities, and sets the references to them to `NULL`:
    /// the log store reads a reference to an object that is gone as none. (The rows of join
    /// tables that name them go with them: their foreign keys cascade.)
    private mutating func planCleanup() {
        let removed = Set(migration.removedTags)
        guard !removed.isEmpty else { return }
        for table in old.tables {
            let tags = table.entities.keys.filter(removed.contains).sorted()
            guard !tags.isEmpty else { continue }
            let keys =
                "SELECT \(quoted(SchemaMapping.keyColumn)) FROM \(quoted(table.name)) WHERE "
                + "\(quoted(SchemaMapping.entityColumn)) IN (\(Self.list(tags)))"
            for (referring, column) in toOneColumns(referring: table.name, in: old, stored) {
                cleanup.append(
                    (
                        "UPDATE \(quoted(referring)) SET \(quoted(column)) = NULL WHERE "
                            + "\(quoted(column)) IN (\(keys))", []
                    )
                )
            }
            cleanup.append(
                (
                    "DELETE FROM \(quoted(table.name)) WHERE \(quoted(SchemaMapping.entityColumn)) "
                        + "IN (\(Self.list(tags)))", []
                )
            )
        }
    }

    // MARK: - Every table anew

    /// Drops every table of the stored version and creates those of the new one, its rows
    /// written anew from their translation.
    private mutating func planRebuild() {
        restructuring.append(("SET LOCAL client_min_messages = warning", []))
        for join in old.joinTables {
            restructuring.append(("DROP TABLE \(quoted(join.name)) CASCADE", []))
        }
        for table in old.tables {
            restructuring.append(("DROP TABLE \(quoted(table.name)) CASCADE", []))
        }
        var references: [String] = []
        for table in new.tables {
            let made = SchemaMapping.statements(creating: table)
            restructuring.append((made.create, []))
            references += made.references
        }
        for join in new.joinTables {
            restructuring.append((SchemaMapping.statement(creating: join), []))
        }
        completion += references.map { ($0, []) }
        completion += new.uniqueIndexes.map { (SchemaMapping.statement(creating: $0), []) }
        completion += PostgresStore.indexStatements(new, schema: schema).map { ($0, []) }
        for entity in schema.entities where stored.entity(tag: entity.tag) != nil {
            rewritten[entity.tag] = true
        }
        for join in new.joinTables { planJoinFill(join) }
    }

    // MARK: - Tables kept

    private mutating func planInPlace() {
        var columnRenames: [(table: String, from: String, to: String)] = []
        var dropped: Set<String> = []
        // Columns.
        for table in new.tables {
            guard let oldName = continued[table.name],
                let before = old.tables.first(where: { $0.name == oldName })
            else { continue }
            let plan = planColumns(of: table, from: before)
            plans[table.name] = plan
            let claimed = Set(
                plan.values.compactMap { if case .inPlace(let q) = $0 { q } else { nil } }
            )
            for column in Self.ownColumns(of: before) where !claimed.contains(column.name) {
                dropped.insert("\(before.name).\(column.name)")
            }
            for (name, how) in plan {
                if case .inPlace(let source) = how, source != name {
                    columnRenames.append((before.name, source, name))
                }
            }
        }
        let joins = planJoinTables()
        let constraints = planConstraints()
        // Restructuring, on the old names first.
        restructuring.append(("SET LOCAL client_min_messages = warning", []))
        // Declared indexes the new version does not have, by name (a renamed table or column
        // gives an index another name: it is dropped and made again).
        let declared = Set(
            new.tables.flatMap { PostgresStore.declaredIndexes(of: $0, schema: schema) }
                .map(\.name)
        )
        for table in old.tables where continued.values.contains(table.name) {
            for index in PostgresStore.declaredIndexes(of: table, schema: stored)
            where !declared.contains(index.name) {
                restructuring.append(("DROP INDEX IF EXISTS \(quoted(index.name))", []))
            }
        }
        for index in constraints.dropped {
            restructuring.append(
                (
                    "ALTER TABLE \(quoted(index.table)) DROP CONSTRAINT IF EXISTS "
                        + quoted(index.name), []
                )
            )
        }
        var temporaryColumns: [(table: String, temporary: String, final: String)] = []
        for rename in columnRenames.sorted(by: { ($0.table, $0.to) < ($1.table, $1.to) }) {
            let temporary = nextTemporaryName()
            restructuring.append(
                (
                    "ALTER TABLE \(quoted(rename.table)) RENAME COLUMN \(quoted(rename.from)) TO "
                        + quoted(temporary), []
                )
            )
            temporaryColumns.append((rename.table, temporary, rename.to))
        }
        for name in dropped.sorted() {
            let parts = name.split(separator: ".", maxSplits: 1).map(String.init)
            restructuring.append(
                ("ALTER TABLE \(quoted(parts[0])) DROP COLUMN \(quoted(parts[1])) CASCADE", [])
            )
        }
        for join in joins.dropped {
            restructuring.append(("DROP TABLE \(quoted(join)) CASCADE", []))
        }
        for table in old.tables where !continued.values.contains(table.name) {
            restructuring.append(("DROP TABLE \(quoted(table.name)) CASCADE", []))
        }
        // Renames of tables and join tables, through temporary names: one may take another's.
        var tableRenames: [(from: String, to: String)] = []
        for (name, oldName) in continued.sorted(by: { $0.key < $1.key }) where name != oldName {
            tableRenames.append((oldName, name))
        }
        tableRenames += joins.renamed
        keptTables =
            continued.keys.sorted()
            + new.joinTables.map(\.name).filter { name in
                !joins.created.contains { $0.name == name }
            }
        var finals: [(temporary: String, final: String)] = []
        for rename in tableRenames {
            let temporary = nextTemporaryName()
            restructuring.append(
                ("ALTER TABLE \(quoted(rename.from)) RENAME TO \(quoted(temporary))", [])
            )
            finals.append((temporary, rename.to))
        }
        for (temporary, final) in finals {
            restructuring.append(
                ("ALTER TABLE \(quoted(temporary)) RENAME TO \(quoted(final))", [])
            )
        }
        let newNameOfTable = Dictionary(
            continued.map { ($0.value, $0.key) },
            uniquingKeysWith: { first, _ in first }
        )
        for column in temporaryColumns {
            let table = newNameOfTable[column.table] ?? column.table
            restructuring.append(
                (
                    "ALTER TABLE \(quoted(table)) RENAME COLUMN \(quoted(column.temporary)) TO "
                        + quoted(column.final), []
                )
            )
        }
        for join in joins.flipped {
            let temporary = nextTemporaryName()
            for (from, to) in [
                ("source", temporary), ("destination", "source"), (temporary, "destination"),
            ] {
                restructuring.append(
                    (
                        "ALTER TABLE \(quoted(join)) RENAME COLUMN \(quoted(from)) TO "
                            + quoted(to), []
                    )
                )
            }
            completion.append((PostgresStore.indexStatement(for: joinTable(join)), []))
        }
        var constraintFinals: [(table: String, temporary: String, final: String)] = []
        for (index, name) in constraints.renamed {
            let temporary = nextTemporaryName()
            restructuring.append(
                (
                    "ALTER TABLE \(quoted(index.table)) RENAME CONSTRAINT \(quoted(name)) TO "
                        + quoted(temporary), []
                )
            )
            constraintFinals.append((index.table, temporary, index.name))
        }
        for rename in constraintFinals {
            restructuring.append(
                (
                    "ALTER TABLE \(quoted(rename.table)) RENAME CONSTRAINT "
                        + "\(quoted(rename.temporary)) TO \(quoted(rename.final))", []
                )
            )
        }
        // New tables, join tables and columns.
        var references: [String] = []
        for table in new.tables where continued[table.name] == nil {
            let made = SchemaMapping.statements(creating: table)
            restructuring.append((made.create, []))
            references += made.references
            completion += PostgresStore.indexStatements(for: table, columns: nil, schema: schema)
                .map { ($0, []) }
        }
        for join in joins.created {
            restructuring.append((SchemaMapping.statement(creating: join), []))
            completion.append((PostgresStore.indexStatement(for: join), []))
        }
        for table in new.tables {
            guard let plan = plans[table.name], let oldName = continued[table.name],
                let before = old.tables.first(where: { $0.name == oldName })
            else { continue }
            references += planColumnChanges(of: table, before: before, plan: plan)
        }
        completion = references.map { ($0, []) } + completion
        completion += constraints.created.map { (SchemaMapping.statement(creating: $0), []) }
        // Every declared index of the kept tables: one they have already stays (`IF NOT
        // EXISTS`), and one whose column a change made anew is made again.
        for table in new.tables where continued[table.name] != nil {
            completion += PostgresStore.declaredIndexes(of: table, schema: schema)
                .map { ($0.create, []) }
        }
    }

    /// The statements that add, fill and constrain the columns of `table`, a table that
    /// continues `before`; returns the foreign keys to add once the rows are written.
    private mutating func planColumnChanges(
        of table: SchemaMapping.Table,
        before: SchemaMapping.Table,
        plan: [String: ColumnPlan]
    ) -> [String] {
        var references: [String] = []
        var fresh: Set<String> = []
        for column in Self.ownColumns(of: table) {
            let required = column.definition.contains(" NOT NULL")
            switch plan[column.name] {
            case .inPlace(let source)?:
                let was = before.columns.first { $0.name == source }
                let wasRequired = was?.definition.contains(" NOT NULL") ?? false
                if wasRequired, !required {
                    restructuring.append(
                        (
                            "ALTER TABLE \(quoted(table.name)) ALTER COLUMN \(quoted(column.name)) "
                                + "DROP NOT NULL", []
                        )
                    )
                }
                if required, !wasRequired { completion.append(notNull(column, in: table)) }
            case .fresh?, nil:
                fresh.insert(column.name)
                restructuring.append(
                    (
                        "ALTER TABLE \(quoted(table.name)) ADD COLUMN \(quoted(column.name)) "
                            + SchemaMapping.type(of: column).replacingOccurrences(
                                of: " NOT NULL",
                                with: ""
                            ), []
                    )
                )
                if let reference = SchemaMapping.reference(of: column, in: table) {
                    references.append(reference)
                }
                if required { completion.append(notNull(column, in: table)) }
            }
            restructuring += fills(of: column, in: table, plan: plan[column.name] ?? .fresh)
        }
        completion += PostgresStore.indexStatements(for: table, columns: fresh, schema: schema)
            .map { ($0, []) }
        return references
    }

    private func notNull(_ column: SchemaMapping.Column, in table: SchemaMapping.Table) -> Statement
    {
        (
            "ALTER TABLE \(quoted(table.name)) ALTER COLUMN \(quoted(column.name)) SET NOT NULL",
            []
        )
    }

    /// The `UPDATE`s that give a kept table's column the value of the objects that do not take
    /// it from the old column: an attribute's default for objects of entities that gain the
    /// attribute, `NULL` for those whose entity no longer has it.
    private func fills(
        of column: SchemaMapping.Column,
        in table: SchemaMapping.Table,
        plan: ColumnPlan
    ) -> [Statement] {
        var byValue: [String?: [UInt32]] = [:]
        var order: [String?] = []
        func add(_ value: String?, _ tag: UInt32) {
            if byValue[value] == nil { order.append(value) }
            byValue[value, default: []].append(tag)
        }
        for tag in stayingTags(of: table) {
            guard let entity = schema.entity(tag: tag), let before = stored.entity(tag: tag)
            else { continue }
            if let property = entity.property(named: column.name),
                property.kind == .attribute || !property.isToMany
            {
                guard migration.source(of: column.name, entity: tag) == .absent else { continue }
                var value: String?
                if property.kind == .attribute,
                    let stored = StoreInspector.defaultValue(of: property), stored != .null
                {
                    value = try? ColumnValue.parameter(stored, type: property.type)
                }
                // A fresh column is NULL already.
                if value == nil, plan == .fresh { continue }
                add(value, tag)
            } else if case .inPlace(let source) = plan, before.property(named: source) != nil {
                // The entity no longer has the property: NULL, where the old column held its
                // value.
                add(nil, tag)
            }
        }
        return order.map { value in
            (
                "UPDATE \(quoted(table.name)) SET \(quoted(column.name)) = $1 WHERE "
                    + "\(quoted(SchemaMapping.entityColumn)) IN "
                    + "(\(Self.list(byValue[value] ?? [])))",
                [value]
            )
        }
    }

    /// How each column (other than key, entity and version) of `table`, which continues
    /// `before`, is made; the rows of entities whose values cannot stay are marked rewritten.
    private mutating func planColumns(
        of table: SchemaMapping.Table,
        from before: SchemaMapping.Table
    ) -> [String: ColumnPlan] {
        var plan: [String: ColumnPlan] = [:]
        var claimed: Set<String> = []
        let staying = stayingTags(of: table)
        let positions = positionColumns(of: table, in: new, schema)
        let oldPositions = positionColumns(of: before, in: old, stored)
        let oldColumns = Dictionary(
            Self.ownColumns(of: before).map { ($0.name, $0) },
            uniquingKeysWith: { first, _ in first }
        )
        // Property columns first: a position column follows its inverse's.
        for column in Self.ownColumns(of: table) where positions[column.name] == nil {
            var source: String?
            var consistent = true
            var copies = false
            var writers: [EntityTag] = []
            for tag in staying {
                guard let property = schema.entity(tag: tag)?.property(named: column.name),
                    property.kind == .attribute || !property.isToMany
                else { continue }
                switch migration.source(of: column.name, entity: tag) {
                case .copied(let name)?:
                    copies = true
                    writers.append(tag)
                    if source == nil { source = name } else if source != name { consistent = false }
                case .converted?:
                    consistent = false
                    writers.append(tag)
                case .absent?, nil:
                    continue
                }
            }
            if consistent, copies, let source, !claimed.contains(source),
                let was = oldColumns[source], oldPositions[source] == nil,
                Self.bare(was) == Self.bare(column),
                referencesContinue(source, of: before, column.name, of: table)
            {
                plan[column.name] = .inPlace(source)
                claimed.insert(source)
            } else {
                plan[column.name] = .fresh
                for tag in writers { rewritten[tag] = false }
            }
        }
        for (column, position) in positions.sorted(by: { $0.key < $1.key }) {
            // In place when the inverse's column is, and every owner's list is the old one's,
            // kept in order by the old position column.
            var inPlace = false
            if case .inPlace(let inverseSource)? = plan[position.inverse],
                oldPositions[inverseSource + "_position"] != nil,
                !claimed.contains(inverseSource + "_position")
            {
                inPlace = position.owners.allSatisfy { tag in
                    switch migration.source(of: position.property, entity: tag) {
                    case .copied(let name)?:
                        guard let was = stored.entity(tag: tag)?.property(named: name) else {
                            return false
                        }
                        return was.isOrdered && was.inverse == inverseSource
                    case nil: return true
                    default: return false
                    }
                }
            }
            if inPlace, case .inPlace(let inverseSource)? = plan[position.inverse] {
                plan[column] = .inPlace(inverseSource + "_position")
                claimed.insert(inverseSource + "_position")
            } else {
                // The owners' lists, written again, give the positions.
                plan[column] = .fresh
                for tag in position.owners {
                    switch migration.source(of: position.property, entity: tag) {
                    case .copied?, .converted?: rewritten[tag] = rewritten[tag] ?? false
                    default: continue
                    }
                }
            }
        }
        return plan
    }

    /// Whether the to-one column `name` of `table`, kept in place from `source` of `before`,
    /// still refers to the table it referred to (continued by it); true for an attribute.
    private func referencesContinue(
        _ source: String,
        of before: SchemaMapping.Table,
        _ name: String,
        of table: SchemaMapping.Table
    ) -> Bool {
        let oldTarget = Self.referencedTable(of: before.columns.first { $0.name == source })
        let newTarget = Self.referencedTable(of: table.columns.first { $0.name == name })
        guard let newTarget else { return oldTarget == nil }
        return continued[newTarget] == oldTarget
    }

    // MARK: - Join tables

    /// Which join tables are kept (renamed, their columns swapped when the relationship that
    /// names them changed sides), created and dropped.
    private mutating func planJoinTables() -> (
        renamed: [(from: String, to: String)], flipped: [String],
        created: [SchemaMapping.JoinTable], dropped: [String]
    ) {
        var renamed: [(from: String, to: String)] = []
        var flipped: [String] = []
        var created: [SchemaMapping.JoinTable] = []
        var claimed: Set<String> = []
        for join in new.joinTables {
            guard let (source, flip) = oldJoinTable(of: join), !claimed.contains(source.name)
            else {
                created.append(join)
                planJoinFill(join)
                continue
            }
            claimed.insert(source.name)
            if source.name != join.name { renamed.append((source.name, join.name)) }
            if flip { flipped.append(join.name) }
        }
        let dropped = old.joinTables.map(\.name).filter { !claimed.contains($0) }
        return (renamed, flipped, created, dropped)
    }

    /// The old join table whose pairs `join` keeps, and whether its columns swap sides; nil
    /// when `join` is made anew.
    private func oldJoinTable(
        of join: SchemaMapping.JoinTable
    ) -> (SchemaMapping.JoinTable, flip: Bool)? {
        var found: (SchemaMapping.JoinTable, flip: Bool)?
        for (side, tags) in joinSides(of: join, in: new, schema) {
            for tag in tags {
                switch migration.source(of: side.property, entity: tag) {
                case .copied(let name)?:
                    guard let entity = stored.entity(tag: tag),
                        let before = joinSide(of: name, of: entity, in: old, stored),
                        let table = old.joinTables.first(where: { $0.name == before.table })
                    else { return nil }
                    let flip = before.isSource != side.isSource
                    if let (earlier, earlierFlip) = found,
                        earlier.name != table.name || earlierFlip != flip
                    {
                        return nil
                    }
                    found = (table, flip)
                case .absent?, nil:
                    // A side the old version lacked: it sees the pairs the other side keeps.
                    continue
                case .converted?:
                    return nil
                }
            }
        }
        guard let (table, flip) = found, table.isOrdered == join.isOrdered else { return nil }
        let (sourceTable, destinationTable) =
            flip
            ? (table.destinationTable, table.sourceTable)
            : (table.sourceTable, table.destinationTable)
        guard continued[join.sourceTable] == sourceTable,
            continued[join.destinationTable] == destinationTable
        else { return nil }
        return (table, flip)
    }

    /// Marks the entities of the sides of a join table made anew as rewritten, and notes that
    /// their lists fill it.
    private mutating func planJoinFill(_ join: SchemaMapping.JoinTable) {
        for (side, tags) in joinSides(of: join, in: new, schema) {
            let surviving = tags.filter { tag in
                switch migration.source(of: side.property, entity: tag) {
                case .copied?, .converted?: true
                default: false
                }
            }
            guard !surviving.isEmpty else { continue }
            for tag in surviving { rewritten[tag] = rewritten[tag] ?? false }
            joinFills.append(
                JoinFill(
                    table: join.name,
                    isSource: side.isSource,
                    isOrdered: join.isOrdered,
                    tags: surviving,
                    property: side.property
                )
            )
        }
    }

    private func joinTable(_ name: String) -> SchemaMapping.JoinTable {
        new.joinTables.first { $0.name == name }
            ?? SchemaMapping.JoinTable(
                name: name,
                sourceTable: "",
                destinationTable: "",
                isOrdered: false,
                writtenFromSource: true
            )
    }

    // MARK: - Inverses

    /// Notes the to-many relationships whose inverse, a to-one, is new while the relationship
    /// has stored objects: the inverse's column is where this store keeps the relationship,
    /// so the owners' lists fill it.
    private mutating func planInverseFills() {
        for entity in schema.entities where stored.entity(tag: entity.tag) != nil {
            for property in entity.properties
            where property.kind == .relationship && property.isToMany {
                guard let inverseName = property.inverse,
                    let destination = property.destination.flatMap({ schema.entity(named: $0) }),
                    let inverse = destination.property(named: inverseName), !inverse.isToMany,
                    let table = tableName(of: destination.tag, in: new)
                else { continue }
                switch migration.source(of: property.name, entity: entity.tag) {
                case .copied?, .converted?: break
                default: continue
                }
                let continuing = schema.family(of: destination.name).filter {
                    stored.entity(tag: $0.tag) != nil
                }
                guard
                    continuing.allSatisfy({
                        migration.source(of: inverseName, entity: $0.tag) == .absent
                    })
                else { continue }
                rewritten[entity.tag] = rewritten[entity.tag] ?? false
                inverseFills.append(
                    InverseFill(
                        table: table,
                        column: inverseName,
                        owners: [entity.tag],
                        property: property.name
                    )
                )
            }
        }
    }

    // MARK: - Uniqueness constraints

    /// Which uniqueness constraints are kept (renamed where their table's name changed),
    /// created and dropped.
    private func planConstraints() -> (
        renamed: [(SchemaMapping.UniqueIndex, String)], created: [SchemaMapping.UniqueIndex],
        dropped: [SchemaMapping.UniqueIndex]
    ) {
        var renamed: [(SchemaMapping.UniqueIndex, String)] = []
        var created: [SchemaMapping.UniqueIndex] = []
        var kept: Set<String> = []
        for index in new.uniqueIndexes {
            let plan = plans[index.table] ?? [:]
            let match = old.uniqueIndexes.first { before in
                !kept.contains(before.name) && continued[index.table] == before.table
                    && before.tags == index.tags
                    && before.attributes.count == index.attributes.count
                    && zip(before.attributes, index.attributes).allSatisfy { was, now in
                        plan[now] == .inPlace(was)
                    }
            }
            guard let match else {
                created.append(index)
                continue
            }
            kept.insert(match.name)
            if match.name != index.name { renamed.append((index, match.name)) }
        }
        let dropped = old.uniqueIndexes.filter { index in
            !kept.contains(index.name) && continued.values.contains(index.table)
        }
        return (renamed, created, dropped)
    }

    // MARK: - Helpers

    /// The tags of entities whose objects stay in `table` (a new table): those the stored
    /// version kept in the table it continues.
    private func stayingTags(of table: SchemaMapping.Table) -> [UInt32] {
        guard let oldName = continued[table.name],
            let before = old.tables.first(where: { $0.name == oldName })
        else { return [] }
        return table.entities.keys.filter { before.entities[$0] != nil }.sorted()
    }

    /// The columns of `table` other than its key, entity and version.
    private static func ownColumns(of table: SchemaMapping.Table) -> [SchemaMapping.Column] {
        table.columns.filter { column in
            ![SchemaMapping.keyColumn, SchemaMapping.entityColumn, SchemaMapping.versionColumn]
                .contains(column.name)
        }
    }

    /// A column's SQL type without `NOT NULL` and its foreign key.
    private static func bare(_ column: SchemaMapping.Column) -> String {
        SchemaMapping.type(of: column).replacingOccurrences(of: " NOT NULL", with: "")
    }

    /// The table a column's foreign key refers to; nil for a column without one.
    private static func referencedTable(of column: SchemaMapping.Column?) -> String? {
        guard let column, let range = column.definition.range(of: " REFERENCES ") else {
            return nil
        }
        // `REFERENCES "Name" (…)`, the name quoted by `quoted(_:)`.
        var name = ""
        var rest = column.definition[range.upperBound...].dropFirst()
        while let character = rest.first {
            rest = rest.dropFirst()
            if character == "\"" {
                if rest.first == "\"" {
                    name.append("\"")
                    rest = rest.dropFirst()
                    continue
                }
                break
            }
            name.append(character)
        }
        return name
    }

    /// The table of `mapping` that holds the objects of the entity tagged `tag`.
    private func tableName(of tag: UInt32, in mapping: SchemaMapping) -> String? {
        mapping.tables.first { $0.entities[tag] != nil }?.name
    }

    /// The to-one columns of `mapping` (by table) whose destination's objects are in the table
    /// `target`.
    private func toOneColumns(
        referring target: String,
        in mapping: SchemaMapping,
        _ schema: ModelSchema
    ) -> [(table: String, column: String)] {
        var found: [(table: String, column: String)] = []
        for table in mapping.tables {
            var seen: Set<String> = []
            for tag in table.entities.keys.sorted() {
                guard let entity = schema.entity(tag: tag) else { continue }
                for property in entity.properties
                where property.kind == .relationship && !property.isToMany
                    && seen.insert(property.name).inserted
                {
                    guard let destination = property.destination,
                        let destinationTag = schema.entity(named: destination)?.tag,
                        tableName(of: destinationTag, in: mapping) == target
                    else { continue }
                    found.append((table.name, property.name))
                }
            }
        }
        return found
    }

    /// The position columns of `table`: for each, the ordered to-many relationship whose
    /// objects' positions it keeps (the tags of the entities that have it), and its inverse,
    /// the to-one column beside it.
    private func positionColumns(
        of table: SchemaMapping.Table,
        in mapping: SchemaMapping,
        _ schema: ModelSchema
    ) -> [String: (property: String, inverse: String, owners: [UInt32])] {
        let propertyColumns = Set(
            table.entities.keys.compactMap { schema.entity(tag: $0) }.flatMap { entity in
                entity.properties.map(\.name)
            }
        )
        var found: [String: (property: String, inverse: String, owners: [UInt32])] = [:]
        for entity in schema.entities {
            for property in entity.properties
            where property.kind == .relationship && property.isToMany && property.isOrdered {
                guard let inverse = property.inverse,
                    let destination = property.destination.flatMap({ schema.entity(named: $0) }),
                    table.entities[destination.tag] != nil,
                    destination.property(named: inverse).map({ !$0.isToMany }) == true
                else { continue }
                let column = inverse + "_position"
                guard !propertyColumns.contains(column),
                    table.columns.contains(where: { $0.name == column })
                else { continue }
                found[column, default: (property.name, inverse, [])].owners.append(entity.tag)
            }
        }
        return found
    }

    /// The relationships kept in `join`: for each side, its property and whether its objects
    /// are the table's sources, with the tags of the entities that have it.
    private func joinSides(
        of join: SchemaMapping.JoinTable,
        in mapping: SchemaMapping,
        _ schema: ModelSchema
    ) -> [(side: (property: String, isSource: Bool), tags: [UInt32])] {
        var sides: [(side: (property: String, isSource: Bool), tags: [UInt32])] = []
        for (name, side) in mapping.joinSides.sorted(by: { $0.key < $1.key })
        where side.table == join.name {
            let parts = name.split(separator: ".", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { continue }
            let tags = schema.family(of: parts[0]).filter { entity in
                joinSide(of: parts[1], of: entity, in: mapping, schema)?.table == join.name
            }.map(\.tag)
            sides.append(((parts[1], side.isSource), tags))
        }
        return sides
    }

    /// The join side of relationship `property` of `entity`, found by the entity that declares
    /// it (the nearest ancestor that has it), as ``RowLayout`` finds it.
    private func joinSide(
        of property: String,
        of entity: ModelSchema.Entity,
        in mapping: SchemaMapping,
        _ schema: ModelSchema
    ) -> SchemaMapping.JoinSide? {
        var current: ModelSchema.Entity? = entity
        var found: SchemaMapping.JoinSide?
        while let candidate = current {
            if let side = mapping.joinSides["\(candidate.name).\(property)"] { found = side }
            current = candidate.superentity.flatMap { schema.entity(named: $0) }
        }
        return found
    }

    private mutating func nextTemporaryName() -> String {
        temporaryNames += 1
        return "objectlog_migrating_\(temporaryNames)"
    }

    /// Entity tags as an SQL list (numbers only: nothing to quote).
    static func list(_ tags: [UInt32]) -> String {
        tags.map(String.init).joined(separator: ", ")
    }
}
