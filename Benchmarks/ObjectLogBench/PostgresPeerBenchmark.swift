import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The PostgreSQL peer's figures, as ``runPostgresPeer(url:count:)`` returns them and `store
/// --postgres-peer` prints them.
enum PostgresPeerWorkload: String, CaseIterable, Sendable {
    case bulkInsert = "1 bulk insert, one durable commit"
    case firstQuery = "3 first query"
    case query = "3 value<100, sort name, limit 100"
    case update = "4 update 10% by id, one transaction"
    case updateRoundTrips = "4 the same, a round trip per update"
    case fetchAll = "2 cold connect + fetch all, touch all"
    case fetchAllPeakRSS = "8 peak RSS, workload 2"
    case count = "6 cold connect + count"
    case batchUpdate = "10 batch update of 10% by predicate"
    case batchDelete = "10 batch delete of 10% by predicate"

    /// `MB` for the peak RSS, `ms` for the rest.
    var unit: String { self == .fetchAllPeakRSS ? "MB" : "ms" }
}

/// The time and peak memory of a child process's work (`store --child …`).
struct ChildTiming {
    var seconds: Double
    var peakBytes: Double
}

/// Workload 10's two changes.
enum BatchChange: String, CaseIterable {
    case update
    case delete
}

/// An engine measured beside the PostgreSQL peer: each of its rounds runs right after the
/// peer's, so that both see the same load of the shared machine.
///
/// The SQLite peer is one (`store --postgres-peer`); ObjectLog's PostgreSQL store can be another.
protocol PostgresPeerCompanion {
    /// Workload 1: `records` into new, empty storage, and the seconds that took. The last
    /// round's storage serves the workloads after it.
    func bulkInsert(_ records: [BenchRecord], round: Int) throws -> Double
    /// Workload 3 once: its rows, in order.
    func predicateSortLimit() throws -> [BenchRecord]
    /// Workload 4 once: each id's value set to `id % 1000` and its count incremented, one save.
    func update(ids: [Int64]) throws
    /// Workload 2 in a child process.
    func fetchAllChild() throws -> ChildTiming
    /// Workload 6 in a child process.
    func countChild() throws -> ChildTiming
    /// Workload 10 on a fresh copy of the storage, made outside the timing: the seconds and the
    /// rows changed.
    func batch(_ change: BatchChange, round: Int) throws -> (seconds: Double, changed: Int)
}

/// Runs the PostgreSQL peer's workloads on the server `url` names, over `count` records of
/// ``makeRecords(_:seed:)``, and returns the median of each: milliseconds, or megabytes for the
/// peak RSS.
///
/// Every result is checked (see ``PostgresPeerBenchmark``); the peer's schema is dropped at the
/// end unless `OBJECTLOG_BENCH_KEEP=1`.
func runPostgresPeer(url: String, count: Int) throws -> [PostgresPeerWorkload: Double] {
    let benchmark = PostgresPeerBenchmark(url: url, records: makeRecords(count), companion: nil)
    try benchmark.run()
    return benchmark.peerFigures
}

/// The PostgreSQL peer's workloads, in the order of the store benchmark, each checked, with a
/// companion's rounds between the peer's.
///
/// 1. Bulk insert: three rounds, each into a table made anew (outside the timing); the last
///    round's table serves the rest. Then the count and every row are checked against the
///    records, and the table vacuumed and analysed (see ``PostgresPeer/vacuumAnalyze()``).
/// 3. The predicate query: the first, then the median of three; its 100 rows must equal those
///    computed from the records, and the companion's.
/// 4. Update 10% by id (every tenth id from 1): three rounds pipelined, and three with a round
///    trip per statement, the peer's figure; afterwards every row must hold what the updates
///    made of it. Then vacuumed and analysed again, as the store benchmark compacts ObjectLog's
///    store and checkpoints SQLite's before its cold workloads.
/// 2 and 6. Child processes: connect, fetch every row and touch it (median of three); connect
///    and count (median of five, the count checked here).
/// 10. Batch update and delete of `value < 100`, five rounds each, each on a fresh copy of the
///    table (made outside the timing); the rows changed must be those the model predicts.
final class PostgresPeerBenchmark {
    let url: String
    let records: [BenchRecord]
    let companion: (any PostgresPeerCompanion)?
    /// The peer's medians, in milliseconds (megabytes for the peak RSS).
    private(set) var peerFigures: [PostgresPeerWorkload: Double] = [:]
    /// The companion's, likewise.
    private(set) var companionFigures: [PostgresPeerWorkload: Double] = [:]

    /// How many rounds workloads 1, 2, 3 and 4 take the median of.
    static let rounds = 3

    init(url: String, records: [BenchRecord], companion: (any PostgresPeerCompanion)?) {
        self.url = url
        self.records = records
        self.companion = companion
    }

    func run() throws {
        let peer = try PostgresPeer(url: url)
        try peer.dropSchema()
        defer {
            if ProcessInfo.processInfo.environment["OBJECTLOG_BENCH_KEEP"] != "1" {
                try? peer.dropSchema()
            }
        }
        try bulkInsert(peer)
        try predicateQuery(peer)
        try updateByID(peer)
        try coldChildren(peer)
        try batchChanges(peer)
    }

