import Foundation
import ObjectLog
import StoreTestSupport
import Testing

@testable import ObjectLogPostgreSQL

/// The values the catalog's objects and the tests' predicates draw from: the edges where
/// PostgreSQL and Swift could disagree (NaN, -0, infinities, integer limits, canonically
/// equivalent strings, case beyond ASCII, CR LF, emoji, LIKE's wildcards, quotes).
enum CatalogValues {
    static let integers = [-3, -1, 0, 1, 2, 3, 5, 8]
    static let extremeIntegers = [Int.min, -1, 0, 2, Int.max]
    static let doubles: [Double] = [
        -1.5, -0.0, 0, 0.5, 2, 1e300, .leastNonzeroMagnitude, .infinity, -.infinity, .nan,
    ]
    static let floats: [Float] = [-2.5, -0.0, 0, 0.1, 3, .infinity, .nan]
    static let strings = [
        "", "a", "A", "ab", "Ab", "abc", "b", "zz", "Zebra", "é", "e\u{301}", "E\u{301}",
        "\u{212A}", "K", "k", "straße", "STRASSE", "a\r\nb", "\r", "😀", "👩‍👩‍👧", "%", "_",
        "a%b", "a_b", "\\", "'", "'; DROP TABLE x; --", "émile", "Émile", "ﬀ", "FF",
    ]
    static let bigs: [UInt64] = [0, 1, 1 << 63, .max - 1, .max]
    static let tinies: [Int8] = [.min, -1, 0, 1, .max]
    static let seconds: [Double] = [-1e9, 0, 1.5, 7e8, .nan]
    static let uuids = [
        UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
        UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)),
        UUID(uuid: (255, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)),
    ]
    static let datas = [Data(), Data([0]), Data([1, 2, 3]), Data([255])]
    static let labels = ["red", "Red", "blue", "é", "e\u{301}", "%"]
}

/// A seeded, repeatable generator (SplitMix64).
struct SplitMix: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func pick<T>(_ values: [T]) -> T {
        values[Int.random(in: 0..<values.count, using: &self)]
    }

    mutating func chance(_ probability: Double) -> Bool {
        Double.random(in: 0..<1, using: &self) < probability
    }
}

/// A catalog of random objects saved in an engine context, and the same rows in a fresh
/// PostgreSQL schema of its own, dropped by ``close()``.
final class CatalogFixture {
    let container: PersistentContainer
    let context: ManagedObjectContext
    let model: ManagedObjectModel
    let mapping: SchemaMapping
    let connection: PostgresConnection
    let schemaName: String
    private(set) var owners: [Catalog.Owner] = []
    private(set) var items: [Catalog.Item] = []
    private(set) var tags: [Catalog.Tag] = []

    /// A catalog of `itemCount` items (a fifth of them gadgets), drawn with `seed`; without
    /// NaN dates when `nanDates` is false (the engine orders a NaN date with no other: `Date`
    /// is `Comparable` by `<` alone, which makes a sort by date undefined there).
    ///
    /// With `names`, the items are named by them in turn, and their notes by them backwards.
    init(seed: UInt64, itemCount: Int, nanDates: Bool = true, names: [String] = []) throws {
        let container = try PersistentContainer.inMemory(for: Catalog.entities)
        let context = container.newContext()
        var random = SplitMix(seed: seed)
        let tags = CatalogValues.labels.map { label in
            let tag = Catalog.Tag(context: context)
            tag.label = label
            return tag
        }
        var owners: [Catalog.Owner] = []
        for index in 0..<8 {
            let owner = Catalog.Owner(context: context)
            owner.name = random.pick(CatalogValues.strings)
            owner.rating = Int32(random.pick(CatalogValues.integers))
            owner.nickname = random.chance(0.4) ? nil : random.pick(CatalogValues.strings)
            if index > 0, random.chance(0.6) { owner.manager = random.pick(owners) }
            owners.append(owner)
        }
        var items: [Catalog.Item] = []
        for index in 0..<itemCount {
            let item: Catalog.Item
            if random.chance(0.2) {
                let gadget = Catalog.Gadget(context: context)
                gadget.voltage = random.pick(CatalogValues.doubles)
                item = gadget
            } else {
                item = Catalog.Item(context: context)
            }
            item.name = random.pick(CatalogValues.strings)
            if !names.isEmpty { item.name = names[index % names.count] }
            item.count = random.pick(CatalogValues.integers)
            item.price = random.pick(CatalogValues.doubles)
            item.weight = random.pick(CatalogValues.floats)
            item.note = random.chance(0.3) ? nil : random.pick(CatalogValues.strings)
            if !names.isEmpty { item.note = names[names.count - 1 - index % names.count] }
            item.rank = random.chance(0.3) ? nil : random.pick(CatalogValues.integers)
            item.isActive = random.chance(0.5)
            let seconds = random.pick(CatalogValues.seconds)
            item.added = Date(
                timeIntervalSinceReferenceDate: seconds.isNaN && !nanDates ? 1 : seconds
            )
            item.code = random.pick(CatalogValues.uuids)
            item.big = random.pick(CatalogValues.bigs)
            item.tiny = random.pick(CatalogValues.tinies)
            item.bytes = random.pick(CatalogValues.datas)
            item.link = URL(string: "https://example.com/\(random.pick(["a", "b"]))")!
            item.owner = random.chance(0.25) ? nil : random.pick(owners)
            var itemTags: Set<Catalog.Tag> = []
            for _ in 0..<Int.random(in: 0...3, using: &random) {
                itemTags.insert(random.pick(tags))
            }
            item.tags = itemTags
            items.append(item)
        }
        try context.save()
        self.container = container
        self.context = context
        self.owners = owners
        self.items = items
        self.tags = tags
        model = container.model
        mapping = try SchemaMapping(model.schema)
        connection = try TestServer.connect()
        schemaName = "objectlog_predicates_\(UInt32.random(in: 0...UInt32.max))"
        try connection.execute("CREATE SCHEMA \(quoted(schemaName))")
        try connection.execute("SET search_path TO \(quoted(schemaName))")
        for statement in mapping.creationStatements { try connection.execute(statement) }
        try copyRows()
    }

