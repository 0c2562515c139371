import Foundation
import ObjectLog
import ObjectLogStore
import Synchronization

/// Workload 11: durable saves of one small object each, from one thread and from eight
/// threads into one store, on both engines.
///
/// Each ObjectLog thread saves through a context of its own on one container; each SQLite
/// thread through a connection of its own on one database (WAL, `synchronous=FULL`), with a
/// busy timeout, as SQLite lets only one connection write at a time. Every save is an
/// autocommit of one row or a `save()` of one inserted object, durable before it returns.
struct GroupCommitBenchmark {
    /// The threads of the concurrent side.
    static let threads = 8

    let directory: String
    /// Saves per thread, on both sides.
    let savesPerThread: Int

    /// The rates of one round, in saves per second.
    struct Rates {
        var objectLogOne: Double
        var objectLogMany: Double
        var sqliteOne: Double
        var sqliteMany: Double
        /// `fdatasync` calls per save of ObjectLog's concurrent side.
        var flushesPerSave: Double
    }

    /// Runs `rounds` rounds and adds the medians to `report`: each engine's rate on one
    /// thread and on eight, the ratio of the two, and ObjectLog's flushes per save.
    func run(rounds: Int, into report: BenchmarkReport) throws {
        var groupRounds: [Rates] = []
        for round in 0..<rounds { groupRounds.append(try self.round(round)) }
        func groupMedian(_ rate: (Rates) -> Double) -> Double {
            percentile(groupRounds.map(rate), 0.5)
        }
        let threads = Self.threads
        let objectLogOne = groupMedian(\.objectLogOne)
        let objectLogMany = groupMedian(\.objectLogMany)
        let sqliteOne = groupMedian(\.sqliteOne)
        let sqliteMany = groupMedian(\.sqliteMany)
        report.add(
            BenchmarkRow(
                workload: "11 group commit, 1 thread (saves/s)",
                objectlog: objectLogOne,
                peer: sqliteOne,
                ratio: objectLogOne / sqliteOne,
                unit: "saves/s",
                goal: "vs SQLite (info)",
                met: nil
            )
        )
        report.add(
            BenchmarkRow(
                workload: "11 group commit, \(threads) threads (saves/s)",
                objectlog: objectLogMany,
                peer: sqliteMany,
                ratio: objectLogMany / sqliteMany,
                unit: "saves/s",
                goal: "vs SQLite (info)",
                met: nil
            )
        )
        let scaling = groupMedian { $0.objectLogMany / $0.objectLogOne }
        report.add(
            BenchmarkRow(
                workload: "11 group commit, \(threads) threads / 1 thread",
                objectlog: scaling,
                peer: groupMedian { $0.sqliteMany / $0.sqliteOne },
                ratio: scaling,
                unit: "x",
                goal: ">= 4x one thread's rate",
                met: scaling >= 4
            )
        )
        report.add(
            BenchmarkRow(
                workload: "11 group commit, flushes per save",
                objectlog: groupMedian(\.flushesPerSave),
                peer: nil,
                ratio: nil,
                unit: "fsyncs",
                goal: "< 1 (info)",
                met: nil
            )
        )
    }

    /// One round: ObjectLog's one thread, SQLite's one thread, ObjectLog's eight threads and
    /// SQLite's eight, in turn, each into new files.
    func round(_ number: Int) throws -> Rates {
        let records = makeRecords(savesPerThread * Self.threads, seed: 11)
        let one = try objectLogRate(threads: 1, records: records, name: "gc\(number)-one")
        let sqliteOne = sqliteRate(threads: 1, records: records, name: "gc\(number)-one")
        let many = try objectLogRate(
            threads: Self.threads,
            records: records,
            name: "gc\(number)-many"
        )
        let sqliteMany = sqliteRate(
            threads: Self.threads,
            records: records,
            name: "gc\(number)-many"
        )
        return Rates(
            objectLogOne: one.rate,
            objectLogMany: many.rate,
            sqliteOne: sqliteOne,
            sqliteMany: sqliteMany,
            flushesPerSave: many.flushesPerSave
        )
    }

    /// ObjectLog: `threads` contexts on one container, each saving `savesPerThread` objects
    /// one at a time.
    private func objectLogRate(
        threads: Int,
        records: [BenchRecord],
        name: String
    ) throws -> (rate: Double, flushesPerSave: Double) {
        let run = try Self.objectLogSaves(
            path: directory + "/\(name).olog",
            threads: threads,
            savesPerThread: savesPerThread,
            records: records
        )
        try removeFiles(startingWith: name)
        let saves = Double(threads * savesPerThread)
        return (saves / run.seconds, Double(run.flushes) / saves)
    }

