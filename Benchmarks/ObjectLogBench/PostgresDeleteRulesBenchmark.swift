import Foundation
import ObjectLog
import ObjectLogPostgreSQL

/// A rack of the delete-rules workload: its bottles go with it (cascade), its tasters lose it
/// (many-to-many, nullify).
final class RuleRack: ManagedObject {
    @Attribute var number = 0
    @Attribute var slot = 0
    @Relationship(inverse: \RuleBottle.rack, deleteRule: .cascade) var bottles: [RuleBottle]
    @Relationship(inverse: \RuleTaster.racks, deleteRule: .nullify) var tasters: Set<RuleTaster>
}

final class RuleBottle: ManagedObject {
    @Attribute var number = 0
    @Relationship var rack: RuleRack?
}

final class RuleTaster: ManagedObject {
    @Attribute var number = 0
    @Relationship var racks: Set<RuleRack>
}

/// `objectlog-bench store --store postgresql --delete-rules [--scale N]`: a batch delete that
/// follows delete rules, on ObjectLog's PostgreSQL store and as a careful libpq user writes it.
///
/// N / 10 racks in ten slots, two bottles a rack, and a taster for every ten racks who holds
/// those ten; the delete takes the racks of one slot, a tenth, with their bottles. The store
/// runs its rules in SQL (`PostgresStore+BatchDelete.swift`), also giving each taster that
/// stays its new version and reporting it as updated. The peer, in tables of the same shape
/// with indexed foreign keys, deletes the bottles and then the racks in one transaction, the
/// join rows going with them (`ON DELETE CASCADE`). Three rounds, each side on a fresh database,
/// the sides alternating; every count checked.
func runPostgresDeleteRulesBenchmark(scale: Int) {
    withPostgresServer { url, _ in
        let racks = max(scale / 10, 10) / 10 * 10
        print(
            "racks: \(racks), bottles: \(2 * racks), tasters: \(racks / 10); CPU: "
                + "\(MachineDescription.cpuModel), "
                + "\(ProcessInfo.processInfo.activeProcessorCount) processors"
        )
        let admin = try PostgresConnection(url: url)
        defer { admin.close() }
        try admin.execute("SET client_min_messages = warning")
        func fresh(_ name: String) throws -> String {
            try admin.execute("DROP DATABASE IF EXISTS \(name)")
            try admin.execute("CREATE DATABASE \(name)")
            return url + (url.contains("?") ? "&" : "?") + "dbname=" + name
        }
        defer {
            for name in ["objectlog_bench_rules_store", "objectlog_bench_rules_peer"] {
                _ = try? admin.execute("DROP DATABASE IF EXISTS \(name)")
            }
        }
        var storeTimes: [Double] = []
        var peerTimes: [Double] = []
        for _ in 0..<3 {
            storeTimes.append(
                try storeDelete(url: fresh("objectlog_bench_rules_store"), racks: racks)
            )
            peerTimes.append(try peerDelete(url: fresh("objectlog_bench_rules_peer"), racks: racks))
        }
        let store = percentile(storeTimes, 0.5) * 1000
        let peer = percentile(peerTimes, 0.5) * 1000
        print(
            "\nbatch delete of a tenth of the racks, with their bottles (medians; counts checked)"
        )
        print(pad("ObjectLog", 14) + pad("libpq peer", 14) + pad("ratio", 9) + "unit")
        print(
            pad(number(store), 14) + pad(number(peer), 14)
                + pad(String(format: "%.2f", store / peer), 9) + "ms"
        )
    }
}

/// The store's side of one round: the objects saved, then the batch delete timed.
private func storeDelete(url: String, racks count: Int) throws -> Double {
    let container = try PersistentContainer(
        url: url,
        for: [RuleRack.self, RuleBottle.self, RuleTaster.self]
    )
    defer { try? container.close() }
    let context = container.newContext()
    var racks: [RuleRack] = []
    racks.reserveCapacity(count)
    for index in 0..<count {
        let rack = RuleRack(context: context)
        rack.number = index
        rack.slot = index % 10
        racks.append(rack)
        for side in 0..<2 {
            let bottle = RuleBottle(context: context)
            bottle.number = 2 * index + side
            bottle.rack = rack
        }
    }
    for index in 0..<(count / 10) {
        let taster = RuleTaster(context: context)
        taster.number = index
        taster.racks = Set(racks[(10 * index)..<(10 * index + 10)])
    }
    try context.save()
    // The state the peer's tables are timed in: hint bits set and statistics taken.
    let vacuum = try PostgresConnection(url: url)
    try vacuum.execute("VACUUM (ANALYZE)")
    vacuum.close()
    let worker = container.newContext()
    var changes = ObjectChanges()
    let seconds = try measure {
        changes = try worker.execute(
            BatchDeleteRequest<RuleRack>(predicate: #Predicate { $0.slot == 3 })
        )
    }
    // A tenth of the racks and their bottles; every taster held one of them.
    guard changes.deleted.count == 3 * count / 10, changes.updated.count == count / 10 else {
        throw BenchmarkFailure(
            "the store's delete deleted \(changes.deleted.count) and updated "
                + "\(changes.updated.count) objects, not \(3 * count / 10) and \(count / 10)"
        )
    }
    return seconds
}

/// The peer's side of one round: the tables filled by the server, then the deletes timed.
private func peerDelete(url: String, racks count: Int) throws -> Double {
    let connection = try PostgresConnection(url: url)
    defer { connection.close() }
    for statement in [
        "CREATE TABLE rack (id bigint PRIMARY KEY, slot integer NOT NULL)",
        "CREATE TABLE bottle (id bigint PRIMARY KEY, rack bigint REFERENCES rack (id))",
        "CREATE INDEX ON bottle (rack)",
        "CREATE TABLE taster (id bigint PRIMARY KEY)",
        "CREATE TABLE taster_racks (taster bigint NOT NULL REFERENCES taster (id) ON DELETE "
            + "CASCADE, rack bigint NOT NULL REFERENCES rack (id) ON DELETE CASCADE, PRIMARY KEY "
            + "(taster, rack))",
        "CREATE INDEX ON taster_racks (rack)",
        "INSERT INTO rack SELECT i, i % 10 FROM generate_series(0, \(count - 1)) i",
        "INSERT INTO bottle SELECT i, i / 2 FROM generate_series(0, \(2 * count - 1)) i",
        "INSERT INTO taster SELECT i FROM generate_series(0, \(count / 10 - 1)) i",
        "INSERT INTO taster_racks SELECT i / 10, i FROM generate_series(0, \(count - 1)) i",
        "VACUUM (ANALYZE)",
    ] {
        try connection.execute(statement)
    }
    var deleted = 0
    let seconds = try measure {
        try connection.execute("BEGIN")
        deleted += try connection.execute(
            "DELETE FROM bottle WHERE rack IN (SELECT id FROM rack WHERE slot = $1::integer)",
            ["3"]
        ).affectedRows
        deleted += try connection.execute(
            "DELETE FROM rack WHERE slot = $1::integer",
            ["3"]
        ).affectedRows
        try connection.execute("COMMIT")
    }
    guard deleted == 3 * count / 10 else {
        throw BenchmarkFailure("the peer deleted \(deleted) rows, not \(3 * count / 10)")
    }
    return seconds
}