    // MARK: - Workloads

    private func bulkInsert(_ peer: PostgresPeer) throws {
        var peerTimes: [Double] = []
        var companionTimes: [Double] = []
        for round in 0..<Self.rounds {
            try peer.createTable()
            peerTimes.append(try measure { try peer.bulkInsert(records) })
            if let companion {
                companionTimes.append(try companion.bulkInsert(records, round: round))
            }
        }
        note(.bulkInsert, peerTimes, companionTimes)
        let rows = try peer.count()
        guard rows == records.count else {
            throw BenchmarkFailure(
                "the PostgreSQL peer holds \(rows) rows after its insert, not \(records.count)"
            )
        }
        let fetched = try peer.fetchAll().sorted { $0.id < $1.id }
        if let index = fetched.indices.first(where: { fetched[$0] != records[$0] }) {
            throw BenchmarkFailure(
                "the PostgreSQL peer's row \(index + 1) is \(fetched[index]), not \(records[index])"
            )
        }
        try peer.vacuumAnalyze()
    }

    private func predicateQuery(_ peer: PostgresPeer) throws {
        // The rows the query must return, from the records: byte order, as `COLLATE "C"`.
        let expected = Array(
            records.filter { $0.value < 100 }
                .sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
                .prefix(100)
        )
        var peerRows: [BenchRecord] = []
        var companionRows: [BenchRecord] = []
        let peerFirst = try measure { peerRows = try peer.predicateSortLimit() }
        let companionFirst = try companion.map { companion in
            try measure { companionRows = try companion.predicateSortLimit() }
        }
        try checkQuery(peerRows, companionRows, expected)
        var peerTimes: [Double] = []
        var companionTimes: [Double] = []
        for _ in 0..<Self.rounds {
            peerTimes.append(try measure { peerRows = try peer.predicateSortLimit() })
            if let companion {
                companionTimes.append(
                    try measure { companionRows = try companion.predicateSortLimit() }
                )
            }
        }
        try checkQuery(peerRows, companionRows, expected)
        note(.firstQuery, [peerFirst], companionFirst.map { [$0] } ?? [])
        note(.query, peerTimes, companionTimes)
    }

    private func checkQuery(
        _ peerRows: [BenchRecord],
        _ companionRows: [BenchRecord],
        _ expected: [BenchRecord]
    ) throws {
        guard peerRows == expected else {
            throw BenchmarkFailure(
                "the PostgreSQL peer's predicate query returned other rows than the records'"
            )
        }
        guard companion == nil || companionRows == expected else {
            throw BenchmarkFailure(
                "the companion's predicate query returned other rows than the PostgreSQL peer"
            )
        }
    }

    private func updateByID(_ peer: PostgresPeer) throws {
        // Made outside every timing, as the store benchmark makes its id lists.
        let ids = stride(from: 1, through: Int64(records.count), by: 10).map { $0 }
        var pipelined: [Double] = []
        var roundTrips: [Double] = []
        var companionTimes: [Double] = []
        for _ in 0..<Self.rounds {
            pipelined.append(try measure { try peer.update(ids: ids, pipelined: true) })
            if let companion {
                companionTimes.append(try measure { try companion.update(ids: ids) })
            }
            roundTrips.append(try measure { try peer.update(ids: ids, pipelined: false) })
        }
        note(.update, pipelined, companionTimes)
        note(.updateRoundTrips, roundTrips, companionTimes)
        // Every tenth row, from the first, took its new value and 2 × rounds increments; no
        // other row changed.
        let fetched = try peer.fetchAll().sorted { $0.id < $1.id }
        let expected = updatedRecords()
        if fetched.count != expected.count {
            throw BenchmarkFailure(
                "the PostgreSQL peer holds \(fetched.count) rows after the updates"
            )
        }
        if let index = fetched.indices.first(where: { fetched[$0] != expected[$0] }) {
            throw BenchmarkFailure(
                "after the updates the PostgreSQL peer's row \(index + 1) is \(fetched[index]), not \(expected[index])"
            )
        }
        try peer.vacuumAnalyze()
    }

    /// The records as workload 4 leaves them in the peer's table.
    private func updatedRecords() -> [BenchRecord] {
        var expected = records
        for index in stride(from: 0, to: expected.count, by: 10) {
            expected[index].value = Double(expected[index].id % 1000)
            expected[index].count += Int64(2 * Self.rounds)
        }
        return expected
    }

