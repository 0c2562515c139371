import Foundation
import ObjectLog
import ObjectLogStore

#if canImport(Glibc)
import Glibc
#endif

/// The benchmark's entity: id, a 16-character name, a value in [0, 1000), a count and a date.
final class BenchItem: ManagedObject {
    @Attribute var number = 0
    @Attribute var name = ""
    @Attribute var value = 0.0
    @Attribute var count = 0
    @Attribute var created = Date()

    /// Inserts a new object with a record's values into `context`.
    @inline(__always)
    static func insert(_ record: BenchRecord, into context: ManagedObjectContext) {
        let item = BenchItem(context: context)
        item.number = Int(record.id)
        item.name = record.name
        item.value = record.value
        item.count = Int(record.count)
        item.created = record.created
    }
}

/// The benchmark's entity in a second model version: one attribute added (a lightweight
/// migration).
final class BenchItemWithLabel: ManagedObject {
    @Attribute var number = 0
    @Attribute var name = ""
    @Attribute var value = 0.0
    @Attribute var count = 0
    @Attribute var created = Date()
    @Attribute var label = ""
    override class var entityName: String { "BenchItem" }
}

/// The benchmark's entity in a version that keeps the count as text: a type change, which a
/// custom migration stage converts object by object.
final class BenchItemWithTextCount: ManagedObject {
    @Attribute var number = 0
    @Attribute var name = ""
    @Attribute var value = 0.0
    @Attribute var count = ""
    @Attribute var created = Date()
    override class var entityName: String { "BenchItem" }
}

/// The plan that rewrites every object in one pass: count as a number -> count as text.
let textCountRewritePlan = MigrationPlan(
    versions: [
        ModelVersion("1", [BenchItem.self]), ModelVersion("2", [BenchItemWithTextCount.self]),
    ],
    stages: [
        .rewrite(
            from: "1",
            to: "2",
            entities: [
                "BenchItem": { old, new in
                    guard case .int(let count)? = old["count"] else { return }
                    new["count"] = .string(String(count))
                }
            ]
        )
    ]
)

/// The same change through a custom stage, which loads every object into a context.
let textCountPlan = MigrationPlan(
    versions: [
        ModelVersion("1", [BenchItem.self]), ModelVersion("2", [BenchItemWithTextCount.self]),
    ],
    stages: [
        .custom(from: "1", to: "2") { migration in
            for old in try migration.oldObjects("BenchItem") {
                guard case .int(let count)? = old["count"],
                    let item = try migration.newObject(for: old, as: BenchItemWithTextCount.self)
                else { continue }
                item.count = String(count)
            }
        }
    ]
)

/// ObjectLog against SQLite on the same rows, in the same run, plus the machine's raw limits.
///
/// `--scale N` sets the number of objects (default 1,000,000), and `--scales N,M,…` runs the
/// whole group at each size in turn (``ScaleSeries``); `--json PATH` and `--svg PATH` write the
/// rows and a chart. Cold workloads run in child processes of this executable, so they
/// start with fresh process state and their peak memory can be read.
func runStoreBenchmarks(arguments: [String]) {
    if arguments.first == "--child" {
        runChild(Array(arguments.dropFirst()))
        return
    }
    let scale = option("--scale", in: arguments).flatMap(Int.init) ?? 1_000_000
    guard scale >= 100 else {
        print("error: --scale must be at least 100")
        exit(64)
    }
    // Workload 3i alone (IndexedQueryBenchmark.swift).
    if arguments.contains("--indexed-only") {
        do {
            try runIndexedQueryBenchmark(scale: scale)
        } catch {
            print("error: \(error)")
            exit(1)
        }
        return
    }
    // The PostgreSQL peer beside the SQLite peer (PostgresPeerComparison.swift).
    if arguments.contains("--postgres-peer") {
        runPostgresPeerComparison(scale: scale)
        return
    }
    // ObjectLog's PostgreSQL store beside the peer (PostgresStoreComparison.swift).
    if let store = option("--store", in: arguments) {
        guard store == "postgresql" else {
            print("error: --store takes 'postgresql' (the log store is the default)")
            exit(64)
        }
        if arguments.contains("--delete-rules") {
            runPostgresDeleteRulesBenchmark(scale: scale)
        } else {
            runPostgresStoreComparison(scale: scale)
        }
        return
    }
    // Workload 11 alone (GroupCommitBenchmark.swift).
    if arguments.contains("--group-commit") {
        runGroupCommitBenchmark(arguments: arguments)
        return
    }
    do {
        if let scales = ScaleSeries.scales(in: arguments) {
            // Each size's own run writes no JSON or SVG: the series writes them for all.
            let plain = arguments.enumerated().filter { index, argument in
                !["--json", "--svg", "--scales"].contains(argument)
                    && !(index > 0
                        && ["--json", "--svg", "--scales"].contains(arguments[index - 1]))
            }.map(\.element)
            var series = ScaleSeries(scales: scales)
            for scale in scales {
                let benchmark = StoreBenchmark(scale: scale, arguments: plain)
                try benchmark.run()
                series.add(scale: scale, rows: benchmark.report.rows)
            }
            series.printSummary()
            if let path = option("--json", in: arguments) { try series.writeJSON(to: path) }
            if let path = option("--svg", in: arguments) { try series.writeSVG(to: path) }
            return
        }
        try StoreBenchmark(scale: scale, arguments: arguments).run()
    } catch {
        print("error: \(error)")
        exit(1)
    }
}

private struct StoreBenchmark {
    let scale: Int
    let arguments: [String]
    let directory: String
    let report = BenchmarkReport(title: "ObjectLog vs SQLite")

    init(scale: Int, arguments: [String]) {
        self.scale = scale
        self.arguments = arguments
        directory =
            FileManager.default.temporaryDirectory.path + "/objectlog-bench-" + UUID().uuidString
    }

    var storePath: String { directory + "/bench.olog" }
    var sqlitePath: String { directory + "/bench.sqlite" }

