import Foundation
import ObjectLog
import TestSupport
import Testing

// A differential test: a seeded random workload runs on ObjectLog and on SQLite side by side,
// and every answer ObjectLog gives is compared with SQLite's.
//
// SQLite holds the saved state in plain tables (one per entity, a join table for the
// many-to-many relationship). The writing context's unsaved changes are kept as SQL statements
// too, and replayed in a transaction that is rolled back whenever a question is about the
// context's own view (`includesPendingChanges`); a save commits them. Each object has a unique
// integer `ident` and its ObjectKey (`objectID.key`) mirrored in SQLite, so results compare as
// ordered lists of keys: a sort's ties break by key, and an unsorted request returns key order,
// in both engines.
//
// CI runs a short form: seeds 1 to 8, 300 steps each, a few seconds. Environment variables
// make it longer or help with a failure:
//
//     OBJECTLOG_DIFFERENTIAL_SEEDS=200      seeds 1...200
//     OBJECTLOG_DIFFERENTIAL_STEPS=2000     steps per seed
//     OBJECTLOG_DIFFERENTIAL_SEED=17        seed 17 only
//     OBJECTLOG_DIFFERENTIAL_TRACE=1        print every step's operation
//     OBJECTLOG_DIFFERENTIAL_MISMATCHES=N   stop a seed after N mismatches (10)
//
// e.g. `OBJECTLOG_DIFFERENTIAL_SEEDS=200 swift test --filter DifferentialTests`. Every failure
// message starts with the seed and step that reproduce it, and the operation of that step.

// MARK: - The model

/// An entity on the to-one side of the relationship with `DiffItem`.
final class DiffOwner: ManagedObject {
    /// The test's stable identity, mirrored in SQLite.
    ///
    /// Unique, so that a second insert of the same value is an upsert under
    /// `MergePolicy.overwrite`.
    @Attribute(.unique) var ident = 0
    @Attribute var name = ""
    @Attribute var rank = 0
    @Relationship(inverse: \DiffItem.owner, deleteRule: .nullify) var items: Set<DiffItem>
}

/// The entity most queries ask about: attributes of every kind the queries compare, a to-one
/// relationship and a many-to-many one.
final class DiffItem: ManagedObject {
    @Attribute(.unique) var ident = 0
    @Attribute var name = ""
    @Attribute var count = 0
    @Attribute var score = 0.0
    @Attribute var note: String? = nil
    @Attribute var flag = false
    @Relationship var owner: DiffOwner?
    @Relationship var tags: Set<DiffTag>
}

/// The other side of the many-to-many relationship.
final class DiffTag: ManagedObject {
    @Attribute(.unique) var ident = 0
    @Attribute var label = ""
    @Relationship(inverse: \DiffItem.tags, deleteRule: .nullify) var items: Set<DiffItem>
}

// MARK: - The suite

@Suite("Differential test against SQLite")
struct DifferentialTests {
    static let environment = ProcessInfo.processInfo.environment

    static let seeds: [UInt64] = {
        if let seed = environment["OBJECTLOG_DIFFERENTIAL_SEED"].flatMap(UInt64.init) {
            return [seed]
        }
        let count = environment["OBJECTLOG_DIFFERENTIAL_SEEDS"].flatMap(Int.init) ?? 8
        return Array(1...UInt64(max(1, count)))
    }()

    static let steps = environment["OBJECTLOG_DIFFERENTIAL_STEPS"].flatMap(Int.init) ?? 300

    @Test("every fetch, identifier fetch and count agrees with SQLite", arguments: seeds)
    func agreesWithSQLite(seed: UInt64) throws {
        let run = try DifferentialRun(seed: seed)
        run.run(steps: Self.steps)
    }
}

// MARK: - Tables and values

/// The reference's tables, one per entity.
private enum Table: String, CaseIterable {
    case owner
    case item
    case tag

    var entityName: String {
        switch self {
        case .owner: DiffOwner.entityName
        case .item: DiffItem.entityName
        case .tag: DiffTag.entityName
        }
    }

    static let schema = [
        "CREATE TABLE owner(ident INTEGER PRIMARY KEY, okey INTEGER NOT NULL, name TEXT NOT NULL, rank INTEGER NOT NULL)",
        """
        CREATE TABLE item(ident INTEGER PRIMARY KEY, okey INTEGER NOT NULL, name TEXT NOT NULL, \
        count INTEGER NOT NULL, score REAL NOT NULL, note TEXT, flag INTEGER NOT NULL, owner INTEGER)
        """,
        "CREATE TABLE tag(ident INTEGER PRIMARY KEY, okey INTEGER NOT NULL, label TEXT NOT NULL)",
        "CREATE TABLE item_tag(item INTEGER NOT NULL, tag INTEGER NOT NULL, PRIMARY KEY(item, tag))",
    ]
}

/// Small pools of values, so that predicates match some objects and sorts have ties.
///
/// Strings are ASCII, where `String`'s order and SQLite's byte order agree.
private enum Pool {
    static let names = ["Ada", "Amy", "Bob", "Zed", "ada", "b", "", "Ada Lovelace"]
    static let labels = ["red", "green", "Red", "blue", ""]
    static let notes: [String?] = [nil, "x", "y", "", "X"]
    static let counts = 0...9
    static let ranks = 0...5
    /// Halves from -3 to 3: exact in binary, so both engines hold the same `Double`.
    static let scores = (-6...6).map { Double($0) / 2 }
}

private struct ItemValues {
    var name: String
    var count: Int
    var score: Double
    var note: String?
    var flag: Bool

    init(using generator: inout SeededGenerator) {
        name = Pool.names.randomElement(using: &generator)!
        count = Int.random(in: Pool.counts, using: &generator)
        score = Pool.scores.randomElement(using: &generator)!
        note = Pool.notes.randomElement(using: &generator)!
        flag = Bool.random(using: &generator)
    }

    func apply(to item: DiffItem) {
        item.name = name
        item.count = count
        item.score = score
        item.note = note
        item.flag = flag
    }

    var parameters: [SQLValue] {
        [SQLValue(name), SQLValue(count), SQLValue(score), SQLValue(note), SQLValue(flag)]
    }

    /// The statement that inserts the row of item `ident`, whose key is `key` (`.null` until
    /// a batch insert reports it).
    func insertion(ident: Int, key: SQLValue) -> SQLStatement {
        SQLStatement(
            sql:
                "INSERT INTO item(ident, okey, name, count, score, note, flag) VALUES (?, ?, ?, ?, ?, ?, ?)",
            parameters: [SQLValue(ident), key] + parameters
        )
    }
}

private struct OwnerValues {
    var name: String
    var rank: Int

    init(using generator: inout SeededGenerator) {
        name = Pool.names.randomElement(using: &generator)!
        rank = Int.random(in: Pool.ranks, using: &generator)
    }

    func apply(to owner: DiffOwner) {
        owner.name = name
        owner.rank = rank
    }

    /// The statement that inserts the row of owner `ident`, whose key is `key` (`.null` until
    /// a batch insert reports it).
    func insertion(ident: Int, key: SQLValue) -> SQLStatement {
        SQLStatement(
            sql: "INSERT INTO owner(ident, okey, name, rank) VALUES (?, ?, ?, ?)",
            parameters: [SQLValue(ident), key, SQLValue(name), SQLValue(rank)]
        )
    }
}

/// The statement that inserts the row of tag `ident`, whose key is `key` (`.null` until a batch
/// insert reports it).
private func tagInsertion(ident: Int, key: SQLValue, label: String) -> SQLStatement {
    SQLStatement(
        sql: "INSERT INTO tag(ident, okey, label) VALUES (?, ?, ?)",
        parameters: [SQLValue(ident), key, SQLValue(label)]
    )
}

