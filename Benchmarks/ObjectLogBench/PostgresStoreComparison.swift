import Foundation
import ObjectLog
import ObjectLogPostgreSQL

#if canImport(Glibc)
import Glibc
#endif

/// `objectlog-bench store --store postgresql [--scale N]`: ObjectLog's PostgreSQL store beside
/// the hand-written libpq peer (``PostgresPeer``), round by round on one server, and a table of
/// both sides' medians with the goal of the store within 1.5× the peer on bulk insert,
/// fetch-all and the 10% update.
///
/// The server is the one `OBJECTLOG_TEST_POSTGRES_URL` names, or a throwaway one.
func runPostgresStoreComparison(scale: Int) {
    withPostgresServer { url, _ in try compareStore(url: url, scale: scale) }
}

private func compareStore(url: String, scale: Int) throws {
    print(
        "objects: \(scale), CPU: \(MachineDescription.cpuModel), "
            + "\(ProcessInfo.processInfo.activeProcessorCount) processors"
    )
    let companion = try StoreCompanion(serverURL: url)
    defer { companion.dropAll() }
    let benchmark = PostgresPeerBenchmark(
        url: url,
        records: makeRecords(scale),
        companion: companion
    )
    try benchmark.run()
    print(
        "\nObjectLog's PostgreSQL store vs the hand-written libpq peer (medians; every result checked)"
    )
    print(
        pad("workload", 44) + pad("ObjectLog", 14) + pad("libpq peer", 14) + pad("ratio", 9)
            + pad("goal", 10) + "unit"
    )
    print(String(repeating: "-", count: 96))
    let goals: Set<PostgresPeerWorkload> = [.bulkInsert, .fetchAll, .update]
    for workload in PostgresPeerWorkload.allCases {
        guard let peer = benchmark.peerFigures[workload],
            let store = benchmark.companionFigures[workload]
        else { continue }
        let ratio = store / peer
        let goal = goals.contains(workload) ? (ratio <= 1.5 ? "<=1.5 met" : "<=1.5 MISSED") : ""
        print(
            pad(workload.rawValue, 44) + pad(number(store), 14) + pad(number(peer), 14)
                + pad(String(format: "%.2f", ratio), 9) + pad(goal, 10) + workload.unit
        )
    }
}

/// The bench entity's objects as the peer's records.
private func record(of item: BenchItem) -> BenchRecord {
    BenchRecord(
        id: Int64(item.number),
        name: item.name,
        value: item.value,
        count: Int64(item.count),
        created: item.created
    )
}

/// ObjectLog's PostgreSQL store as the peer's companion: a database of its own per round.
private final class StoreCompanion: PostgresPeerCompanion {
    private let serverURL: String
    private let admin: PostgresConnection
    private var container: PersistentContainer?
    private var database: String?
    private var identifiers: [Int64: ObjectID] = [:]
    private var databases: Set<String> = []

    init(serverURL: String) throws {
        self.serverURL = serverURL
        admin = try PostgresConnection(url: serverURL)
        // The server's notice of each `DROP DATABASE IF EXISTS` that drops nothing is noise.
        try admin.execute("SET client_min_messages = warning")
    }

    private func url(of database: String) -> String {
        serverURL + (serverURL.contains("?") ? "&" : "?") + "dbname=" + database
    }

    private func create(_ database: String, template: String? = nil) throws {
        _ = try? admin.execute("DROP DATABASE IF EXISTS \(database)")
        try admin.execute(
            "CREATE DATABASE \(database)" + (template.map { " TEMPLATE \($0)" } ?? "")
        )
        databases.insert(database)
    }

    /// Drops the databases it made, unless `OBJECTLOG_BENCH_KEEP=1` keeps them for profiling.
    func dropAll() {
        try? container?.close()
        container = nil
        if ProcessInfo.processInfo.environment["OBJECTLOG_BENCH_KEEP"] != "1" {
            for database in databases {
                _ = try? admin.execute("DROP DATABASE IF EXISTS \(database)")
            }
        }
        admin.close()
    }

