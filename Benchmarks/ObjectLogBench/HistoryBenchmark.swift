import Foundation
import ObjectLog

// `objectlog-bench history [--scale N] [--rounds R]`: what persistent history costs.
//
// The log is the history, so a save writes nothing for it but, when its context names an
// author or itself, a note in the padding before its commit: the bulk insert and the 10%
// update are timed with and without one, rounds in turn. A retention that keeps history
// moves its cost to compaction, which copies the history of the transactions it folds into
// the history file: compaction is timed with the default retention and with `.all`. Reading
// the history of 1,000 small transactions is timed from the log and, after a compaction that
// kept it, from the history file.

func runHistoryBenchmark(arguments: [String]) {
    let scale = option("--scale", in: arguments).flatMap(Int.init) ?? 1_000_000
    let rounds = option("--rounds", in: arguments).flatMap(Int.init) ?? 3
    print(
        "objects: \(scale), rounds: \(rounds), CPU: \(MachineDescription.cpuModel), "
            + "\(ProcessInfo.processInfo.activeProcessorCount) processors"
    )
    do {
        try HistoryBenchmark(scale: scale, rounds: rounds).run()
    } catch {
        print("error: \(error)")
        exit(1)
    }
}

private struct HistoryBenchmark {
    let scale: Int
    let rounds: Int
    let records: [BenchRecord]

    init(scale: Int, rounds: Int) {
        self.scale = scale
        self.rounds = rounds
        records = makeRecords(scale)
    }

    /// Medians by row: (without, with).
    func run() throws {
        var insert: ([Double], [Double]) = ([], [])
        var update: ([Double], [Double]) = ([], [])
        var compaction: ([Double], [Double]) = ([], [])
        var historyBytes = 0
        for _ in 0..<rounds {
            for noted in [false, true] {
                let directory = FileManager.default.temporaryDirectory
                    .appendingPathComponent("objectlog-history-bench-\(UUID().uuidString)")
                try FileManager.default.createDirectory(
                    at: directory,
                    withIntermediateDirectories: true
                )
                defer { try? FileManager.default.removeItem(at: directory) }
                let path = directory.appendingPathComponent("bench.olog").path
                let container = try PersistentContainer(path: path, for: [BenchItem.self])
                if noted { try container.setHistoryRetention(.all) }
                let context = container.newContext()
                if noted {
                    context.name = "importer"
                    context.author = "bench"
                }
                let inserting = measure {
                    for record in records { BenchItem.insert(record, into: context) }
                    try? context.save()
                }
                // Every tenth object, by identity, in one save.
                let items = try context.fetch(FetchRequest<BenchItem>())
                let updating = try measure {
                    for item in items where item.number % 10 == 0 {
                        item.value = Double(item.number % 1000)
                        item.count += 1
                    }
                    try context.save()
                }
                let compacting = try measure { _ = try container.compact() }
                if noted {
                    let history = path + "-history"
                    historyBytes =
                        (try FileManager.default.attributesOfItem(atPath: history)[.size]
                            as? Int) ?? 0
                    insert.1.append(inserting)
                    update.1.append(updating)
                    compaction.1.append(compacting)
                } else {
                    insert.0.append(inserting)
                    update.0.append(updating)
                    compaction.0.append(compacting)
                }
                try container.close()
            }
        }
        let (read, readKept) = try readTransactions()
        print("\nPersistent history's costs (medians, milliseconds)")
        print(pad("workload", 52) + pad("without", 12) + pad("with", 12) + "ratio")
        print(String(repeating: "-", count: 84))
        func row(_ name: String, _ values: ([Double], [Double]), _ goal: String = "") {
            let (without, with) = (median(values.0) * 1000, median(values.1) * 1000)
            print(
                pad(name, 52) + pad(number(without), 12) + pad(number(with), 12)
                    + String(format: "%.2f", with / without) + goal
            )
        }
        row("1 bulk insert (with: an author and context name)", insert, "  (goal <= 1.10)")
        row("4 update 10% by identity (likewise)", update, "  (goal <= 1.10)")
        row("compaction after them (with: retention .all)", compaction)
        print("history file kept by that compaction: \(historyBytes / 1024) KiB")
        print(pad("history of 1,000 transactions, from the log", 52) + number(read * 1000))
        print(pad("the same, from the history file", 52) + number(readKept * 1000))
    }

    /// Reads the history of 1,000 saves of one object each, in a store of `scale` objects:
    /// from the log, then after a compaction that kept it (medians of `rounds`).
    private func readTransactions() throws -> (Double, Double) {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("objectlog-history-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("bench.olog").path
        var options = StoreOptions()
        // The saves' durability is not what is measured.
        options.durable = false
        let container = try PersistentContainer(path: path, for: [BenchItem.self], options: options)
        defer { try? container.close() }
        try container.setHistoryRetention(.all)
        let context = container.newContext()
        for record in records { BenchItem.insert(record, into: context) }
        try context.save()
        let start = try context.currentHistoryToken
        let items = try context.fetch(
            FetchRequest<BenchItem>(sortBy: [SortDescriptor(\.number)], fetchLimit: 1000)
        )
        for item in items {
            item.value += 1
            try context.save()
        }
        func read() throws -> Double {
            var times: [Double] = []
            for _ in 0..<rounds {
                var count = 0
                times.append(try measure { count = try context.history(after: start).count })
                guard count == items.count else {
                    throw BenchmarkFailure("read \(count) transactions, not \(items.count)")
                }
            }
            return median(times)
        }
        let fromLog = try read()
        _ = try container.compact()
        return (fromLog, try read())
    }

    private func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }
}