// MARK: - Queries

/// A predicate and the same condition in SQL, over the row of the entity's table (named as the
/// table, so subqueries can refer to it).
private struct Filter<T: ManagedObject> {
    var predicate: Predicate<T>
    var sql: String
    var parameters: [SQLValue]
    var text: String

    /// The condition in SQL and its text, without the predicate's type.
    var sqlOnly: (sql: String, parameters: [SQLValue], text: String) { (sql, parameters, text) }
}

/// A sort key and its SQL expression.
///
/// SQLite orders NULL first, as Foundation orders `nil` before any value.
private struct SortKey<T: ManagedObject> {
    var text: String
    var sql: String
    var descriptor: (SortOrder) -> SortDescriptor<T>
}

private enum Queries {
    static let ownerName = "(SELECT name FROM owner WHERE owner.ident = item.owner)"
    static let ownerRank = "(SELECT rank FROM owner WHERE owner.ident = item.owner)"
    static let tagCount = "(SELECT count(*) FROM item_tag WHERE item_tag.item = item.ident)"
    static let ownerItemCount = "(SELECT count(*) FROM item WHERE item.owner = owner.ident)"
    static let tagItemCount = "(SELECT count(*) FROM item_tag WHERE item_tag.tag = tag.ident)"

    static func itemFilter(using generator: inout SeededGenerator) -> Filter<DiffItem> {
        let name = Pool.names.randomElement(using: &generator)!
        let optionalName: String? = name
        let label = Pool.labels.randomElement(using: &generator)!
        let note = Pool.notes.randomElement(using: &generator)!
        let count = Int.random(in: Pool.counts, using: &generator)
        let score = Pool.scores.randomElement(using: &generator)!
        let rank = Int.random(in: Pool.ranks, using: &generator)
        let tags = Int.random(in: 0...2, using: &generator)
        switch Int.random(in: 0..<14, using: &generator) {
        case 0:
            return Filter(
                predicate: #Predicate { $0.count > count },
                sql: "item.count > ?",
                parameters: [SQLValue(count)],
                text: "count > \(count)"
            )
        case 1:
            return Filter(
                predicate: #Predicate { $0.name == name },
                sql: "item.name = ?",
                parameters: [SQLValue(name)],
                text: "name == '\(name)'"
            )
        case 2:
            return Filter(
                predicate: #Predicate { $0.count >= count && $0.score < score },
                sql: "item.count >= ? AND item.score < ?",
                parameters: [SQLValue(count), SQLValue(score)],
                text: "count >= \(count) && score < \(score)"
            )
        case 3:
            return Filter(
                predicate: #Predicate { $0.flag || $0.name < name },
                sql: "item.flag OR item.name < ?",
                parameters: [SQLValue(name)],
                text: "flag || name < '\(name)'"
            )
        case 4:
            return Filter(
                predicate: #Predicate { !($0.name == name) && $0.count != count },
                sql: "NOT (item.name = ?) AND item.count != ?",
                parameters: [SQLValue(name), SQLValue(count)],
                text: "!(name == '\(name)') && count != \(count)"
            )
        case 5:
            return Filter(
                predicate: #Predicate { $0.owner?.name == optionalName },
                sql: "\(ownerName) IS ?",
                parameters: [SQLValue(name)],
                text: "owner?.name == '\(name)'"
            )
        case 6:
            return Filter(
                predicate: #Predicate { $0.owner == nil },
                sql: "item.owner IS NULL",
                parameters: [],
                text: "owner == nil"
            )
        case 7:
            return Filter(
                predicate: #Predicate { $0.tags.count > tags },
                sql: "\(tagCount) > ?",
                parameters: [SQLValue(tags)],
                text: "tags.count > \(tags)"
            )
        case 8:
            return Filter(
                predicate: #Predicate { $0.note == nil || $0.note == note },
                sql: "item.note IS NULL OR item.note IS ?",
                parameters: [SQLValue(note)],
                text: "note == nil || note == \(note.map { "'\($0)'" } ?? "nil")"
            )
        case 9:
            return Filter(
                predicate: #Predicate { ($0.owner?.rank ?? -1) >= rank },
                sql: "coalesce(\(ownerRank), -1) >= ?",
                parameters: [SQLValue(rank)],
                text: "(owner?.rank ?? -1) >= \(rank)"
            )
        case 10:
            return Filter(
                predicate: #Predicate { item in item.tags.contains { $0.label == label } },
                sql: """
                    EXISTS (SELECT 1 FROM item_tag JOIN tag ON tag.ident = item_tag.tag \
                    WHERE item_tag.item = item.ident AND tag.label = ?)
                    """,
                parameters: [SQLValue(label)],
                text: "tags.contains { label == '\(label)' }"
            )
        case 11:
            return Filter(
                predicate: #Predicate { $0.count > count || !($0.owner?.name == optionalName) },
                sql: "item.count > ? OR NOT (\(ownerName) IS ?)",
                parameters: [SQLValue(count), SQLValue(name)],
                text: "count > \(count) || !(owner?.name == '\(name)')"
            )
        case 12:
            return Filter(
                predicate: #Predicate {
                    $0.score >= score && ($0.owner?.name == optionalName || $0.tags.count == 0)
                },
                sql: "item.score >= ? AND (\(ownerName) IS ? OR \(tagCount) = 0)",
                parameters: [SQLValue(score), SQLValue(name)],
                text: "score >= \(score) && (owner?.name == '\(name)' || tags.count == 0)"
            )
        default:
            return Filter(
                predicate: #Predicate { $0.owner != nil && $0.flag == false },
                sql: "item.owner IS NOT NULL AND NOT item.flag",
                parameters: [],
                text: "owner != nil && flag == false"
            )
        }
    }

    static func ownerFilter(using generator: inout SeededGenerator) -> Filter<DiffOwner> {
        let name = Pool.names.randomElement(using: &generator)!
        let rank = Int.random(in: Pool.ranks, using: &generator)
        let count = Int.random(in: Pool.counts, using: &generator)
        let items = Int.random(in: 0...3, using: &generator)
        switch Int.random(in: 0..<5, using: &generator) {
        case 0:
            return Filter(
                predicate: #Predicate { $0.rank < rank },
                sql: "owner.rank < ?",
                parameters: [SQLValue(rank)],
                text: "rank < \(rank)"
            )
        case 1:
            return Filter(
                predicate: #Predicate { $0.name == name },
                sql: "owner.name = ?",
                parameters: [SQLValue(name)],
                text: "name == '\(name)'"
            )
        case 2:
            return Filter(
                predicate: #Predicate { $0.items.count >= items },
                sql: "\(ownerItemCount) >= ?",
                parameters: [SQLValue(items)],
                text: "items.count >= \(items)"
            )
        case 3:
            return Filter(
                predicate: #Predicate { owner in owner.items.contains { $0.count > count } },
                sql:
                    "EXISTS (SELECT 1 FROM item WHERE item.owner = owner.ident AND item.count > ?)",
                parameters: [SQLValue(count)],
                text: "items.contains { count > \(count) }"
            )
        default:
            return Filter(
                predicate: #Predicate { !($0.name == name) || $0.rank == rank },
                sql: "NOT (owner.name = ?) OR owner.rank = ?",
                parameters: [SQLValue(name), SQLValue(rank)],
                text: "!(name == '\(name)') || rank == \(rank)"
            )
        }
    }

    static func tagFilter(using generator: inout SeededGenerator) -> Filter<DiffTag> {
        let label = Pool.labels.randomElement(using: &generator)!
        let name: String? = Pool.names.randomElement(using: &generator)!
        let items = Int.random(in: 0...3, using: &generator)
        switch Int.random(in: 0..<5, using: &generator) {
        case 0:
            return Filter(
                predicate: #Predicate { $0.label == label },
                sql: "tag.label = ?",
                parameters: [SQLValue(label)],
                text: "label == '\(label)'"
            )
        case 1:
            return Filter(
                predicate: #Predicate { $0.items.count > items },
                sql: "\(tagItemCount) > ?",
                parameters: [SQLValue(items)],
                text: "items.count > \(items)"
            )
        case 2:
            return Filter(
                predicate: #Predicate { tag in tag.items.contains { $0.owner?.name == name } },
                sql: """
                    EXISTS (SELECT 1 FROM item_tag JOIN item ON item.ident = item_tag.item \
                    WHERE item_tag.tag = tag.ident AND \(ownerName) IS ?)
                    """,
                parameters: [SQLValue(name)],
                text: "items.contains { owner?.name == '\(name ?? "")' }"
            )
        case 3:
            return Filter(
                predicate: #Predicate { $0.label != label && $0.items.count < items },
                sql: "tag.label != ? AND \(tagItemCount) < ?",
                parameters: [SQLValue(label), SQLValue(items)],
                text: "label != '\(label)' && items.count < \(items)"
            )
        default:
            return Filter(
                predicate: #Predicate { tag in tag.items.contains { $0.flag } },
                sql: """
                    EXISTS (SELECT 1 FROM item_tag JOIN item ON item.ident = item_tag.item \
                    WHERE item_tag.tag = tag.ident AND item.flag)
                    """,
                parameters: [],
                text: "items.contains { flag }"
            )
        }
    }

    static var itemSortKeys: [SortKey<DiffItem>] {
        [
            SortKey(text: "name", sql: "item.name") { SortDescriptor(\.name, order: $0) },
            SortKey(text: "name (lexical)", sql: "item.name") {
                SortDescriptor(\.name, comparator: .lexical, order: $0)
            },
            SortKey(text: "count", sql: "item.count") { SortDescriptor(\.count, order: $0) },
            SortKey(text: "score", sql: "item.score") { SortDescriptor(\.score, order: $0) },
            SortKey(text: "note", sql: "item.note") { SortDescriptor(\.note, order: $0) },
            SortKey(text: "owner?.name", sql: ownerName) {
                SortDescriptor(\.owner?.name, order: $0)
            },
            SortKey(text: "owner?.rank", sql: ownerRank) {
                SortDescriptor(\.owner?.rank, order: $0)
            },
            SortKey(text: "tags.count", sql: tagCount) { SortDescriptor(\.tags.count, order: $0) },
        ]
    }

    static var ownerSortKeys: [SortKey<DiffOwner>] {
        [
            SortKey(text: "name", sql: "owner.name") { SortDescriptor(\.name, order: $0) },
            SortKey(text: "rank", sql: "owner.rank") { SortDescriptor(\.rank, order: $0) },
            SortKey(text: "items.count", sql: ownerItemCount) {
                SortDescriptor(\.items.count, order: $0)
            },
        ]
    }

    static var tagSortKeys: [SortKey<DiffTag>] {
        [
            SortKey(text: "label", sql: "tag.label") { SortDescriptor(\.label, order: $0) },
            SortKey(text: "items.count", sql: tagItemCount) {
                SortDescriptor(\.items.count, order: $0)
            },
        ]
    }
}

