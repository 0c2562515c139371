import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `objectlog-bench store --postgres-peer [--scale N]`: the PostgreSQL peer's workloads beside
/// the SQLite peer's, round by round, and a table of both sides' medians.
///
/// The server is the one `OBJECTLOG_TEST_POSTGRES_URL` names, or else a throwaway one from
/// `tools/postgres-test-server`, stopped at the end whether the run succeeds or fails, or when
/// the process is interrupted.
func runPostgresPeerComparison(scale: Int) {
    withPostgresServer { url, throwaway in
        try comparePeers(url: url, scale: scale, throwaway: throwaway)
    }
}

/// Runs `body` with the server `OBJECTLOG_TEST_POSTGRES_URL` names, or with a throwaway one
/// from `tools/postgres-test-server` (`body` is told which), stopped at the end whether `body`
/// succeeds or fails, or when the process is interrupted; a failure ends the process (exit 1).
func withPostgresServer(_ body: (_ url: String, _ throwaway: Bool) throws -> Void) {
    var server: ThrowawayPostgresServer?
    do {
        let url: String
        if let given = ProcessInfo.processInfo.environment["OBJECTLOG_TEST_POSTGRES_URL"],
            !given.isEmpty
        {
            url = given
        } else {
            print("starting a throwaway PostgreSQL server (tools/postgres-test-server)")
            let started = try ThrowawayPostgresServer.start()
            server = started
            url = started.url
        }
        let signals = server?.stopOnSignals() ?? []
        defer { for source in signals { source.cancel() } }
        try body(url, server != nil)
    } catch {
        print("error: \(error)")
        server?.stop()
        exit(1)
    }
    server?.stop()
}

private func comparePeers(url: String, scale: Int, throwaway: Bool) throws {
    let settings = try PostgresPeer(url: url)
    func show(_ name: String) throws -> String { "\(name)=\(try settings.setting(name))" }
    print(
        "objects: \(scale), CPU: \(MachineDescription.cpuModel), \(ProcessInfo.processInfo.activeProcessorCount) processors"
    )
    print(
        "PostgreSQL \(try settings.setting("server_version")) at \(settings.target)"
            + (throwaway
                ? " (a throwaway server with a hot standby, tools/postgres-test-server)" : "")
    )
    print(
        try [
            "synchronous_commit", "fsync", "wal_level", "shared_buffers",
            "max_parallel_workers_per_gather",
        ].map(show).joined(separator: ", ")
    )
    print("SQLite: WAL, synchronous=FULL")

    let directory =
        FileManager.default.temporaryDirectory.path + "/objectlog-bench-pg-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer {
        if ProcessInfo.processInfo.environment["OBJECTLOG_BENCH_KEEP"] != "1" {
            try? FileManager.default.removeItem(atPath: directory)
        }
    }
    let companion = SQLiteCompanion(directory: directory)
    let benchmark = PostgresPeerBenchmark(
        url: url,
        records: makeRecords(scale),
        companion: companion
    )
    try benchmark.run()

    print("\nPostgreSQL peer vs SQLite peer (medians; every result checked)")
    print(
        pad("workload", 44) + pad("PostgreSQL", 14) + pad("SQLite", 14) + pad("PG/SQLite", 11)
            + "unit"
    )
    print(String(repeating: "-", count: 88))
    for workload in PostgresPeerWorkload.allCases {
        guard let peer = benchmark.peerFigures[workload] else { continue }
        let sqlite = benchmark.companionFigures[workload]
        print(
            pad(workload.rawValue, 44) + pad(number(peer), 14) + pad(sqlite.map(number) ?? "-", 14)
                + pad(sqlite.map { String(format: "%.2f", peer / $0) } ?? "-", 11) + workload.unit
        )
    }
    let rowsPerSecond = { (milliseconds: Double?, rows: Int) in
        milliseconds.map { number(Double(rows) / ($0 / 1000)) } ?? "-"
    }
    let updated = (scale + 9) / 10
    print(
        "\nas rates: bulk insert \(rowsPerSecond(benchmark.peerFigures[.bulkInsert], scale)) rows/s "
            + "(SQLite \(rowsPerSecond(benchmark.companionFigures[.bulkInsert], scale))), update by id "
            + "\(rowsPerSecond(benchmark.peerFigures[.update], updated)) rows/s pipelined, "
            + "\(rowsPerSecond(benchmark.peerFigures[.updateRoundTrips], updated)) a round trip each "
            + "(SQLite \(rowsPerSecond(benchmark.companionFigures[.update], updated))).\n"
    )
}

/// The SQLite peer as the PostgreSQL peer's companion, in files of its own directory.
private final class SQLiteCompanion: PostgresPeerCompanion {
    let directory: String
    private var peer: SQLitePeer?

    init(directory: String) { self.directory = directory }

    private var path: String { directory + "/bench.sqlite" }

    private func remove(_ path: String) {
        for suffix in ["", "-wal", "-shm"] {
            try? FileManager.default.removeItem(atPath: path + suffix)
        }
    }

    func bulkInsert(_ records: [BenchRecord], round: Int) throws -> Double {
        peer = nil
        remove(path)
        let peer = SQLitePeer(path: path)
        peer.createSchema()
        self.peer = peer
        return measure { peer.bulkInsert(records) }
    }

    func predicateSortLimit() throws -> [BenchRecord] { try opened().predicateSortLimit() }

    func update(ids: [Int64]) throws { try opened().update(ids: ids) }

    func fetchAllChild() throws -> ChildTiming { try runBenchChild(["sqlite-fetch-all", path]) }

    func countChild() throws -> ChildTiming { try runBenchChild(["sqlite-count", path]) }

    func batch(_ change: BatchChange, round: Int) throws -> (seconds: Double, changed: Int) {
        // A copy of the database, checkpointed first so that its file holds every row.
        _ = try opened().checkpointedSize()
        let copyPath = directory + "/batch.sqlite"
        remove(copyPath)
        try FileManager.default.copyItem(atPath: path, toPath: copyPath)
        defer { remove(copyPath) }
        let copy = SQLitePeer(path: copyPath)
        var changed = 0
        let seconds = measure { changed = copy.batchChange(delete: change == .delete) }
        return (seconds, changed)
    }

    private func opened() throws -> SQLitePeer {
        guard let peer else { throw BenchmarkFailure("the SQLite companion has no database yet") }
        return peer
    }
}