    func bulkInsert(_ records: [BenchRecord], round: Int) throws -> Double {
        try container?.close()
        container = nil
        let name = "objectlog_bench_store_\(round)"
        try create(name)
        if let database, database != name { _ = try? admin.execute("DROP DATABASE \(database)") }
        database = name
        // The tables are made by the open, outside the timing, as the peer makes its table.
        let opened = try PersistentContainer(url: url(of: name), for: [BenchItem.self])
        container = opened
        let context = opened.newContext()
        let seconds = try measure {
            for record in records { BenchItem.insert(record, into: context) }
            try context.save()
        }
        identifiers = [:]
        for item in try opened.newContext().fetch(FetchRequest<BenchItem>()) {
            identifiers[Int64(item.number)] = item.objectID
        }
        return seconds
    }

    private func opened() throws -> PersistentContainer {
        guard let container else { throw BenchmarkFailure("the store companion has no database") }
        return container
    }

    func predicateSortLimit() throws -> [BenchRecord] {
        try opened().newContext().fetch(
            FetchRequest<BenchItem>(
                predicate: #Predicate { $0.value < 100 },
                sortBy: [SortDescriptor(\.name, comparator: .lexical)],
                fetchLimit: 100
            )
        ).map(record)
    }

    func update(ids: [Int64]) throws {
        let context = try opened().newContext()
        // The objects are read in one round trip, as a careful user of a database store reads
        // many objects by ID, not one query per ID.
        let objectIDs = try ids.map { id in
            guard let identifier = identifiers[id] else {
                throw BenchmarkFailure("no object has number \(id)")
            }
            return identifier
        }
        for item in try context.existingObjects(with: objectIDs, as: BenchItem.self) {
            item.value = Double(item.number % 1000)
            item.count += 1
        }
        try context.save()
    }

    func fetchAllChild() throws -> ChildTiming {
        guard let database else { throw BenchmarkFailure("the store companion has no database") }
        return try runBenchChild(["pg-store-fetch-all"], postgresURL: url(of: database))
    }

    func countChild() throws -> ChildTiming {
        guard let database else { throw BenchmarkFailure("the store companion has no database") }
        return try runBenchChild(["pg-store-count"], postgresURL: url(of: database))
    }

    func batch(_ change: BatchChange, round: Int) throws -> (seconds: Double, changed: Int) {
        guard let database else { throw BenchmarkFailure("the store companion has no database") }
        // A copy of the database, outside the timing: a template has no other sessions.
        try container?.close()
        container = nil
        let copy = "objectlog_bench_store_batch"
        try create(copy, template: database)
        defer {
            _ = try? admin.execute("DROP DATABASE IF EXISTS \(copy)")
            container = try? PersistentContainer(url: url(of: database), for: [BenchItem.self])
        }
        let copied = try PersistentContainer(url: url(of: copy), for: [BenchItem.self])
        defer { try? copied.close() }
        let context = copied.newContext()
        let tenth = #Predicate<BenchItem> { $0.value < 100 }
        var changed = 0
        let seconds = try measure {
            switch change {
            case .delete:
                changed = try context.execute(BatchDeleteRequest(predicate: tenth)).deleted.count
            case .update:
                changed =
                    try context.execute(
                        BatchUpdateRequest(predicate: tenth, updates: [.set(\.count, to: -1)])
                    ).updated.count
            }
        }
        return (seconds, changed)
    }
}

/// The child `pg-store-fetch-all`: opens the store at OBJECTLOG_TEST_POSTGRES_URL and fetches
/// every object, touching each; returns the checksum of what it touched.
func postgresStoreFetchAllChild() throws -> Double {
    let container = try PersistentContainer(
        url: try postgresPeerURLFromEnvironment(),
        for: [BenchItem.self],
        readOnly: true
    )
    defer { try? container.close() }
    var checksum = 0.0
    for item in try container.newContext().fetch(FetchRequest<BenchItem>()) {
        checksum +=
            Double(item.number) + Double(item.name.utf8.count) + item.value + Double(item.count)
            + item.created.timeIntervalSince1970
    }
    return checksum
}

/// The child `pg-store-count`: opens the store and counts its objects.
func postgresStoreCountChild() throws -> Int {
    let container = try PersistentContainer(
        url: try postgresPeerURLFromEnvironment(),
        for: [BenchItem.self],
        readOnly: true
    )
    defer { try? container.close() }
    return try container.newContext().count(FetchRequest<BenchItem>())
}