// MARK: - The run

/// The reader context, for the coordinator's save observer that merges every save into it.
///
/// `@unchecked Sendable`: a save observer runs on the saving context's thread, and every
/// context of a run is used on the test's one thread only.
private final class ReaderBox: @unchecked Sendable {
    weak var context: ManagedObjectContext?
}

/// Where a question is asked: the writing context (with or without its unsaved changes), a
/// reader that merges every save, or a fresh context.
private enum Asker: CustomStringConvertible {
    case writer(includesPendingChanges: Bool)
    case reader(includesPendingChanges: Bool)
    case fresh(includesPendingChanges: Bool)

    var includesPendingChanges: Bool {
        switch self {
        case .writer(let flag), .reader(let flag), .fresh(let flag): flag
        }
    }

    /// Whether the answer includes the writer's unsaved changes: other contexts have none.
    var seesWork: Bool {
        if case .writer(true) = self { return true }
        return false
    }

    var description: String {
        switch self {
        case .writer(let flag): "the writing context (includesPendingChanges \(flag))"
        case .reader(let flag): "the merged reader (includesPendingChanges \(flag))"
        case .fresh(let flag): "a fresh context (includesPendingChanges \(flag))"
        }
    }
}

/// One seed's run: the workload, the reference, and the comparisons.
private final class DifferentialRun {
    static let entities: [ManagedObject.Type] = [DiffOwner.self, DiffItem.self, DiffTag.self]
    /// A run stops after this many mismatches: later ones mostly repeat the first.
    static let mismatchLimit =
        ProcessInfo.processInfo.environment["OBJECTLOG_DIFFERENTIAL_MISMATCHES"].flatMap(Int.init)
        ?? 10

    /// Whether to print every step's operation (`OBJECTLOG_DIFFERENTIAL_TRACE=1`), to follow
    /// a failing seed up to its failure.
    static let traces = ProcessInfo.processInfo.environment["OBJECTLOG_DIFFERENTIAL_TRACE"] == "1"

    let seed: UInt64
    private var generator: SeededGenerator
    private let directory = TemporaryDirectory()
    private let path: String
    private var container: PersistentContainer
    private var writer: ManagedObjectContext
    private var reader: ManagedObjectContext
    private let readerBox = ReaderBox()
    private var mergeToken: ObserverToken?
    private let reference = SQLiteReference()
    /// The writer's unsaved changes, as statements over the saved state.
    private var pending: [SQLStatement] = []
    /// The columns (`table.column`) the unsaved changes set: a batch update of one of them
    /// waits for a save (see `batchUpdate`).
    private var pendingColumns: Set<String> = []
    private var nextIdent = 1
    private var step = 0
    private var operation = "open"
    private var mismatches = 0

    init(seed: UInt64) throws {
        self.seed = seed
        generator = SeededGenerator(seed: seed)
        path = directory.file("differential.objectlog")
        container = try PersistentContainer(path: path, for: Self.entities)
        writer = container.newContext()
        reader = container.newContext()
        for statement in Table.schema { reference.execute(statement) }
        connectReader()
    }

    /// Makes the reader merge every save of the coordinator (batch requests included), at once.
    private func connectReader() {
        readerBox.context = reader
        let box = readerBox
        mergeToken = container.coordinator.addSaveObserver { changes in
            box.context?.mergeChanges(from: changes)
        }
    }

    /// Runs the workload; every mismatch is recorded as an issue naming the seed and step.
    func run(steps: Int) {
        for step in 0..<steps {
            self.step = step
            do {
                try performRandomOperation()
            } catch let error as StopRun {
                record(error.reason)
                return
            } catch {
                // An operation the reference says must work threw: the two sides may now
                // differ in ways the test cannot follow.
                record("\(operation) threw \(error)")
                return
            }
            if Self.traces { print("seed \(seed), step \(step): \(operation)") }
            for _ in 0..<2 { randomQuery() }
            if step % 25 == 24 {
                checkEveryObject(in: writer, .writer(includesPendingChanges: true))
                checkEveryObject(in: reader, .reader(includesPendingChanges: true))
                checkEveryObject(in: container.newContext(), .fresh(includesPendingChanges: true))
            }
            if mismatches >= Self.mismatchLimit { return }
        }
    }