    /// Makes a store at `path` and saves `savesPerThread` of `records` one at a time from
    /// each of `threads` contexts.
    ///
    /// `objectlog-bench store --child group-commit PATH THREADS SAVES` runs it alone, for
    /// profiling.
    ///
    /// - Returns: The seconds from the first save to the last, and the flushes they took.
    static func objectLogSaves(
        path: String,
        threads: Int,
        savesPerThread: Int,
        records: [BenchRecord]
    ) throws -> (seconds: Double, flushes: UInt64) {
        let container = try PersistentContainer(path: path, for: [BenchItem.self])
        let store = container.coordinator.logStore!
        let before = store.statistics
        let failures = Mutex<[String]>([])
        let seconds = onThreads(threads) { thread in
            let context = container.newContext()
            for index in 0..<savesPerThread {
                BenchItem.insert(records[thread * savesPerThread + index], into: context)
                do {
                    try context.save()
                } catch {
                    failures.withLock { $0.append("\(error)") }
                    return
                }
            }
        }
        let after = store.statistics
        if let failure = failures.withLock({ $0.first }) {
            throw BenchmarkFailure("a group-commit save failed: \(failure)")
        }
        let saves = threads * savesPerThread
        let count = try container.newContext().count(FetchRequest<BenchItem>())
        guard count == saves, after.commits - before.commits == UInt64(saves) else {
            throw BenchmarkFailure("\(count) objects after \(saves) group-commit saves")
        }
        try container.close()
        return (seconds, after.logSyncs - before.logSyncs)
    }

    /// SQLite: `threads` connections to one database, each inserting `savesPerThread` rows in
    /// autocommit statements.
    private func sqliteRate(threads: Int, records: [BenchRecord], name: String) -> Double {
        let path = directory + "/\(name).sqlite"
        let setup = SQLitePeer(path: path)
        setup.createSchema()
        // Each connection is made, and waits up to a minute for the write lock, before the
        // clock starts.
        let peers = (0..<threads).map { _ in
            let peer = SQLitePeer(path: path)
            peer.execute("PRAGMA busy_timeout=60000")
            return peer
        }
        nonisolated(unsafe) let connections = peers
        let perThread = savesPerThread
        let seconds = Self.onThreads(threads) { thread in
            let slice = records[(thread * perThread)..<((thread + 1) * perThread)]
            _ = connections[thread].smallSaves(Array(slice))
        }
        let saves = threads * perThread
        precondition(setup.count() == saves, "SQLite lost group-commit saves")
        try? removeFiles(startingWith: name)
        return Double(saves) / seconds
    }

    /// Runs `body` on `count` threads of their own, started together; the seconds from the
    /// start to the last one's end.
    ///
    /// Threads, not a dispatch queue: `concurrentPerform` runs no more work items at once than
    /// the machine has processors, and the point is more savers than processors.
    private static func onThreads(
        _ count: Int,
        _ body: @escaping @Sendable (Int) -> Void
    ) -> Double {
        let ready = DispatchGroup()
        let done = DispatchGroup()
        let start = DispatchSemaphore(value: 0)
        for thread in 0..<count {
            ready.enter()
            done.enter()
            let worker = Thread {
                ready.leave()
                start.wait()
                body(thread)
                done.leave()
            }
            worker.start()
        }
        ready.wait()
        return measure {
            for _ in 0..<count { start.signal() }
            done.wait()
        }
    }

    private func removeFiles(startingWith prefix: String) throws {
        for file in try FileManager.default.contentsOfDirectory(atPath: directory)
        where file.hasPrefix(prefix) {
            try FileManager.default.removeItem(atPath: directory + "/" + file)
        }
    }
}

/// `objectlog-bench store --group-commit [--saves N] [--rounds R] [--json PATH] [--svg PATH]`:
/// workload 11 alone, N saves per thread (250 by default).
func runGroupCommitBenchmark(arguments: [String]) {
    let saves = option("--saves", in: arguments).flatMap(Int.init) ?? 250
    let rounds = option("--rounds", in: arguments).flatMap(Int.init) ?? 3
    guard saves > 0, rounds > 0 else {
        print("error: --saves and --rounds must be positive")
        exit(64)
    }
    let directory =
        FileManager.default.temporaryDirectory.path + "/objectlog-bench-" + UUID().uuidString
    let report = BenchmarkReport(title: "ObjectLog vs SQLite: group commit")
    do {
        try FileManager.default.createDirectory(
            atPath: directory,
            withIntermediateDirectories: true
        )
        defer { try? FileManager.default.removeItem(atPath: directory) }
        print("saves per thread: \(saves), rounds: \(rounds), directory: \(directory)")
        report.header()
        try GroupCommitBenchmark(directory: directory, savesPerThread: saves)
            .run(rounds: rounds, into: report)
        if let path = option("--json", in: arguments) { try report.writeJSON(to: path) }
        if let path = option("--svg", in: arguments) { try report.writeSVG(to: path) }
    } catch {
        print("error: \(error)")
        exit(1)
    }
}