    /// Drops the schema.
    func close() {
        _ = try? connection.execute("DROP SCHEMA \(quoted(schemaName)) CASCADE")
    }

    /// The tag of an object's entity.
    func tag(of object: ManagedObject) throws -> UInt32 {
        try #require(model.entity(for: type(of: object))).tag
    }

    /// Inserts a row of `table` with its columns' values.
    private func insert(
        _ table: String,
        _ values: [(String, StoredValue, AttributeType?)]
    )
        throws
    {
        let columns = values.map { quoted($0.0) }.joined(separator: ", ")
        let placeholders = values.indices.map { "$\($0 + 1)" }.joined(separator: ", ")
        try connection.execute(
            "INSERT INTO \(quoted(table)) (\(columns)) VALUES (\(placeholders))",
            try values.map { try ColumnValue.parameter($0.1, type: $0.2) }
        )
    }

    /// The columns every row starts with.
    private func header(_ object: ManagedObject) throws -> [(String, StoredValue, AttributeType?)] {
        [
            ("objectlog_key", .int(Int64(object.objectID.key)), .int64),
            ("objectlog_entity", .int(Int64(try tag(of: object))), .int32),
            ("objectlog_version", .int(1), .int64),
        ]
    }

    private func copyRows() throws {
        try connection.execute("BEGIN")
        for tag in tags {
            try insert("Tag", try header(tag) + [("label", .string(tag.label), .string)])
        }
        for owner in owners {
            try insert(
                "Owner",
                try header(owner) + [
                    ("name", .string(owner.name), .string),
                    ("rating", .int(Int64(owner.rating)), .int32),
                    ("nickname", owner.nickname.map { .string($0) } ?? .null, .string),
                    ("manager", .toOne(owner.manager?.objectID.key), nil),
                ]
            )
        }
        for item in items {
            var values =
                try header(item) + [
                    ("name", .string(item.name), .string),
                    ("count", .int(Int64(item.count)), .int64),
                    ("price", .double(item.price), .double),
                    ("weight", .float(item.weight), .float),
                    ("note", item.note.map { .string($0) } ?? .null, .string),
                    ("rank", item.rank.map { .int(Int64($0)) } ?? .null, .int64),
                    ("isActive", .bool(item.isActive), .bool),
                    ("added", .date(item.added), .date),
                    ("code", .uuid(item.code), .uuid),
                    ("big", .uint(item.big), .uint64),
                    ("tiny", .int(Int64(item.tiny)), .int8),
                    ("bytes", .data(item.bytes), .data),
                    ("link", .url(item.link.absoluteString), .url),
                    ("owner", .toOne(item.owner?.objectID.key), nil),
                ]
            if let gadget = item as? Catalog.Gadget {
                values.append(("voltage", .double(gadget.voltage), .double))
            }
            try insert("Item", values)
            for tag in item.tags {
                try insert(
                    "Item_tags",
                    [
                        ("source", .int(Int64(item.objectID.key)), .int64),
                        ("destination", .int(Int64(tag.objectID.key)), .int64),
                    ]
                )
            }
        }
        try connection.execute("COMMIT")
    }

    /// The keys of the rows a statement returns, in its order.
    func keys(_ select: SQLSelect) throws -> [ObjectKey] {
        try connection.execute(select.text, select.parameters).rows.map { row in
            try #require(row.first.flatMap { $0.flatMap { ObjectKey($0) } })
        }
    }

    /// The keys of the items a predicate selects, by the engine's evaluation of it.
    func engineKeys(_ predicate: Predicate<Catalog.Item>) throws -> Set<ObjectKey> {
        Set(try items.filter { try predicate.evaluate($0) }.map(\.objectID.key))
    }
}