    /// An error after which the two engines no longer hold the same state.
    struct StopRun: Error {
        var reason: String
    }

    // MARK: Recording

    private func record(_ message: String) {
        mismatches += 1
        Issue.record(
            Comment(rawValue: "seed \(seed), step \(step) (after \(operation)): \(message)")
        )
    }

    private func expectEqual<V: Equatable>(
        _ got: V,
        _ expected: V,
        _ what: @autoclosure () -> String
    ) {
        guard got != expected else { return }
        record("\(what())\n  expected \(expected)\n  got      \(got)")
    }

    // MARK: The reference's states

    /// Runs `body` on the work state: the saved state with the writer's unsaved changes.
    private func withPending<R>(_ body: () -> R) -> R {
        reference.execute("SAVEPOINT work")
        for statement in pending { reference.execute(statement) }
        defer {
            reference.execute("ROLLBACK TO work")
            reference.execute("RELEASE work")
        }
        return body()
    }

    private func inState<R>(work: Bool, _ body: () -> R) -> R {
        work ? withPending(body) : body()
    }

    private func idents(_ table: Table, work: Bool = true) -> [Int] {
        inState(work: work) {
            reference.query("SELECT ident FROM \(table.rawValue) ORDER BY ident").map {
                Int($0[0].integer)
            }
        }
    }

    private func key(_ table: Table, ident: Int, work: Bool = true) -> ObjectKey {
        let rows = inState(work: work) {
            reference.query(
                "SELECT okey FROM \(table.rawValue) WHERE ident = ?",
                [SQLValue(ident)]
            )
        }
        return ObjectKey(rows[0][0].integer)
    }

    private func randomIdent(_ table: Table, work: Bool = true) -> Int? {
        idents(table, work: work).randomElement(using: &generator)
    }

    private func takeIdent() -> Int {
        defer { nextIdent += 1 }
        return nextIdent
    }

    /// The writer's instance of an object of the work state.
    private func object<T: ManagedObject>(_ type: T.Type, _ table: Table, _ ident: Int) throws -> T
    {
        try writer.object(
            with: ObjectID(entityName: T.entityName, key: key(table, ident: ident)),
            as: T.self
        )
    }

    private func addPending(_ sql: String, _ parameters: [SQLValue] = []) {
        pending.append(SQLStatement(sql: sql, parameters: parameters))
    }

    /// Makes the unsaved changes the saved state.
    private func commitPending() {
        reference.execute("BEGIN")
        for statement in pending { reference.execute(statement) }
        reference.execute("COMMIT")
        dropPending()
    }

    private func dropPending() {
        pending = []
        pendingColumns = []
    }

    // MARK: Operations

    private func performRandomOperation() throws {
        switch Int.random(in: 0..<100, using: &generator) {
        case 0..<10: try insertItem()
        case 10..<14: insertOwner()
        case 14..<17: insertTag()
        case 17..<27: try updateItem()
        case 27..<30: try updateOwnerOrTag()
        case 30..<36: try relinkOwner()
        case 36..<42: try relinkTag()
        case 42..<46: try delete(.item)
        case 46..<48: try delete(.owner)
        case 48..<50: try delete(.tag)
        case 50..<63: save()
        case 63..<66:
            operation = "rollback"
            writer.rollback()
            dropPending()
        case 66..<68:
            operation = "reset of the writer"
            writer.reset()
            dropPending()
        case 68..<70:
            operation = "reset of the reader"
            reader.reset()
        case 70..<72: try reopen()
        case 72..<79: try compact()
        case 79..<82: try upsert()
        case 82..<84: try insertDuplicate()
        case 84..<88: try batchUpdate()
        case 88..<91: try batchDelete()
        case 91..<94: try batchInsert()
        default: try insertElsewhere()
        }
    }

    private func insertItem() throws {
        let item = DiffItem(context: writer)
        let ident = takeIdent()
        item.ident = ident
        let values = ItemValues(using: &generator)
        values.apply(to: item)
        pending.append(values.insertion(ident: ident, key: .integer(Int64(item.objectID.key))))
        operation = "insert of item \(ident)"
        try relateAtRandom(
            item,
            ident: ident,
            addingTag: "INSERT INTO item_tag(item, tag) VALUES (?, ?)"
        )
    }

    /// Gives a new `item` an owner and tags at random, with the statements that mirror them;
    /// `addingTag` links the item to a tag (`INSERT OR IGNORE` where the saved object may have
    /// the link already).
    private func relateAtRandom(_ item: DiffItem, ident: Int, addingTag: String) throws {
        if Bool.random(using: &generator), let owner = randomIdent(.owner) {
            item.owner = try object(DiffOwner.self, .owner, owner)
            addPending(
                "UPDATE item SET owner = ? WHERE ident = ?",
                [SQLValue(owner), SQLValue(ident)]
            )
            operation += " owned by \(owner)"
        }
        for tag in idents(.tag) where Int.random(in: 0..<4, using: &generator) == 0 {
            item.tags.insert(try object(DiffTag.self, .tag, tag))
            addPending(addingTag, [SQLValue(ident), SQLValue(tag)])
            operation += ", tag \(tag)"
        }
    }

    private func insertOwner() {
        let owner = DiffOwner(context: writer)
        let ident = takeIdent()
        owner.ident = ident
        let values = OwnerValues(using: &generator)
        values.apply(to: owner)
        pending.append(values.insertion(ident: ident, key: .integer(Int64(owner.objectID.key))))
        operation = "insert of owner \(ident)"
    }

    private func insertTag() {
        let tag = DiffTag(context: writer)
        let ident = takeIdent()
        tag.ident = ident
        tag.label = Pool.labels.randomElement(using: &generator)!
        pending.append(
            tagInsertion(ident: ident, key: .integer(Int64(tag.objectID.key)), label: tag.label)
        )
        operation = "insert of tag \(ident)"
    }

    private func updateItem() throws {
        guard let ident = randomIdent(.item) else { return }
        let item = try object(DiffItem.self, .item, ident)
        let values = ItemValues(using: &generator)
        let column: String
        let value: SQLValue
        switch Int.random(in: 0..<5, using: &generator) {
        case 0:
            (column, value) = ("name", SQLValue(values.name))
            item.name = values.name
        case 1:
            (column, value) = ("count", SQLValue(values.count))
            item.count = values.count
        case 2:
            (column, value) = ("score", SQLValue(values.score))
            item.score = values.score
        case 3:
            (column, value) = ("note", SQLValue(values.note))
            item.note = values.note
        default:
            (column, value) = ("flag", SQLValue(values.flag))
            item.flag = values.flag
        }
        addPending("UPDATE item SET \(column) = ? WHERE ident = ?", [value, SQLValue(ident)])
        pendingColumns.insert("item.\(column)")
        operation = "update of item \(ident): \(column) = \(value)"
    }

