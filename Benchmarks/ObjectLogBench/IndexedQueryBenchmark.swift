import Foundation
import ObjectLog

/// The benchmark's entity with a declared index on `value`: workload 3 with indexes.
final class BenchIndexedItem: ManagedObject {
    @Attribute var number = 0
    @Attribute var name = ""
    @Attribute(.indexed) var value = 0.0
    @Attribute var count = 0
    @Attribute var created = Date()
    override class var entityName: String { "BenchItem" }
}

/// Workload 3 with an index on `value` in both engines: ObjectLog's declared index
/// (`@Attribute(.indexed)`), SQLite's `CREATE INDEX` made before the clock starts.
///
/// Each engine's store is written, closed (ObjectLog writes its index file then) and opened
/// again, untimed, once per query; the first query after that open is timed on its own row,
/// since it is the one a declared index exists for (without one, ObjectLog's first query reads
/// every object to build its attribute columns), then the median of three more, each in a new
/// context. Two queries: workload 3's (`value < 100`, a tenth of the objects) and a narrow one
/// (`value < 1`, a thousandth). The last row compares the sizes with the indexes: ObjectLog's
/// compacted log, index checkpoint and declared index file against SQLite's checkpointed
/// database.
func runIndexedQueryWorkload(
    records: [BenchRecord],
    directory: String,
    report: BenchmarkReport
) throws {
    let storePath = directory + "/indexed.olog"
    let sqlitePath = directory + "/indexed.sqlite"
    let writer = try PersistentContainer(path: storePath, for: [BenchIndexedItem.self])
    let writing = writer.newContext()
    for record in records {
        let item = BenchIndexedItem(context: writing)
        item.number = Int(record.id)
        item.name = record.name
        item.value = record.value
        item.count = Int(record.count)
        item.created = record.created
    }
    try writing.save()
    try writer.compact()
    try writer.close()
    do {
        let peer = SQLitePeer(path: sqlitePath)
        peer.createSchema()
        peer.bulkInsert(records)
        peer.execute("CREATE INDEX item_value ON item(value)")
        peer.execute("ANALYZE")
    }

    // Workload 3's range (a tenth of the objects, where ObjectLog's attribute columns serve:
    // see `ContextTuning.declaredIndexShare`) and a narrow one (a thousandth, where the
    // declared index does), each on stores opened anew.
    for (label, bound) in [("value<100", 100.0), ("value<1", 1.0)] {
        let request = FetchRequest<BenchIndexedItem>(
            predicate: #Predicate { $0.value < bound },
            sortBy: [SortDescriptor(\.name, comparator: .lexical)],
            fetchLimit: 100
        )
        let container = try PersistentContainer(path: storePath, for: [BenchIndexedItem.self])
        defer { try? container.close() }
        let peer = SQLitePeer(path: sqlitePath)
        var objectLogNames: [String] = []
        var sqliteNames: [String] = []
        let objectLogFirst = try measure {
            objectLogNames = try container.newContext().fetch(request).map(\.name)
        }
        let sqliteFirst = measure {
            sqliteNames = peer.predicateSortLimit(below: bound).map(\.name)
        }
        guard objectLogNames == sqliteNames, !sqliteNames.isEmpty else {
            throw BenchmarkFailure("the indexed query returned different rows from the two engines")
        }
        let objectLogQuery = try medianOfThree {
            objectLogNames = try container.newContext().fetch(request).map(\.name)
        }
        let sqliteQuery = medianOfThree {
            sqliteNames = peer.predicateSortLimit(below: bound).map(\.name)
        }
        guard objectLogNames == sqliteNames else {
            throw BenchmarkFailure("the indexed query returned different rows from the two engines")
        }
        let rows: [(String, Double, Double)] = [
            ("3i \(label) indexed, first query after open", objectLogFirst, sqliteFirst),
            ("3i \(label) indexed, median of three after", objectLogQuery, sqliteQuery),
        ]
        for (name, objectLog, sqlite) in rows {
            report.add(
                BenchmarkRow(
                    workload: name + " (ms)",
                    objectlog: objectLog * 1000,
                    peer: sqlite * 1000,
                    ratio: objectLog / sqlite,
                    unit: "ms",
                    goal: "<= 1.0x SQLite time",
                    met: objectLog <= sqlite
                )
            )
        }
    }
    let peer = SQLitePeer(path: sqlitePath)
    func size(_ path: String) -> Double {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        return Double((attributes?[.size] as? NSNumber)?.uint64Value ?? 0)
    }
    let objectLogSize = ["", "-index", "-indexes"].reduce(0) { $0 + size(storePath + $1) }
    let sqliteSize = Double(peer.checkpointedSize())
    report.add(
        BenchmarkRow(
            workload: "3i size with the index on value (MB)",
            objectlog: objectLogSize / 1e6,
            peer: sqliteSize / 1e6,
            ratio: objectLogSize / sqliteSize,
            unit: "MB",
            goal: "vs SQLite with its index (info)",
            met: nil
        )
    )
}

/// The median time of three runs of `body`, in seconds.
private func medianOfThree(_ body: () throws -> Void) rethrows -> Double {
    var times: [Double] = []
    for _ in 0..<3 { times.append(try measure(body)) }
    return times.sorted()[1]
}

/// Workload 3i alone (`objectlog-bench store --indexed-only [--scale N]`): the records made as
/// for the whole run, in a directory of its own, removed afterwards.
func runIndexedQueryBenchmark(scale: Int) throws {
    let directory =
        FileManager.default.temporaryDirectory.path + "/objectlog-bench-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    // OBJECTLOG_BENCH_KEEP=1 keeps the stores, for `store --child indexed-query`.
    let keep = ProcessInfo.processInfo.environment["OBJECTLOG_BENCH_KEEP"] == "1"
    defer { if !keep { try? FileManager.default.removeItem(atPath: directory) } }
    print("objects: \(scale), directory: \(directory)")
    let report = BenchmarkReport(title: "ObjectLog vs SQLite, workload 3 with indexes")
    report.header()
    try runIndexedQueryWorkload(records: makeRecords(scale), directory: directory, report: report)
}
