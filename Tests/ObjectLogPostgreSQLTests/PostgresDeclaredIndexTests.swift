import Foundation
import ObjectLogStore
import StoreTestSupport
import Testing

@testable import ObjectLog
@testable import ObjectLogPostgreSQL

/// A reading without indexes: the first model version.
final class PlainReading: ManagedObject {
    override class var entityName: String { "Reading" }
    @Attribute var value = 0.0
    @Attribute var sensor = 0
    @Attribute var time = Date(timeIntervalSinceReferenceDate: 0)
}

/// The next version: an index on `value` and a compound one on `sensor` and `time`.
final class IndexedSample: ManagedObject {
    override class var entityName: String { "Reading" }
    @Attribute(.indexed) var value = 0.0
    @Attribute var sensor = 0
    @Attribute var time = Date(timeIntervalSinceReferenceDate: 0)
    override class var indexes: [[String]] { [["sensor", "time"]] }
}

/// The version after: the compound index dropped, an attribute added.
final class NotedSample: ManagedObject {
    override class var entityName: String { "Reading" }
    @Attribute(.indexed) var value = 0.0
    @Attribute var sensor = 0
    @Attribute var time = Date(timeIntervalSinceReferenceDate: 0)
    @Attribute var note = ""
}

@Suite("Declared indexes on PostgreSQL", .enabled(if: TestServer.runs, TestServer.skipReason))
struct PostgresDeclaredIndexTests {
    /// The definitions of the declared indexes of the `Reading` table, by name.
    static func declaredIndexes(_ url: String) throws -> [String: String] {
        let connection = try PostgresConnection(url: url)
        let result = try connection.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'Reading' "
                + "AND indexname LIKE 'objectlog_index_%'"
        )
        var found: [String: String] = [:]
        for row in result.rows { found[row[0] ?? ""] = row[1] ?? "" }
        return found
    }

    @Test("adding and dropping a declared index is a lightweight migration: CREATE and DROP INDEX")
    func addAndDrop() throws {
        let url = try TestServer.freshDatabase()
        do {
            let container = try PersistentContainer(url: url, for: [PlainReading.self])
            let context = container.newContext()
            for index in 0..<300 {
                let sample = PlainReading(context: context)
                sample.value = Double(index)
                sample.sensor = index % 7
            }
            try context.save()
            try container.close()
        }
        #expect(try Self.declaredIndexes(url).isEmpty)
        do {
            let container = try PersistentContainer(url: url, for: [IndexedSample.self])
            let indexes = try Self.declaredIndexes(url)
            #expect(indexes.count == 2)
            #expect(
                indexes["objectlog_index_Reading_value"]?.hasSuffix("USING btree (value)")
                    == true
            )
            #expect(
                indexes["objectlog_index_Reading_sensor_time"]?.hasSuffix(
                    "USING btree (sensor, \"time\")"
                ) == true
            )
            let context = container.newContext()
            let below = try context.count(
                FetchRequest<IndexedSample>(predicate: #Predicate { $0.value < 30 })
            )
            #expect(below == 30)
            let fetched = try context.fetch(
                FetchRequest<IndexedSample>(
                    predicate: #Predicate { $0.sensor == 3 && $0.value >= 100 }
                )
            )
            #expect(fetched.count == (100..<300).filter { $0 % 7 == 3 }.count)
            try container.close()
        }
        do {
            let container = try PersistentContainer(url: url, for: [NotedSample.self])
            #expect(Array(try Self.declaredIndexes(url).keys) == ["objectlog_index_Reading_value"])
            #expect(try container.newContext().count(FetchRequest<NotedSample>()) == 300)
            try container.close()
        }
    }

    @Test("a new store creates the declared indexes with its tables")
    func newStore() throws {
        let url = try TestServer.freshDatabase()
        let container = try PersistentContainer(url: url, for: [IndexedSample.self])
        #expect(try Self.declaredIndexes(url).count == 2)
        try container.close()
    }

    @Test("an index name past PostgreSQL's 63 bytes is shortened with a hash, the same each time")
    func longNames() {
        let columns = [String(repeating: "c", count: 40), String(repeating: "d", count: 40)]
        let name = PostgresStore.declaredIndexName(table: "Reading", columns: columns)
        #expect(name.utf8.count == 63)
        #expect(name == PostgresStore.declaredIndexName(table: "Reading", columns: columns))
        #expect(name != PostgresStore.declaredIndexName(table: "Reading", columns: columns + ["e"]))
    }
}