    private func updateOwnerOrTag() throws {
        if Bool.random(using: &generator) {
            guard let ident = randomIdent(.owner) else { return }
            let owner = try object(DiffOwner.self, .owner, ident)
            let values = OwnerValues(using: &generator)
            if Bool.random(using: &generator) {
                owner.name = values.name
                addPending(
                    "UPDATE owner SET name = ? WHERE ident = ?",
                    [SQLValue(values.name), SQLValue(ident)]
                )
                pendingColumns.insert("owner.name")
                operation = "update of owner \(ident): name = '\(values.name)'"
            } else {
                owner.rank = values.rank
                addPending(
                    "UPDATE owner SET rank = ? WHERE ident = ?",
                    [SQLValue(values.rank), SQLValue(ident)]
                )
                pendingColumns.insert("owner.rank")
                operation = "update of owner \(ident): rank = \(values.rank)"
            }
        } else {
            guard let ident = randomIdent(.tag) else { return }
            let label = Pool.labels.randomElement(using: &generator)!
            try object(DiffTag.self, .tag, ident).label = label
            addPending(
                "UPDATE tag SET label = ? WHERE ident = ?",
                [SQLValue(label), SQLValue(ident)]
            )
            pendingColumns.insert("tag.label")
            operation = "update of tag \(ident): label = '\(label)'"
        }
    }

    /// Changes an item's owner, from either side of the relationship.
    private func relinkOwner() throws {
        guard let ident = randomIdent(.item) else { return }
        let item = try object(DiffItem.self, .item, ident)
        let current = withPending {
            reference.query("SELECT owner FROM item WHERE ident = ?", [SQLValue(ident)])[0][0]
        }
        let newOwner = randomIdent(.owner)
        switch Int.random(in: 0..<3, using: &generator) {
        case 0:
            item.owner = try newOwner.map { try object(DiffOwner.self, .owner, $0) }
            operation = "item \(ident).owner = \(newOwner.map(String.init) ?? "nil")"
        case 1:
            guard let newOwner else { return }
            try object(DiffOwner.self, .owner, newOwner).items.insert(item)
            operation = "owner \(newOwner).items.insert(item \(ident))"
        default:
            guard case .integer(let owner) = current else { return }
            try object(DiffOwner.self, .owner, Int(owner)).items.remove(item)
            operation = "owner \(owner).items.remove(item \(ident))"
            addPending("UPDATE item SET owner = NULL WHERE ident = ?", [SQLValue(ident)])
            return
        }
        addPending(
            "UPDATE item SET owner = ? WHERE ident = ?",
            [newOwner.map(SQLValue.init) ?? .null, SQLValue(ident)]
        )
    }

    /// Links or unlinks an item and a tag, from either side of the relationship.
    private func relinkTag() throws {
        guard let itemIdent = randomIdent(.item), let tagIdent = randomIdent(.tag) else { return }
        let item = try object(DiffItem.self, .item, itemIdent)
        let tag = try object(DiffTag.self, .tag, tagIdent)
        let linked = withPending {
            reference.query(
                "SELECT count(*) FROM item_tag WHERE item = ? AND tag = ?",
                [SQLValue(itemIdent), SQLValue(tagIdent)]
            )[0][0].integer == 1
        }
        let fromItem = Bool.random(using: &generator)
        if linked {
            if fromItem { item.tags.remove(tag) } else { tag.items.remove(item) }
            addPending(
                "DELETE FROM item_tag WHERE item = ? AND tag = ?",
                [SQLValue(itemIdent), SQLValue(tagIdent)]
            )
            operation = "unlink of item \(itemIdent) and tag \(tagIdent)"
        } else {
            if fromItem { item.tags.insert(tag) } else { tag.items.insert(item) }
            addPending(
                "INSERT INTO item_tag(item, tag) VALUES (?, ?)",
                [SQLValue(itemIdent), SQLValue(tagIdent)]
            )
            operation = "link of item \(itemIdent) and tag \(tagIdent)"
        }
        operation += fromItem ? " (from the item)" : " (from the tag)"
    }

    private func delete(_ table: Table) throws {
        guard let ident = randomIdent(table) else { return }
        operation = "delete of \(table.rawValue) \(ident)"
        switch table {
        case .owner: writer.delete(try object(DiffOwner.self, .owner, ident))
        case .item: writer.delete(try object(DiffItem.self, .item, ident))
        case .tag: writer.delete(try object(DiffTag.self, .tag, ident))
        }
        pending += deletion(table, ident: ident)
    }

    /// A delete of an object in the reference, with what the nullify rules do at once: an
    /// owner's items lose their owner, an item or a tag leaves the many-to-many relationship.
    private func deletion(_ table: Table, ident: Int) -> [SQLStatement] {
        let cleanup =
            switch table {
            case .owner: "UPDATE item SET owner = NULL WHERE owner = ?"
            case .item: "DELETE FROM item_tag WHERE item = ?"
            case .tag: "DELETE FROM item_tag WHERE tag = ?"
            }
        return [
            SQLStatement(sql: cleanup, parameters: [SQLValue(ident)]),
            SQLStatement(
                sql: "DELETE FROM \(table.rawValue) WHERE ident = ?",
                parameters: [SQLValue(ident)]
            ),
        ]
    }

    /// Saves the writer.
    ///
    /// A failure (nothing here should fail) is recorded, and both sides drop the unsaved
    /// changes, so that the run goes on from the saved state.
    /// - Parameter label: What the save is, for messages.
    /// - Returns: Whether the save succeeded.
    @discardableResult
    private func save(_ label: String = "save") -> Bool {
        operation = label
        do {
            try writer.save()
            commitPending()
            return true
        } catch {
            record("the save failed: \(error)")
            writer.reset()
            dropPending()
            return false
        }
    }

    private func reopen() throws {
        if !pending.isEmpty, Bool.random(using: &generator) {
            guard save("save before a reopen") else { return }
        }
        operation = "reopen"
        if let mergeToken { container.coordinator.removeObserver(mergeToken) }
        try container.close()
        dropPending()
        container = try PersistentContainer(path: path, for: Self.entities)
        writer = container.newContext()
        reader = container.newContext()
        connectReader()
    }

    /// Compacts the store while the writer keeps its objects and unsaved changes.
    private func compact() throws {
        operation = "compaction"
        let result = try container.compact()
        let saved = Table.allCases.reduce(0) {
            $0 + Int(reference.query("SELECT count(*) FROM \($1.rawValue)")[0][0].integer)
        }
        expectEqual(result.objects, saved, "the objects the compaction copied")
    }

    /// Inserts an object whose `ident` a saved object has, under `.overwrite`: the save turns
    /// it into an update of the saved object.
    private func upsert() throws {
        if !pending.isEmpty { guard save("save before an upsert") else { return } }
        let table = Table.allCases.randomElement(using: &generator)!
        guard let ident = randomIdent(table) else { return }
        let existingKey = key(table, ident: ident)
        let inserted: ManagedObject
        switch table {
        case .item:
            let item = DiffItem(context: writer)
            item.ident = ident
            let values = ItemValues(using: &generator)
            values.apply(to: item)
            addPending(
                "UPDATE item SET name = ?, count = ?, score = ?, note = ?, flag = ? WHERE ident = ?",
                values.parameters + [SQLValue(ident)]
            )
            operation = "upsert of item \(ident)"
            // A to-one relationship the insert sets replaces the saved object's; its to-many
            // destinations join the saved object's.
            try relateAtRandom(
                item,
                ident: ident,
                addingTag: "INSERT OR IGNORE INTO item_tag(item, tag) VALUES (?, ?)"
            )
            inserted = item
        case .owner:
            let owner = DiffOwner(context: writer)
            owner.ident = ident
            let values = OwnerValues(using: &generator)
            values.apply(to: owner)
            addPending(
                "UPDATE owner SET name = ?, rank = ? WHERE ident = ?",
                [SQLValue(values.name), SQLValue(values.rank), SQLValue(ident)]
            )
            operation = "upsert of owner \(ident)"
            for item in idents(.item) where Int.random(in: 0..<5, using: &generator) == 0 {
                owner.items.insert(try object(DiffItem.self, .item, item))
                addPending(
                    "UPDATE item SET owner = ? WHERE ident = ?",
                    [SQLValue(ident), SQLValue(item)]
                )
                operation += ", item \(item)"
            }
            inserted = owner
        case .tag:
            let tag = DiffTag(context: writer)
            tag.ident = ident
            tag.label = Pool.labels.randomElement(using: &generator)!
            addPending(
                "UPDATE tag SET label = ? WHERE ident = ?",
                [SQLValue(tag.label), SQLValue(ident)]
            )
            operation = "upsert of tag \(ident)"
            for item in idents(.item) where Int.random(in: 0..<5, using: &generator) == 0 {
                tag.items.insert(try object(DiffItem.self, .item, item))
                addPending(
                    "INSERT OR IGNORE INTO item_tag(item, tag) VALUES (?, ?)",
                    [SQLValue(item), SQLValue(ident)]
                )
                operation += ", item \(item)"
            }
            inserted = tag
        }
        writer.mergePolicy = .overwrite
        defer { writer.mergePolicy = .error }
        guard save("save of the " + operation) else { return }
        operation = "upsert of \(table.rawValue) \(ident)"
        expectEqual(inserted.objectID.key, existingKey, "the upserted instance's key")
    }