    func run() throws {
        try FileManager.default.createDirectory(
            atPath: directory,
            withIntermediateDirectories: true
        )
        // OBJECTLOG_BENCH_KEEP=1 keeps the stores for profiling the child workloads by hand.
        let keep = ProcessInfo.processInfo.environment["OBJECTLOG_BENCH_KEEP"] == "1"
        defer { if !keep { try? FileManager.default.removeItem(atPath: directory) } }
        print("objects: \(scale), directory: \(directory)")
        let records = makeRecords(scale)
        report.header()

        // 1. Bulk insert and one durable save: the median of three rounds, the engines
        // alternating, each into new files (the last round's stores serve the workloads after).
        var objectLogInserts: [Double] = []
        var sqliteInserts: [Double] = []
        for round in 1..<Self.rounds {
            let path = directory + "/round\(round).olog"
            let scratch = try PersistentContainer(path: path, for: [BenchItem.self])
            objectLogInserts.append(try measure { try insertAll(records, into: scratch) })
            try scratch.close()
            let scratchPeer = SQLitePeer(path: directory + "/round\(round).sqlite")
            scratchPeer.createSchema()
            sqliteInserts.append(measure { scratchPeer.bulkInsert(records) })
            try removeFiles(startingWith: "round\(round).")
        }
        let container = try PersistentContainer(path: storePath, for: [BenchItem.self])
        objectLogInserts.append(try measure { try insertAll(records, into: container) })
        let peer = SQLitePeer(path: sqlitePath)
        peer.createSchema()
        sqliteInserts.append(measure { peer.bulkInsert(records) })
        let objectLogInsert = percentile(objectLogInserts, 0.5)
        let sqliteInsert = percentile(sqliteInserts, 0.5)
        addThroughput(
            "1 bulk insert + durable save",
            objectlog: objectLogInsert,
            sqlite: sqliteInsert,
            goal: 2
        )

        // 3. Predicate + sort + limit (warm, in this process).
        let context = container.newContext()
        let request = FetchRequest<BenchItem>(
            predicate: #Predicate { $0.value < 100 },
            // Lexical order: SQLite's `ORDER BY name` compares bytes (its default
            // BINARY collation); the default-order row below sorts with
            // `SortDescriptor(\.name)` alone.
            sortBy: [SortDescriptor(\.name, comparator: .lexical)],
            fetchLimit: 100
        )
        // The first ObjectLog query builds the attribute columns it filters with (the engine
        // keeps them for later fetches and commits); it is reported on its own row.
        var objectLogNames: [String] = []
        var sqliteNames: [String] = []
        let objectLogFirst = try measure { objectLogNames = try context.fetch(request).map(\.name) }
        let sqliteFirst = measure { sqliteNames = peer.predicateSortLimit().map(\.name) }
        guard objectLogNames == sqliteNames else {
            throw BenchmarkFailure(
                "the predicate query returned different rows from the two engines"
            )
        }
        let objectLogQuery = try median(3) {
            objectLogNames = try context.fetch(request).map(\.name)
        }
        let sqliteQuery = median(3) { sqliteNames = peer.predicateSortLimit().map(\.name) }
        guard objectLogNames == sqliteNames else {
            throw BenchmarkFailure(
                "the predicate query returned different rows from the two engines"
            )
        }
        addTime(
            "3 value<100, sort name, limit 100",
            objectlog: objectLogQuery,
            sqlite: sqliteQuery,
            goal: 0.5
        )
        report.add(
            BenchmarkRow(
                workload: "3 first query, building the columns (ms)",
                objectlog: objectLogFirst * 1000,
                peer: sqliteFirst * 1000,
                ratio: objectLogFirst / sqliteFirst,
                unit: "ms",
                goal: "vs SQLite's first (info)",
                met: nil
            )
        )
        // The same query in the default string order (`String`'s own on Linux, whose
        // Foundation has no `.localizedStandard`), against the `.lexical` one above.
        let defaultOrder = FetchRequest<BenchItem>(
            predicate: #Predicate { $0.value < 100 },
            sortBy: [SortDescriptor(\.name)],
            fetchLimit: 100
        )
        var defaultNames: [String] = []
        let defaultQuery = try median(3) {
            defaultNames = try context.fetch(defaultOrder).map(\.name)
        }
        guard defaultNames == defaultNames.sorted() else {
            throw BenchmarkFailure("the default-order query returned names out of order")
        }
        report.add(
            BenchmarkRow(
                workload: "3 same query, default string order (ms)",
                objectlog: defaultQuery * 1000,
                peer: objectLogQuery * 1000,
                ratio: defaultQuery / objectLogQuery,
                unit: "ms",
                goal: "vs .lexical (info)",
                met: nil
            )
        )

        // 3b. A case-insensitive substring search over every name, counted: a text match
        // against SQLite's `LIKE '%…%'` (case-insensitive for ASCII too). Mixed case on
        // purpose: both must fold it to find the lowercase names.
        let search = FetchRequest<BenchItem>(textMatch: .contains(\.name, "Ab"))
        var objectLogMatches = 0
        var sqliteMatches = 0
        let objectLogSearch = try median(3) { objectLogMatches = try context.count(search) }
        let sqliteSearch = median(3) { sqliteMatches = peer.countNames(like: "%Ab%") }
        guard objectLogMatches == sqliteMatches, objectLogMatches > 0 else {
            throw BenchmarkFailure(
                "the text search counted \(objectLogMatches) names, SQLite \(sqliteMatches)"
            )
        }
        addTime(
            "3b name contains 'Ab' ignoring case, count",
            objectlog: objectLogSearch,
            sqlite: sqliteSearch,
            goal: 1
        )
        // For comparison, the same search as a `#Predicate` (case-sensitive, so lowercase),
        // which compiles to a text match comparing by character.
        let predicateSearch = FetchRequest<BenchItem>(
            predicate: #Predicate { $0.name.contains("ab") }
        )
        var predicateMatches = 0
        let predicateTime = try median(3) { predicateMatches = try context.count(predicateSearch) }
        guard predicateMatches == objectLogMatches else {
            throw BenchmarkFailure(
                "#Predicate counted \(predicateMatches) names, the text match \(objectLogMatches)"
            )
        }
        report.add(
            BenchmarkRow(
                workload: "3b the same as #Predicate name.contains, count (ms)",
                objectlog: predicateTime * 1000,
                peer: objectLogSearch * 1000,
                ratio: predicateTime / objectLogSearch,
                unit: "ms",
                goal: "vs the text match (info)",
                met: nil
            )
        )

        // 3c. Aggregates: the sum of every value, and of the values below 100, against
        // SQLite's `sum()`. The two add in different orders, so they agree to rounding only.
        for (name, bound) in [
            ("3c sum(value) of all", nil), ("3c sum(value) where value<100", 100.0),
        ] {
            let request = AggregateRequest<BenchItem>(
                predicate: bound.map { bound in #Predicate { $0.value < bound } },
                aggregates: [.sum(\.value)]
            )
            var objectLogSum = 0.0
            var sqliteSum = 0.0
            let objectLogTime = try median(3) {
                if case .double(let sum)? = try context.aggregate(request).first?["sum(value)"] {
                    objectLogSum = sum
                }
            }
            let sqliteTime = median(3) { sqliteSum = peer.sumValues(below: bound) }
            guard abs(objectLogSum - sqliteSum) <= 1e-9 * abs(sqliteSum), sqliteSum > 0 else {
                throw BenchmarkFailure(
                    "\(name): ObjectLog summed \(objectLogSum), SQLite \(sqliteSum)"
                )
            }
            addTime(name, objectlog: objectLogTime, sqlite: sqliteTime, goal: 1)
        }

        // 3i. Workload 3 with an index on `value` in both engines, on stores of their own
        // (IndexedQueryBenchmark.swift).
        try runIndexedQueryWorkload(records: records, directory: directory, report: report)

        // 4. Update 10% by identity in one save: the median of three rounds, alternating (each
        // round updates the same objects again, in both engines).
        let identifiers = try context.fetchIdentifiers(FetchRequest<BenchItem>())
        let chosen = stride(from: 0, to: identifiers.count, by: 10).map { identifiers[$0] }
        // The peer's ids are made outside its timing too, as `chosen` is for ObjectLog.
        let chosenIDs = stride(from: 1, through: Int64(scale), by: 10).map { $0 }
        var objectLogUpdates: [Double] = []
        var sqliteUpdates: [Double] = []
        for _ in 0..<Self.rounds {
            objectLogUpdates.append(
                try measure {
                    let updater = container.newContext()
                    for identifier in chosen {
                        let item = try updater.object(with: identifier, as: BenchItem.self)
                        item.value = Double(item.number % 1000)
                        item.count += 1
                    }
                    try updater.save()
                }
            )
            sqliteUpdates.append(
                measure { peer.update(ids: chosenIDs) }
            )
        }
        let objectLogUpdate = percentile(objectLogUpdates, 0.5)
        let sqliteUpdate = percentile(sqliteUpdates, 0.5)
        addThroughput(
            "4 update 10% by identity, one save",
            objectlog: objectLogUpdate,
            sqlite: sqliteUpdate,
            goal: 2,
            objects: chosen.count
        )

        // 5. 1,000 small durable saves, against the raw append + fdatasync. In ten blocks of
        // 100, each block running ObjectLog's saves, SQLite's and the raw appends in turn, so
        // that all three see the same disk: one after another, a slow spell of the shared disk
        // in one of them decided the ratio.
        let small = makeRecords(1000, seed: 7).map {
            var record = $0
            record.id += Int64(scale)
            return record
        }
        let before = container.coordinator.logStore!.statistics
        let saver = container.newContext()
        let appendSync = MachineLimits.AppendSync(directory: directory)
        var objectLogLatencies: [Double] = []
        var sqliteLatencies: [Double] = []
        var raw: [Double] = []
        for block in stride(from: 0, to: small.count, by: 100) {
            let records = small[block..<min(small.count, block + 100)]
            for record in records {
                objectLogLatencies.append(
                    try measure {
                        BenchItem.insert(record, into: saver)
                        try saver.save()
                    }
                )
            }
            sqliteLatencies += peer.smallSaves(Array(records))
            raw += appendSync.latencies(count: records.count)
        }
        let after = container.coordinator.logStore!.statistics
        let flushesPerSave =
            Double(after.logSyncs - before.logSyncs) / Double(after.commits - before.commits)
        let rawP50 = percentile(raw, 0.5)
        let p50 = percentile(objectLogLatencies, 0.5)
        report.add(
            BenchmarkRow(
                workload: "5 small durable save p50 (ms)",
                objectlog: p50 * 1000,
                peer: percentile(sqliteLatencies, 0.5) * 1000,
                ratio: p50 / rawP50,
                unit: "ms",
                goal: "<= 1.5x raw fdatasync",
                met: p50 <= 1.5 * rawP50
            )
        )
        report.add(
            BenchmarkRow(
                workload: "5 small durable save p99 (ms)",
                objectlog: percentile(objectLogLatencies, 0.99) * 1000,
                peer: percentile(sqliteLatencies, 0.99) * 1000,
                ratio: percentile(objectLogLatencies, 0.99) / percentile(raw, 0.99),
                unit: "ms",
                goal: "vs raw p99 (info)",
                met: nil
            )
        )
        report.add(
            BenchmarkRow(
                workload: "5 raw 100-byte append+fdatasync p50/p99",
                objectlog: rawP50 * 1000,
                peer: percentile(raw, 0.99) * 1000,
                ratio: nil,
                unit: "ms",
                goal: "machine limit",
                met: nil
            )
        )
        report.add(
            BenchmarkRow(
                workload: "5 flushes per small save",
                objectlog: flushesPerSave,
                peer: nil,
                ratio: nil,
                unit: "fsyncs",
                goal: "exactly 1",
                met: flushesPerSave == 1
            )
        )

        // 11. Group commit (GroupCommitBenchmark.swift).
        try GroupCommitBenchmark(
            directory: directory,
            savesPerThread: max(5, min(250, scale / 4000))
        )
        .run(rounds: Self.rounds, into: report)

        // 7. Size after compaction and compaction throughput.
        let compactionSeconds = try measure { _ = try container.coordinator.logStore!.compact() }
        let storeBytes = fileSize(storePath)
        let sqliteBytes = peer.checkpointedSize()
        report.add(
            BenchmarkRow(
                workload: "7 size after compaction (MB)",
                objectlog: Double(storeBytes) / 1e6,
                peer: Double(sqliteBytes) / 1e6,
                ratio: Double(storeBytes) / Double(sqliteBytes),
                unit: "MB",
                goal: "<= 1.25x SQLite",
                met: Double(storeBytes) <= 1.25 * Double(sqliteBytes)
            )
        )
        let bandwidth = MachineLimits.sequentialWriteBandwidth(
            directory: directory,
            megabytes: max(64, Int(storeBytes >> 20) * 2)
        )
        let compactionRate = Double(storeBytes) / compactionSeconds
        report.add(
            BenchmarkRow(
                workload: "7 compaction throughput (MB/s)",
                objectlog: compactionRate / 1e6,
                peer: bandwidth / 1e6,
                ratio: compactionRate / bandwidth,
                unit: "MB/s",
                goal: "vs raw write (info)",
                met: nil
            )
        )
        try container.close()

        // 2, 6 and 8: cold work in child processes (medians of alternating runs).
        let (fetch, sqliteFetch) = try alternating(
            ["fetch-all", storePath],
            ["sqlite-fetch-all", sqlitePath],
            runs: Self.rounds
        )
        addTime(
            "2 cold open + fetch all, touch all",
            objectlog: fetch.seconds,
            sqlite: sqliteFetch.seconds,
            goal: 1,
            higherIsBetterRatio: true
        )
        // LMDB, a second peer for information (LMDBPeer.swift): workload 1's bulk insert, each
        // round into a new file, median of three, against ObjectLog's median above; workload
        // 2's cold fetch in child processes, median of three.
        var lmdbInserts: [Double] = []
        let lmdbPath = directory + "/bench.lmdb"
        for round in 0..<Self.rounds {
            if round > 0 { try removeFiles(startingWith: "bench.lmdb") }
            let lmdb = LMDBPeer(path: lmdbPath)
            lmdbInserts.append(measure { lmdb.bulkInsert(records) })
        }
        guard LMDBPeer(path: lmdbPath).fetchAll() == records else {
            throw BenchmarkFailure("LMDB does not give back the records it was given")
        }
        let lmdbInsert = percentile(lmdbInserts, 0.5)
        report.add(
            BenchmarkRow(
                workload: "1 bulk insert + durable save, LMDB (obj/s)",
                objectlog: Double(scale) / objectLogInsert,
                peer: Double(scale) / lmdbInsert,
                ratio: lmdbInsert / objectLogInsert,
                unit: "obj/s",
                goal: "vs LMDB (info)",
                met: nil,
                peerName: "LMDB"
            )
        )
        let lmdbFetch = try child(["lmdb-fetch-all", lmdbPath], runs: Self.rounds)
        report.add(
            BenchmarkRow(
                workload: "2 cold open + fetch all, LMDB (ms)",
                objectlog: fetch.seconds * 1000,
                peer: lmdbFetch.seconds * 1000,
                ratio: lmdbFetch.seconds / fetch.seconds,
                unit: "ms",
                goal: "vs LMDB speed (info)",
                met: nil,
                peerName: "LMDB"
            )
        )
        try removeFiles(startingWith: "bench.lmdb")

        // Opens take tens of milliseconds, so one run is at the mercy of the shared machine:
        // both sides take the median of five fresh processes.
        let (withIndex, sqliteCount) = try alternating(
            ["open-count", storePath, "index"],
            ["sqlite-count", sqlitePath],
            runs: 5
        )
        let rebuild = try child(["open-count", storePath, "rebuild"], runs: 5)
        report.add(
            BenchmarkRow(
                workload: "6 open with index + count (ms)",
                objectlog: withIndex.seconds * 1000,
                peer: sqliteCount.seconds * 1000,
                ratio: nil,
                unit: "ms",
                goal: scale >= 1_000_000 ? "<= 100 ms at 1M" : "<= 100 ms at 1M (info)",
                met: scale >= 1_000_000 ? withIndex.seconds <= 0.1 : nil
            )
        )
        let logRate = Double(fileSize(storePath)) / rebuild.seconds
        report.add(
            BenchmarkRow(
                workload: "6 open by log rebuild + count (GB/s)",
                objectlog: logRate / 1e9,
                peer: nil,
                ratio: nil,
                unit: "GB/s",
                goal: ">= 0.5 GB/s",
                met: logRate >= 0.5e9
            )
        )
        report.add(
            BenchmarkRow(
                workload: "8 peak RSS, workload 2 (MB)",
                objectlog: fetch.peakBytes / 1e6,
                peer: sqliteFetch.peakBytes / 1e6,
                ratio: fetch.peakBytes / sqliteFetch.peakBytes,
                unit: "MB",
                goal: "report",
                met: nil
            )
        )
        report.add(
            BenchmarkRow(
                workload: "8 peak RSS, workload 6 with index (MB)",
                objectlog: withIndex.peakBytes / 1e6,
                peer: sqliteCount.peakBytes / 1e6,
                ratio: withIndex.peakBytes / sqliteCount.peakBytes,
                unit: "MB",
                goal: "report",
                met: nil
            )
        )
        // Workload 2's walk through `fetch(_:batchSize:)`: what a large result costs in memory
        // when its objects are made a batch at a time.
        let batched = try child(["walk-batches", storePath], runs: Self.rounds)
        report.add(
            BenchmarkRow(
                workload: "8 peak RSS, workload 2 in batches of 1,000 (MB)",
                objectlog: batched.peakBytes / 1e6,
                peer: fetch.peakBytes / 1e6,
                ratio: batched.peakBytes / fetch.peakBytes,
                unit: "MB",
                goal: "vs fetch-all (report)",
                met: nil
            )
        )
        report.add(
            BenchmarkRow(
                workload: "2 the same walk in batches of 1,000 (ms)",
                objectlog: batched.seconds * 1000,
                peer: fetch.seconds * 1000,
                ratio: batched.seconds / fetch.seconds,
                unit: "ms",
                goal: "vs fetch-all (info)",
                met: nil
            )
        )
        // 9. Migration: an open that migrates (one attribute added) against a plain writable
        // open, both with the index and on fresh copies of the store; and a staged migration
        // that rewrites every object, against compaction's throughput.
        let (plainOpens, migratingOpens) = try alternatingChildren(
            "open-count-write",
            "migrate-open-count",
            rounds: 5
        )
        let plainOpen = percentile(plainOpens, 0.5)
        let migratingOpen = percentile(migratingOpens, 0.5)
        report.add(
            BenchmarkRow(
                workload: "9 open migrating (attribute added) + count (ms)",
                objectlog: migratingOpen * 1000,
                peer: plainOpen * 1000,
                ratio: migratingOpen / plainOpen,
                unit: "ms",
                goal: "<= 2x plain open",
                met: migratingOpen <= 2 * plainOpen
            )
        )
        // A migration that rewrites every object (the count becomes text), against compaction
        // of the same store measured the same way: a child process that opens a fresh copy,
        // does the work and closes it; rates in the store's bytes per second, medians of three
        // alternating rounds.
        let storeBytes9 = fileSize(storePath)
        let (compactions, rewrites) = try alternatingChildren(
            "open-compact",
            "rewrite-migrate",
            rounds: 3
        )
        let reopenedCompactionRate = Double(storeBytes9) / percentile(compactions, 0.5)
        let rewriteRate = Double(storeBytes9) / percentile(rewrites, 0.5)
        report.add(
            BenchmarkRow(
                workload: "9 migration rewriting all, rewrite stage (MB/s)",
                objectlog: rewriteRate / 1e6,
                peer: reopenedCompactionRate / 1e6,
                ratio: rewriteRate / reopenedCompactionRate,
                unit: "MB/s",
                goal: ">= 0.5x compaction",
                met: rewriteRate >= 0.5 * reopenedCompactionRate
            )
        )
        // The same change through a custom stage, which loads every object into a context:
        // the tool for changes across objects, reported.
        let staged = directory + "/staged.olog"
        try copyStore(to: staged)
        let stagedBytes = fileSize(staged)
        let stagedRun = try child(["staged-migrate", staged])
        try removeFiles(startingWith: "staged.")
        let stagedRate = Double(stagedBytes) / stagedRun.seconds
        report.add(
            BenchmarkRow(
                workload: "9 migration rewriting all, custom stage (MB/s)",
                objectlog: stagedRate / 1e6,
                peer: reopenedCompactionRate / 1e6,
                ratio: stagedRate / reopenedCompactionRate,
                unit: "MB/s",
                goal: "report",
                met: nil
            )
        )

        // 10. Batch requests: deleting and updating the tenth of the objects whose value is
        // below 100, in the store, against fetching the objects and changing them one by one in
        // a context; child processes on fresh copies (the open, a first query that builds the
        // attribute columns, and the close not timed), medians of five alternating rounds: a
        // side takes some 20 ms, where the host's noise moves single rounds by a fifth.
        for (batch, oneByOne, label) in [
            ("batch-delete", "fetch-delete", "delete"), ("batch-update", "fetch-update", "update"),
        ] {
            let (batchTimes, oneByOneTimes) = try alternatingChildren(
                batch,
                oneByOne,
                rounds: 5
            )
            let batchTime = percentile(batchTimes, 0.5)
            let oneByOneTime = percentile(oneByOneTimes, 0.5)
            report.add(
                BenchmarkRow(
                    workload: "10 batch \(label) of 10% by predicate (ms)",
                    objectlog: batchTime * 1000,
                    peer: oneByOneTime * 1000,
                    ratio: batchTime / oneByOneTime,
                    unit: "ms",
                    goal: "<= 0.2x one by one",
                    met: batchTime <= 0.2 * oneByOneTime
                )
            )
        }

        if let path = option("--json", in: arguments) { try report.writeJSON(to: path) }
        if let path = option("--svg", in: arguments) { try report.writeSVG(to: path) }
    }

    /// The times of the child workloads `first` and `second` (each given a fresh copy of the
    /// benchmark's store as its argument), run in turn for `rounds` rounds.
    ///
    /// Each copy is made just before its own child runs, so that both sides start alike (with
    /// both copies made first, the first side always ran straight after both copies' writes
    /// and flushes).
    private func alternatingChildren(
        _ first: String,
        _ second: String,
        rounds: Int
    ) throws -> (first: [Double], second: [Double]) {
        var times: (first: [Double], second: [Double]) = ([], [])
        for round in 0..<rounds {
            for (workload, name) in [(first, "first"), (second, "second")] {
                let copy = directory + "/\(name)\(round).olog"
                try copyStore(to: copy)
                let seconds = try child([workload, copy]).seconds
                if name == "first" {
                    times.first.append(seconds)
                } else {
                    times.second.append(seconds)
                }
                try removeFiles(startingWith: "\(name)\(round).")
            }
        }
        return times
    }

    /// Copies the benchmark's store (log and index) to `target`; ``child(_:)`` writes the
    /// copy back before the child that uses it runs.
    private func copyStore(to target: String) throws {
        let manager = FileManager.default
        for suffix in ["", "-index"] where manager.fileExists(atPath: storePath + suffix) {
            try manager.copyItem(atPath: storePath + suffix, toPath: target + suffix)
        }
    }

    /// Adds a throughput row: ratio = ObjectLog's rate / SQLite's rate.
    private func addThroughput(
        _ name: String,
        objectlog: Double,
        sqlite: Double,
        goal: Double,
        objects: Int? = nil
    ) {
        let ratio = sqlite / objectlog
        let count = Double(objects ?? scale)
        report.add(
            BenchmarkRow(
                workload: name + " (obj/s)",
                objectlog: count / objectlog,
                peer: count / sqlite,
                ratio: ratio,
                unit: "obj/s",
                goal: ">= \(goal)x SQLite",
                met: ratio >= goal
            )
        )
    }

    /// Adds a time row: by default ratio = ObjectLog's time / SQLite's time (goal: at most);
    /// with `higherIsBetterRatio`, ratio = SQLite's time / ObjectLog's (goal: at least).
    private func addTime(
        _ name: String,
        objectlog: Double,
        sqlite: Double,
        goal: Double,
        higherIsBetterRatio: Bool = false
    ) {
        let ratio = higherIsBetterRatio ? sqlite / objectlog : objectlog / sqlite
        report.add(
            BenchmarkRow(
                workload: name + " (ms)",
                objectlog: objectlog * 1000,
                peer: sqlite * 1000,
                ratio: ratio,
                unit: "ms",
                goal: higherIsBetterRatio ? ">= \(goal)x SQLite speed" : "<= \(goal)x SQLite time",
                met: higherIsBetterRatio ? ratio >= goal : ratio <= goal
            )
        )
    }

    private struct ChildResult {
        var seconds: Double
        var peakBytes: Double
    }

    /// How many rounds the workloads that take a median run (1, 2 and 4).
    static let rounds = 3

    /// Runs `runs` child processes of the same work: the median time and the largest peak.
    private func child(_ arguments: [String], runs: Int) throws -> ChildResult {
        var results: [ChildResult] = []
        for _ in 0..<runs { results.append(try child(arguments)) }
        return Self.summary(results)
    }

    /// Runs two children's work in turn, `runs` times each, so that both see the same
    /// changes in the shared machine's load: each side's median time and largest peak.
    private func alternating(
        _ first: [String],
        _ second: [String],
        runs: Int
    ) throws -> (ChildResult, ChildResult) {
        var firstResults: [ChildResult] = []
        var secondResults: [ChildResult] = []
        for _ in 0..<runs {
            firstResults.append(try child(first))
            secondResults.append(try child(second))
        }
        return (Self.summary(firstResults), Self.summary(secondResults))
    }

    private static func summary(_ results: [ChildResult]) -> ChildResult {
        let times = results.map(\.seconds).sorted()
        return ChildResult(
            seconds: times[times.count / 2],
            peakBytes: results.map(\.peakBytes).max() ?? 0
        )
    }

    /// Removes the files in the benchmark's directory whose names start with `prefix`.
    private func removeFiles(startingWith prefix: String) throws {
        for name in try FileManager.default.contentsOfDirectory(atPath: directory)
        where name.hasPrefix(prefix) {
            try FileManager.default.removeItem(atPath: directory + "/" + name)
        }
    }

    /// Runs this executable as `store --child ARGS`, which prints "seconds peakBytes".
    private func child(_ arguments: [String]) throws -> ChildResult {
        // Whatever the benchmark left for the file system to do (copies to write back,
        // removed files whose blocks a file system mounted with `discard` trims at its next
        // journal commit) is done first: otherwise the child's first fdatasync waits for it,
        // which added 4 to 10 ms to a 20 ms batch update right after the previous round's
        // copies were removed (ext4 with `discard` on a virtio disk).
        sync()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = ["store", "--child"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let fields = String(decoding: data, as: UTF8.self).split(separator: " ").compactMap {
            Double($0.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        guard process.terminationStatus == 0, fields.count == 2 else {
            throw BenchmarkFailure(
                "child \(arguments.joined(separator: " ")) failed: \(String(decoding: data, as: UTF8.self))"
            )
        }
        return ChildResult(seconds: fields[0], peakBytes: fields[1])
    }

    private func fileSize(_ path: String) -> UInt64 {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?
            .uint64Value ?? 0
    }
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The median of `runs` timings of `body`.
private func median(_ runs: Int, _ body: () throws -> Void) rethrows -> Double {
    var times: [Double] = []
    for _ in 0..<runs { times.append(try measure(body)) }
    return percentile(times, 0.5)
}

/// Workload 1: every record inserted through the object API, then one durable save.
private func insertAll(_ records: [BenchRecord], into container: PersistentContainer) throws {
    let context = container.newContext()
    for record in records { BenchItem.insert(record, into: context) }
    try context.save()
}

/// The benchmark's store at `path`, opened read-only with the benchmark's model.
private func openReadOnly(_ path: String) throws -> PersistentContainer {
    var options = StoreOptions()
    options.readOnly = true
    return try PersistentContainer(path: path, for: [BenchItem.self], options: options)
}

/// A child process's work: prints "seconds peakRSSBytes".
private func runChild(_ arguments: [String]) {
    do {
        var checksum = 0.0
        var seconds = 0.0
        switch (arguments.first, arguments.count) {
        case ("fetch-all", 2):
            seconds = try measure {
                let container = try openReadOnly(arguments[1])
                let context = container.newContext()
                for item in try context.fetch(FetchRequest<BenchItem>()) {
                    checksum +=
                        Double(item.number) + Double(item.name.utf8.count) + item.value
                        + Double(item.count)
                        + item.created.timeIntervalSince1970
                }
            }
        case ("walk-batches", 2):
            // Workload 2's walk through `fetch(_:batchSize:)`: the objects made and loaded
            // 1,000 at a time, each batch let go when the walk moves on.
            seconds = try measure {
                let container = try openReadOnly(arguments[1])
                let context = container.newContext()
                for item in try context.fetch(FetchRequest<BenchItem>(), batchSize: 1000) {
                    checksum +=
                        Double(item.number) + Double(item.name.utf8.count) + item.value
                        + Double(item.count)
                        + item.created.timeIntervalSince1970
                }
            }
        case ("open-count", 3):
            seconds = try measure {
                var options = StoreOptions()
                options.readOnly = true
                options.usesIndex = arguments[2] == "index"
                let container = try PersistentContainer(
                    path: arguments[1],
                    for: [BenchItem.self],
                    options: options
                )
                checksum = Double(try container.newContext().count(FetchRequest<BenchItem>()))
            }
        case ("open-count-write", 2), ("migrate-open-count", 2):
            // The open and the count only: the store is closed (writing its index, for the
            // migrated one) after the clock stops, on both sides.
            var opened: PersistentContainer?
            let migrates = arguments[0] == "migrate-open-count"
            seconds = try measure {
                if migrates {
                    let container = try PersistentContainer(
                        path: arguments[1],
                        for: [BenchItemWithLabel.self]
                    )
                    checksum = Double(
                        try container.newContext().count(FetchRequest<BenchItemWithLabel>())
                    )
                    opened = container
                } else {
                    let container = try PersistentContainer(
                        path: arguments[1],
                        for: [BenchItem.self]
                    )
                    checksum = Double(try container.newContext().count(FetchRequest<BenchItem>()))
                    opened = container
                }
            }
            try opened?.close()
        case ("open-compact", 2):
            // Workload 9's peer: open, compact and close, as a migration opens, rewrites and
            // closes.
            seconds = try measure {
                let container = try PersistentContainer(path: arguments[1], for: [BenchItem.self])
                try container.coordinator.logStore!.compact()
                try container.close()
            }
        case ("batch-delete", 2), ("batch-update", 2), ("fetch-delete", 2), ("fetch-update", 2):
            // Workload 10: a tenth of the objects (values are uniform in [0, 1000)).
            let container = try PersistentContainer(path: arguments[1], for: [BenchItem.self])
            let context = container.newContext()
            let tenth = #Predicate<BenchItem> { $0.value < 100 }
            // Unmeasured, on both sides: the first filter of a process builds the attribute
            // columns from the whole store, which an application does once, not per request.
            checksum = Double(try context.count(FetchRequest(predicate: tenth)))
            var changed = 0
            seconds = try measure {
                switch arguments[0] {
                case "batch-delete":
                    changed = try context.execute(BatchDeleteRequest(predicate: tenth)).deleted
                        .count
                case "batch-update":
                    changed =
                        try context.execute(
                            BatchUpdateRequest(predicate: tenth, updates: [.set(\.count, to: -1)])
                        ).updated.count
                case "fetch-delete":
                    let items = try context.fetch(FetchRequest(predicate: tenth))
                    for item in items { context.delete(item) }
                    try context.save()
                    changed = items.count
                default:
                    let items = try context.fetch(FetchRequest(predicate: tenth))
                    for item in items { item.count = -1 }
                    try context.save()
                    changed = items.count
                }
            }
            checksum += Double(changed)
            try container.close()
        case ("staged-migrate", 2), ("rewrite-migrate", 2):
            let plan = arguments[0] == "staged-migrate" ? textCountPlan : textCountRewritePlan
            seconds = try measure {
                let container = try PersistentContainer(path: arguments[1], plan: plan)
                try container.close()
            }
        case ("query", 2), ("query", 3):
            // Workload 3 alone, for profiling by hand (not part of the report); with a third
            // argument `default`, in the default string order instead of `.lexical`.
            if arguments.count == 3, arguments[2] != "default" {
                print("error: unknown query option '\(arguments[2])'")
                exit(64)
            }
            let container = try openReadOnly(arguments[1])
            let request = FetchRequest<BenchItem>(
                predicate: #Predicate { $0.value < 100 },
                // Lexical order: SQLite's `ORDER BY name` compares bytes (its default
                // BINARY collation).
                sortBy: [
                    arguments.count == 3
                        ? SortDescriptor(\.name) : SortDescriptor(\.name, comparator: .lexical)
                ],
                fetchLimit: 100
            )
            seconds = try measure {
                for _ in 0..<5 {
                    let names = try container.newContext().fetch(request).map(\.name)
                    checksum += Double(names.count)
                }
            }
        case ("indexed-query", 4), ("indexed-query", 5):
            // Workload 3i alone on a store it made (OBJECTLOG_BENCH_KEEP=1 store
            // --indexed-only keeps it), for profiling by hand: `indexed-query PATH BOUND
            // REPEATS` runs the first query after the open and REPEATS more, each in a new
            // context, all timed; with `first` after them, REPEATS first queries, each after an
            // open of its own, the queries alone timed.
            guard let bound = Double(arguments[2]), let repeats = Int(arguments[3]), repeats >= 0,
                arguments.count == 4 || arguments[4] == "first"
            else {
                print("error: indexed-query takes PATH BOUND REPEATS [first]")
                exit(64)
            }
            let request = FetchRequest<BenchIndexedItem>(
                predicate: #Predicate { $0.value < bound },
                sortBy: [SortDescriptor(\.name, comparator: .lexical)],
                fetchLimit: 100
            )
            if arguments.count == 5 {
                for _ in 0..<repeats {
                    let container = try PersistentContainer(
                        path: arguments[1],
                        for: [BenchIndexedItem.self]
                    )
                    seconds += try measure {
                        checksum += Double(try container.newContext().fetch(request).count)
                    }
                    try container.close()
                }
                break
            }
            let container = try PersistentContainer(
                path: arguments[1],
                for: [BenchIndexedItem.self]
            )
            seconds = try measure {
                for _ in 0...repeats {
                    checksum += Double(try container.newContext().fetch(request).count)
                }
            }
            try container.close()
        case ("text", 2):
            // Workload 3b alone, for profiling by hand (not part of the report): the text
            // match's count five times, after an unmeasured first one that reads the store.
            let container = try openReadOnly(arguments[1])
            let context = container.newContext()
            let search = FetchRequest<BenchItem>(textMatch: .contains(\.name, "Ab"))
            checksum = Double(try context.count(search))
            seconds = try measure {
                for _ in 0..<5 { checksum += Double(try context.count(search)) }
            }
        case ("crc", 2):
            // The two ways of CRC32 alone, for comparing by hand (not part of the report):
            // `crc folding` or `crc slicing` checks a million records of 30 to 74 bytes (the
            // benchmark's are about 51), laid end to end as in a log, five times over.
            guard arguments[1] == "folding" || arguments[1] == "slicing" else {
                print("error: unknown crc way '\(arguments[1])'; use folding or slicing")
                exit(64)
            }
            let tables =
                arguments[1] == "slicing" ? CRC32.lookupTables.slicingOnly : CRC32.lookupTables
            if arguments[1] == "folding", !CRC32.foldingIsAvailable {
                print("error: this processor cannot fold (no PCLMULQDQ)")
                exit(69)
            }
            var generator = SystemRandomNumberGenerator()
            let lengths = (0..<1_000_000).map { _ in Int.random(in: 30...74, using: &generator) }
            let bytes = (0..<lengths.reduce(0, +)).map { _ in
                UInt8.random(in: 0...255, using: &generator)
            }
            var crc: UInt32 = 0
            seconds = bytes.withUnsafeBytes { bytes in
                measure {
                    for _ in 0..<5 {
                        var start = 0
                        for length in lengths {
                            crc ^= CRC32.checksum(
                                UnsafeRawBufferPointer(rebasing: bytes[start..<(start + length)]),
                                tables: tables
                            )
                            start += length
                        }
                    }
                }
            }
            checksum = Double(crc)
        case ("update", 2), ("update", 3):
            // Workload 4 alone on an existing store, for profiling by hand (it writes); with a
            // third argument `columns`, after an unmeasured workload-3 query has built the
            // attribute columns that the updates then maintain, as in the full run.
            let container = try PersistentContainer(path: arguments[1], for: [BenchItem.self])
            if arguments.count == 3 {
                guard arguments[2] == "columns" else {
                    print("error: unknown update option '\(arguments[2])'")
                    exit(64)
                }
                _ = try container.newContext().fetch(
                    FetchRequest<BenchItem>(
                        predicate: #Predicate { $0.value < 100 },
                        sortBy: [SortDescriptor(\.name, comparator: .lexical)],
                        fetchLimit: 100
                    )
                )
            }
            let identifiers = try container.newContext().fetchIdentifiers(
                FetchRequest<BenchItem>()
            )
            seconds = try measure {
                let updater = container.newContext()
                for identifier in stride(from: 0, to: identifiers.count, by: 10).map({
                    identifiers[$0]
                }) {
                    let item = try updater.object(with: identifier, as: BenchItem.self)
                    item.value = Double(item.number % 1000)
                    item.count += 1
                }
                try updater.save()
            }
            try container.close()
        case ("insert", 3):
            // Workload 1 alone into a new store, for profiling by hand: `insert PATH COUNT`.
            let records = makeRecords(Int(arguments[2]) ?? 1_000_000)
            let container = try PersistentContainer(path: arguments[1], for: [BenchItem.self])
            seconds = try measure { try insertAll(records, into: container) }
            try container.close()
        case ("sqlite-fetch-all", 2):
            seconds = measure {
                let peer = SQLitePeer(path: arguments[1])
                for record in peer.fetchAll() {
                    checksum +=
                        Double(record.id) + Double(record.name.utf8.count) + record.value
                        + Double(record.count)
                        + record.created.timeIntervalSince1970
                }
            }
        case ("lmdb-fetch-all", 2):
            seconds = measure {
                let peer = LMDBPeer(path: arguments[1])
                for record in peer.fetchAll() {
                    checksum +=
                        Double(record.id) + Double(record.name.utf8.count) + record.value
                        + Double(record.count)
                        + record.created.timeIntervalSince1970
                }
            }
        case ("sqlite-count", 2):
            seconds = measure { checksum = Double(SQLitePeer(path: arguments[1]).count()) }
        case ("pg-fetch-all", 1):
            // The PostgreSQL peer's workload 2 on the server OBJECTLOG_TEST_POSTGRES_URL names.
            seconds = try measure { checksum = try postgresPeerFetchAllChild() }
        case ("pg-count", 1):
            // The PostgreSQL peer's workload 6, likewise.
            seconds = try measure { checksum = Double(try postgresPeerCountChild()) }
        case ("pg-store-fetch-all", 1):
            // ObjectLog's PostgreSQL store's workload 2 (PostgresStoreComparison.swift).
            seconds = try measure { checksum = try postgresStoreFetchAllChild() }
        case ("pg-store-count", 1):
            seconds = try measure { checksum = Double(try postgresStoreCountChild()) }
        case ("group-commit", 4):
            // Workload 11's ObjectLog side alone, into a new store at PATH: THREADS contexts
            // saving SAVES objects each.
            guard let threads = Int(arguments[2]), let saves = Int(arguments[3]), threads > 0,
                saves > 0
            else {
                print("error: group-commit takes PATH THREADS SAVES")
                exit(64)
            }
            let run = try GroupCommitBenchmark.objectLogSaves(
                path: arguments[1],
                threads: threads,
                savesPerThread: saves,
                records: makeRecords(threads * saves, seed: 11)
            )
            seconds = run.seconds
            checksum = Double(run.flushes)
        default:
            print("error: unknown child work \(arguments)")
            exit(64)
        }
        // The checksum keeps the work from being optimised away.
        if checksum.isNaN { print("nan") }
        print("\(seconds) \(MachineLimits.peakResidentBytes())")
    } catch {
        print("error: \(error)")
        exit(1)
    }
}