    private func coldChildren(_ peer: PostgresPeer) throws {
        var fetches: [ChildTiming] = []
        var companionFetches: [ChildTiming] = []
        for _ in 0..<Self.rounds {
            fetches.append(try runBenchChild(["pg-fetch-all"], postgresURL: url))
            if let companion { companionFetches.append(try companion.fetchAllChild()) }
        }
        note(.fetchAll, fetches.map(\.seconds), companionFetches.map(\.seconds))
        peerFigures[.fetchAllPeakRSS] = (fetches.map(\.peakBytes).max() ?? 0) / 1e6
        if !companionFetches.isEmpty {
            companionFigures[.fetchAllPeakRSS] =
                (companionFetches.map(\.peakBytes).max() ?? 0) / 1e6
        }
        // Opens take milliseconds, so one run is at the mercy of the shared machine: both sides
        // take the median of five fresh processes.
        var counts: [ChildTiming] = []
        var companionCounts: [ChildTiming] = []
        for _ in 0..<5 {
            counts.append(try runBenchChild(["pg-count"], postgresURL: url))
            if let companion { companionCounts.append(try companion.countChild()) }
        }
        note(.count, counts.map(\.seconds), companionCounts.map(\.seconds))
        let rows = try peer.count()
        guard rows == records.count else {
            throw BenchmarkFailure("the PostgreSQL peer counted \(rows) rows, not \(records.count)")
        }
    }

    private func batchChanges(_ peer: PostgresPeer) throws {
        let expected = updatedRecords().filter { $0.value < 100 }.count
        for change in BatchChange.allCases {
            var peerTimes: [Double] = []
            var companionTimes: [Double] = []
            for round in 0..<5 {
                try peer.copyTable(to: "item_batch")
                let copy = try PostgresPeer(url: url, table: "item_batch")
                var changed = 0
                peerTimes.append(
                    try measure {
                        changed = try change == .update ? copy.batchUpdate() : copy.batchDelete()
                    }
                )
                guard changed == expected else {
                    throw BenchmarkFailure(
                        "the PostgreSQL peer's batch \(change.rawValue) changed \(changed) rows, not \(expected)"
                    )
                }
                if change == .delete {
                    let left = try copy.count()
                    guard left == records.count - expected else {
                        throw BenchmarkFailure(
                            "the PostgreSQL peer holds \(left) rows after its batch delete"
                        )
                    }
                }
                try peer.dropTable("item_batch")
                if let companion {
                    let (seconds, changed) = try companion.batch(change, round: round)
                    guard changed == expected else {
                        throw BenchmarkFailure(
                            "the companion's batch \(change.rawValue) changed \(changed) rows, not \(expected)"
                        )
                    }
                    companionTimes.append(seconds)
                }
            }
            note(change == .update ? .batchUpdate : .batchDelete, peerTimes, companionTimes)
        }
    }

    /// Notes the medians of both sides' seconds, in milliseconds.
    private func note(
        _ workload: PostgresPeerWorkload,
        _ peerSeconds: [Double],
        _ companionSeconds: [Double]
    ) {
        peerFigures[workload] = percentile(peerSeconds, 0.5) * 1000
        if !companionSeconds.isEmpty {
            companionFigures[workload] = percentile(companionSeconds, 0.5) * 1000
        }
    }
}

// MARK: - Child processes

/// Runs this executable as `store --child ARGUMENTS`, which prints "seconds peakRSSBytes".
///
/// The PostgreSQL URL goes to the child in its environment (`OBJECTLOG_TEST_POSTGRES_URL`), not
/// its arguments, where `ps` would show a password it holds.
func runBenchChild(_ arguments: [String], postgresURL: String? = nil) throws -> ChildTiming {
    // Whatever the benchmark left for the file system to write back is written first, so that
    // the child does not wait for it (see the store benchmark's children).
    sync()
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    process.arguments = ["store", "--child"] + arguments
    if let postgresURL {
        var environment = ProcessInfo.processInfo.environment
        environment["OBJECTLOG_TEST_POSTGRES_URL"] = postgresURL
        process.environment = environment
    }
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let output = String(decoding: data, as: UTF8.self)
    let fields = output.split(separator: " ").compactMap {
        Double($0.trimmingCharacters(in: .whitespacesAndNewlines))
    }
    guard process.terminationStatus == 0, fields.count == 2 else {
        throw BenchmarkFailure(
            "child \(arguments.joined(separator: " ")) failed: \(output.trimmingCharacters(in: .whitespacesAndNewlines))"
        )
    }
    return ChildTiming(seconds: fields[0], peakBytes: fields[1])
}

/// The server of the PostgreSQL peer's children: `OBJECTLOG_TEST_POSTGRES_URL`.
func postgresPeerURLFromEnvironment() throws -> String {
    guard let url = ProcessInfo.processInfo.environment["OBJECTLOG_TEST_POSTGRES_URL"], !url.isEmpty
    else {
        throw BenchmarkFailure("OBJECTLOG_TEST_POSTGRES_URL names no PostgreSQL server")
    }
    return url
}

/// The child `pg-fetch-all`: connects, fetches every row of the peer's table and touches each;
/// returns the checksum of what it touched.
func postgresPeerFetchAllChild() throws -> Double {
    var checksum = 0.0
    let peer = try PostgresPeer(url: try postgresPeerURLFromEnvironment())
    for record in try peer.fetchAll() {
        checksum +=
            Double(record.id) + Double(record.name.utf8.count) + record.value + Double(record.count)
            + record.created.timeIntervalSince1970
    }
    return checksum
}

/// The child `pg-count`: connects and counts the peer's table.
func postgresPeerCountChild() throws -> Int {
    try PostgresPeer(url: try postgresPeerURLFromEnvironment()).count()
}