    /// Inserts an object with an `ident` the work state has, under `.error`: the save must
    /// fail and change nothing; the insert is then deleted again.
    private func insertDuplicate() throws {
        let table = Table.allCases.randomElement(using: &generator)!
        guard let ident = randomIdent(table) else { return }
        operation = "insert of a second \(table.rawValue) \(ident), and a save"
        let duplicate: ManagedObject
        switch table {
        case .owner:
            let owner = DiffOwner(context: writer)
            owner.ident = ident
            duplicate = owner
        case .item:
            let item = DiffItem(context: writer)
            item.ident = ident
            duplicate = item
        case .tag:
            let tag = DiffTag(context: writer)
            tag.ident = ident
            duplicate = tag
        }
        do {
            try writer.save()
            throw StopRun(reason: "a save with two objects of \(table.rawValue) \(ident) succeeded")
        } catch let error as ObjectLogError where error.code == .uniqueness {
            writer.delete(duplicate)
        } catch {
            // Any other failure leaves both sides at the saved state, as in `save()`.
            record("the save failed with other than a uniqueness error: \(error)")
            writer.reset()
            dropPending()
        }
    }

    /// A batch update in the writer, which keeps its unsaved changes.
    ///
    /// A column they set waits for a save first: the batch request article leaves open what
    /// becomes of an unsaved value equal to the saved one (the merge keeps only values that
    /// differ), so the test does not ask.
    private func batchUpdate() throws {
        let table = Table.allCases.randomElement(using: &generator)!
        var sets: [(column: String, value: SQLValue)] = []
        let changes: ObjectChanges
        let filter: (sql: String, parameters: [SQLValue], text: String)?
        func choose(_ columns: [String]) -> [String] {
            let chosen = columns.filter { _ in Bool.random(using: &generator) }
            return chosen.isEmpty ? [columns.randomElement(using: &generator)!] : chosen
        }
        func saveIfPendingTouches(_ columns: [String]) -> Bool {
            let touched = columns.contains { pendingColumns.contains("\(table.rawValue).\($0)") }
            if !touched { return true }
            return save("save before a batch update")
        }
        let usesPredicate = Int.random(in: 0..<10, using: &generator) > 0
        let matched: Set<ObjectKey>
        switch table {
        case .item:
            let columns = choose(["name", "count", "score", "note", "flag"])
            guard saveIfPendingTouches(columns) else { return }
            let values = ItemValues(using: &generator)
            var updates: [PropertyUpdate<DiffItem>] = []
            for column in columns {
                switch column {
                case "name": updates.append(.set(\.name, to: values.name))
                case "count": updates.append(.set(\.count, to: values.count))
                case "score": updates.append(.set(\.score, to: values.score))
                case "note": updates.append(.set(\.note, to: values.note))
                default: updates.append(.set(\.flag, to: values.flag))
                }
            }
            let value = Dictionary(
                uniqueKeysWithValues: zip(
                    ["name", "count", "score", "note", "flag"],
                    values.parameters
                )
            )
            sets = columns.map { ($0, value[$0]!) }
            (changes, filter, matched) = try batchUpdate(
                table,
                sets,
                updates,
                where: usesPredicate ? Queries.itemFilter(using: &generator) : nil
            )
        case .owner:
            let columns = choose(["name", "rank"])
            guard saveIfPendingTouches(columns) else { return }
            let values = OwnerValues(using: &generator)
            var updates: [PropertyUpdate<DiffOwner>] = []
            for column in columns {
                if column == "name" {
                    updates.append(.set(\.name, to: values.name))
                    sets.append((column, SQLValue(values.name)))
                } else {
                    updates.append(.set(\.rank, to: values.rank))
                    sets.append((column, SQLValue(values.rank)))
                }
            }
            (changes, filter, matched) = try batchUpdate(
                table,
                sets,
                updates,
                where: usesPredicate ? Queries.ownerFilter(using: &generator) : nil
            )
        case .tag:
            guard saveIfPendingTouches(["label"]) else { return }
            let label = Pool.labels.randomElement(using: &generator)!
            sets = [("label", SQLValue(label))]
            (changes, filter, matched) = try batchUpdate(
                table,
                sets,
                [.set(\.label, to: label)],
                where: usesPredicate ? Queries.tagFilter(using: &generator) : nil
            )
        }
        // The request matches saved values, so the update goes to the saved state; the
        // unsaved changes still apply over it.
        reference.execute(
            "UPDATE \(table.rawValue) SET \(sets.map { "\($0.column) = ?" }.joined(separator: ", ")) WHERE \(filter?.sql ?? "1")",
            sets.map(\.value) + (filter?.parameters ?? [])
        )
        expectEqual(Set(changes.updated.map(\.key)), matched, "the keys the batch update reports")
    }

    /// Runs a batch update of `updates` (`sets` in SQL) on the objects of `table` that `made`
    /// matches (every one without a filter); returns what it reported, the filter's SQL for the
    /// reference, and the saved objects the reference says match.
    private func batchUpdate<T: ManagedObject>(
        _ table: Table,
        _ sets: [(column: String, value: SQLValue)],
        _ updates: [PropertyUpdate<T>],
        where made: Filter<T>?
    ) throws -> (
        changes: ObjectChanges,
        filter: (sql: String, parameters: [SQLValue], text: String)?,
        matched: Set<ObjectKey>
    ) {
        let filter = made?.sqlOnly
        let matched = matchedKeys(table, filter)
        operation = batchDescription(table, sets, filter)
        let changes = try writer.execute(
            BatchUpdateRequest(predicate: made?.predicate, updates: updates)
        )
        return (changes, filter, matched)
    }

    private func batchDescription(
        _ table: Table,
        _ sets: [(column: String, value: SQLValue)],
        _ filter: (sql: String, parameters: [SQLValue], text: String)?
    ) -> String {
        let assignments = sets.map { "\($0.column) = \($0.value)" }.joined(separator: ", ")
        return "batch update of \(table.rawValue) where \(filter?.text ?? "true"): \(assignments)"
    }

    /// The saved objects a filter matches.
    private func matchedKeys(
        _ table: Table,
        _ filter: (sql: String, parameters: [SQLValue], text: String)?
    ) -> Set<ObjectKey> {
        Set(
            reference.query(
                "SELECT okey FROM \(table.rawValue) WHERE \(filter?.sql ?? "1")",
                filter?.parameters ?? []
            ).map { ObjectKey($0[0].integer) }
        )
    }

    /// A batch delete, from a writer without unsaved changes (a batch delete of an object the
    /// writer changed drops the change, which this test does not model).
    private func batchDelete() throws {
        if !pending.isEmpty { guard save("save before a batch delete") else { return } }
        let table = Table.allCases.randomElement(using: &generator)!
        let usesPredicate = Int.random(in: 0..<10, using: &generator) > 0
        let (changes, matched) =
            switch table {
            case .item:
                try batchDelete(
                    table,
                    where: usesPredicate ? Queries.itemFilter(using: &generator) : nil
                )
            case .owner:
                try batchDelete(
                    table,
                    where: usesPredicate ? Queries.ownerFilter(using: &generator) : nil
                )
            case .tag:
                try batchDelete(
                    table,
                    where: usesPredicate ? Queries.tagFilter(using: &generator) : nil
                )
            }
        expectEqual(Set(changes.deleted.map(\.key)), matched, "the keys the batch delete reports")
        for key in matched.sorted() {
            let ident = reference.query(
                "SELECT ident FROM \(table.rawValue) WHERE okey = ?",
                [.integer(Int64(key))]
            )[0][0]
            for statement in deletion(table, ident: Int(ident.integer)) {
                reference.execute(statement)
            }
        }
    }

    /// Runs a batch delete of the objects of `table` that `made` matches (every one without one).
    ///
    /// Returns what it reported, and the saved objects the reference says match. What matches
    /// is decided before anything goes: a predicate may test the rows the delete rules clear.
    private func batchDelete<T: ManagedObject>(
        _ table: Table,
        where made: Filter<T>?
    ) throws -> (changes: ObjectChanges, matched: Set<ObjectKey>) {
        let filter = made?.sqlOnly
        operation = "batch delete of \(table.rawValue)s where \(filter?.text ?? "true")"
        let matched = matchedKeys(table, filter)
        return (try writer.execute(BatchDeleteRequest(predicate: made?.predicate)), matched)
    }

    /// A batch insert in the writer, whatever unsaved changes it has: the new objects are saved.
    private func batchInsert() throws {
        let table = Table.allCases.randomElement(using: &generator)!
        let count = Int.random(in: 1...4, using: &generator)
        let first = nextIdent
        nextIdent += count
        operation = "batch insert of \(table.rawValue) \(first)..<\(first + count)"
        let changes: ObjectChanges
        var rows: [Int: SQLStatement] = [:]
        switch table {
        case .item:
            let values = (0..<count).map { _ in ItemValues(using: &generator) }
            changes = try writer.execute(
                BatchInsertRequest<DiffItem>(count: count) { index, item in
                    item.ident = first + index
                    values[index].apply(to: item)
                }
            )
            for index in 0..<count {
                rows[first + index] = values[index].insertion(ident: first + index, key: .null)
            }
        case .owner:
            let values = (0..<count).map { _ in OwnerValues(using: &generator) }
            changes = try writer.execute(
                BatchInsertRequest<DiffOwner>(count: count) { index, owner in
                    owner.ident = first + index
                    values[index].apply(to: owner)
                }
            )
            for index in 0..<count {
                rows[first + index] = values[index].insertion(ident: first + index, key: .null)
            }
        case .tag:
            let labels = (0..<count).map { _ in Pool.labels.randomElement(using: &generator)! }
            changes = try writer.execute(
                BatchInsertRequest<DiffTag>(count: count) { index, tag in
                    tag.ident = first + index
                    tag.label = labels[index]
                }
            )
            for index in 0..<count {
                rows[first + index] = tagInsertion(
                    ident: first + index,
                    key: .null,
                    label: labels[index]
                )
            }
        }
        // The reported IDs say which key each new object got; a fresh context reads its
        // ident (the writer's registered objects stay as they were).
        let lookup = container.newContext()
        var keys: [Int: ObjectKey] = [:]
        for id in changes.inserted {
            let object = try lookup.existingObject(with: id)
            let ident =
                (object as? DiffItem)?.ident ?? (object as? DiffOwner)?.ident
                ?? (object as? DiffTag)?.ident ?? -1
            keys[ident] = id.key
        }
        expectEqual(
            keys.keys.sorted(),
            Array(first..<first + count),
            "the idents of the batch insert"
        )
        for (ident, statement) in rows.sorted(by: { $0.key < $1.key }) {
            var statement = statement
            guard let key = keys[ident] else { throw StopRun(reason: "no key for \(ident)") }
            statement.parameters[1] = .integer(Int64(key))
            reference.execute(statement)
        }
    }

    /// Objects inserted and saved by another context, as a background import would: their
    /// keys come from that context's own block, so the writer's later inserts get smaller
    /// keys than these saved objects.
    private func insertElsewhere() throws {
        let context = container.newContext()
        var statements: [SQLStatement] = []
        var made: [String] = []
        for _ in 0..<Int.random(in: 1...3, using: &generator) {
            let ident = takeIdent()
            switch Table.allCases.randomElement(using: &generator)! {
            case .item:
                let item = DiffItem(context: context)
                item.ident = ident
                let values = ItemValues(using: &generator)
                values.apply(to: item)
                statements.append(
                    values.insertion(ident: ident, key: .integer(Int64(item.objectID.key)))
                )
                made.append("item \(ident)")
            case .owner:
                let owner = DiffOwner(context: context)
                owner.ident = ident
                let values = OwnerValues(using: &generator)
                values.apply(to: owner)
                statements.append(
                    values.insertion(ident: ident, key: .integer(Int64(owner.objectID.key)))
                )
                made.append("owner \(ident)")
            case .tag:
                let tag = DiffTag(context: context)
                tag.ident = ident
                tag.label = Pool.labels.randomElement(using: &generator)!
                statements.append(
                    tagInsertion(
                        ident: ident,
                        key: .integer(Int64(tag.objectID.key)),
                        label: tag.label
                    )
                )
                made.append("tag \(ident)")
            }
        }
        operation = "insert and save in another context: \(made.joined(separator: ", "))"
        try context.save()
        for statement in statements { reference.execute(statement) }
    }

    // MARK: Queries

    private func randomAsker() -> Asker {
        let flag = Bool.random(using: &generator)
        switch Int.random(in: 0..<4, using: &generator) {
        case 0, 1: return .writer(includesPendingChanges: flag)
        case 2: return .reader(includesPendingChanges: flag)
        default: return .fresh(includesPendingChanges: flag)
        }
    }

    private func context(for asker: Asker) -> ManagedObjectContext {
        switch asker {
        case .writer: writer
        case .reader: reader
        case .fresh: container.newContext()
        }
    }

    private func randomQuery() {
        let asker = randomAsker()
        switch Int.random(in: 0..<6, using: &generator) {
        case 0..<4:
            let filter = Bool.random(using: &generator) || Bool.random(using: &generator)
            ask(
                asker,
                .item,
                filter ? Queries.itemFilter(using: &generator) : nil,
                Queries.itemSortKeys
            )
        case 4:
            let filter = Bool.random(using: &generator)
            ask(
                asker,
                .owner,
                filter ? Queries.ownerFilter(using: &generator) : nil,
                Queries.ownerSortKeys
            )
        default:
            let filter = Bool.random(using: &generator)
            ask(
                asker,
                .tag,
                filter ? Queries.tagFilter(using: &generator) : nil,
                Queries.tagSortKeys
            )
        }
    }

    /// Asks one request through `fetchIdentifiers`, `count` and `fetch` (in that order, so
    /// that the first two run before the fetch registers the objects), and compares each
    /// answer with SQLite's.
    private func ask<T: ManagedObject>(
        _ asker: Asker,
        _ table: Table,
        _ filter: Filter<T>?,
        _ sortKeys: [SortKey<T>]
    ) {
        var sorts: [(key: SortKey<T>, order: SortOrder)] = []
        if Int.random(in: 0..<10, using: &generator) >= 3 {
            for key in sortKeys.shuffled(using: &generator).prefix(
                Int.random(in: 1...3, using: &generator)
            ) {
                sorts.append((key, Bool.random(using: &generator) ? .forward : .reverse))
            }
        }
        var request = FetchRequest<T>(
            predicate: filter?.predicate,
            sortBy: sorts.map { $0.key.descriptor($0.order) }
        )
        if Int.random(in: 0..<10, using: &generator) < 4 {
            request.fetchLimit = Int.random(in: 1...6, using: &generator)
        }
        if Int.random(in: 0..<10, using: &generator) < 3 {
            request.fetchOffset = Int.random(in: 1...5, using: &generator)
        }
        request.includesPendingChanges = asker.includesPendingChanges
        request.returnsObjectsAsFaults = Int.random(in: 0..<5, using: &generator) > 0

        let order =
            sorts.map { "\($0.key.sql) \($0.order == .forward ? "ASC" : "DESC")" } + [
                "\(table.rawValue).okey"
            ]
        let rows = inState(work: asker.seesWork) {
            reference.query(
                """
                SELECT okey FROM \(table.rawValue) WHERE \(filter?.sql ?? "1") \
                ORDER BY \(order.joined(separator: ", ")) LIMIT ? OFFSET ?
                """,
                (filter?.parameters ?? []) + [
                    SQLValue(request.fetchLimit ?? -1), SQLValue(request.fetchOffset),
                ]
            )
        }
        let expected = rows.map { ObjectKey($0[0].integer) }
        let sortText = sorts.map {
            "\($0.key.text) \($0.order == .forward ? "ascending" : "descending")"
        }
        let what = """
            \(table.rawValue)s where \(filter?.text ?? "true")\
            \(sortText.isEmpty ? "" : ", sorted by \(sortText.joined(separator: ", "))")\
            \(request.fetchLimit.map { ", limit \($0)" } ?? "")\
            \(request.fetchOffset > 0 ? ", offset \(request.fetchOffset)" : ""), in \(asker)
            """
        let context = context(for: asker)
        do {
            let identifiers = try context.fetchIdentifiers(request)
            expectEqual(
                describe(identifiers.map(\.key), table, work: asker.seesWork),
                describe(expected, table, work: asker.seesWork),
                "fetchIdentifiers of \(what)"
            )
            expectEqual(
                identifiers.filter { $0.entityName != table.entityName },
                [],
                "entities of fetchIdentifiers of \(what)"
            )
            expectEqual(try context.count(request), expected.count, "count of \(what)")
            let objects = try context.fetch(request)
            expectEqual(
                describe(objects.map(\.objectID.key), table, work: asker.seesWork),
                describe(expected, table, work: asker.seesWork),
                "fetch of \(what)"
            )
        } catch {
            record("\(error) from \(what)")
        }
    }

    /// Keys as `ident@key`, so that a mismatch reads in the test's terms.
    private func describe(_ keys: [ObjectKey], _ table: Table, work: Bool) -> [String] {
        let idents = Dictionary(
            inState(work: work) {
                reference.query("SELECT okey, ident FROM \(table.rawValue)").map {
                    (ObjectKey($0[0].integer), $0[1].integer)
                }
            },
            uniquingKeysWith: { first, _ in first }
        )
        return keys.map { "\(idents[$0].map(String.init) ?? "?")@\($0)" }
    }

    // MARK: Every object

    /// Compares every object a context shows, its attributes and relationships, with the
    /// reference (the work state for the writer, the saved state elsewhere).
    private func checkEveryObject(in context: ManagedObjectContext, _ asker: Asker) {
        let work = asker.seesWork
        do {
            let owners = try context.fetch(FetchRequest<DiffOwner>()).sorted {
                $0.objectID < $1.objectID
            }
            expectEqual(
                owners.map {
                    "owner \($0.ident)@\($0.objectID.key): '\($0.name)' rank \($0.rank) items \($0.items.map(\.ident).sorted())"
                },
                inState(work: work) { referenceOwners() },
                "every owner in \(asker)"
            )
            let items = try context.fetch(FetchRequest<DiffItem>()).sorted {
                $0.objectID < $1.objectID
            }
            expectEqual(
                items.map {
                    """
                    item \($0.ident)@\($0.objectID.key): '\($0.name)' count \($0.count) score \($0.score) \
                    note \($0.note.map { "'\($0)'" } ?? "nil") flag \($0.flag) \
                    owner \($0.owner.map { String($0.ident) } ?? "nil") tags \($0.tags.map(\.ident).sorted())
                    """
                },
                inState(work: work) { referenceItems() },
                "every item in \(asker)"
            )
            let tags = try context.fetch(FetchRequest<DiffTag>()).sorted {
                $0.objectID < $1.objectID
            }
            expectEqual(
                tags.map {
                    "tag \($0.ident)@\($0.objectID.key): '\($0.label)' items \($0.items.map(\.ident).sorted())"
                },
                inState(work: work) { referenceTags() },
                "every tag in \(asker)"
            )
        } catch {
            record("\(error) reading every object in \(asker)")
        }
    }

    private func grouped(_ sql: String) -> [Int64: [Int64]] {
        var groups: [Int64: [Int64]] = [:]
        for row in reference.query(sql) {
            groups[row[0].integer, default: []].append(row[1].integer)
        }
        return groups
    }

    private func referenceOwners() -> [String] {
        let items = grouped("SELECT owner, ident FROM item WHERE owner IS NOT NULL ORDER BY ident")
        return reference.query("SELECT ident, okey, name, rank FROM owner ORDER BY okey").map {
            guard case .text(let name) = $0[2] else { return "bad row \($0)" }
            return
                "owner \($0[0])@\($0[1]): '\(name)' rank \($0[3]) items \(items[$0[0].integer] ?? [])"
        }
    }

    private func referenceItems() -> [String] {
        let tags = grouped("SELECT item, tag FROM item_tag ORDER BY tag")
        return reference.query(
            "SELECT ident, okey, name, count, score, note, flag, owner FROM item ORDER BY okey"
        ).map {
            guard case .text(let name) = $0[2], case .real(let score) = $0[4] else {
                return "bad row \($0)"
            }
            return """
                item \($0[0])@\($0[1]): '\(name)' count \($0[3]) score \(score) \
                note \($0[5] == .null ? "nil" : "\($0[5])") flag \($0[6].integer != 0) \
                owner \($0[7] == .null ? "nil" : "\($0[7])") tags \(tags[$0[0].integer] ?? [])
                """
        }
    }

    private func referenceTags() -> [String] {
        let items = grouped("SELECT tag, item FROM item_tag ORDER BY item")
        return reference.query("SELECT ident, okey, label FROM tag ORDER BY okey").map {
            guard case .text(let label) = $0[2] else { return "bad row \($0)" }
            return "tag \($0[0])@\($0[1]): '\(label)' items \(items[$0[0].integer] ?? [])"
        }
    }
}
