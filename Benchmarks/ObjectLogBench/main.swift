// objectlog-bench: ObjectLog against SQLite and the machine's limits, plus the solver's and the
// thumbnailer's benchmarks.
//
//   objectlog-bench [--scale N] [--json PATH] [--svg PATH]   everything; N objects (default 1,000,000)
//   objectlog-bench store [--scale N] [--json PATH] [--svg PATH]
//   objectlog-bench store --scales N,M,… [--json PATH] [--svg PATH]   each size in turn
//   objectlog-bench store --postgres-peer [--scale N]        the PostgreSQL peer beside SQLite's
//   objectlog-bench store --store postgresql [--scale N]     ObjectLog's PostgreSQL store beside it
//   objectlog-bench store --store postgresql --delete-rules [--scale N]   a batch delete by its rules
//   objectlog-bench store --indexed-only [--scale N]         workload 3i alone: declared indexes
//   objectlog-bench solver [--scale S] [--samples N] [--size N]
//   objectlog-bench thumbnails [--runs N] [--quick]
//   objectlog-bench live [--scale N]                          live queries while saves run
//   objectlog-bench history [--scale N] [--rounds R]          what persistent history costs
//
// Without a group, `--scale N` sizes the store workloads, and a smaller N also shortens the
// solver's (scale N / 1,000,000) and thumbnailer's (--quick) runs, so CI's `--scale 10000` smoke
// run stays quick.

#if canImport(Glibc)
import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())

// Asking for help prints the usage; it must not start an hour of benchmarks.
if arguments.first != "--child", arguments.dropFirst().first != "--child",
    arguments.contains(where: { $0 == "--help" || $0 == "-h" })
{
    print(
        """
        usage: objectlog-bench [--scale N] [--json PATH] [--svg PATH]   everything
               objectlog-bench store [--scale N] [--json PATH] [--svg PATH]
               objectlog-bench store --scales N,M,... [--json PATH] [--svg PATH]
               objectlog-bench store --postgres-peer [--scale N]
               objectlog-bench store --store postgresql [--scale N]
               objectlog-bench store --store postgresql --delete-rules [--scale N]
               objectlog-bench store --indexed-only [--scale N]
               objectlog-bench solver [--scale S] [--samples N] [--size N]
               objectlog-bench thumbnails [--runs N] [--quick]
               objectlog-bench live [--scale N]
               objectlog-bench history [--scale N] [--rounds R]
        --scale N sets the number of objects of the store workloads (default 1,000,000);
        --scales N,M,... runs them at each size in turn and charts each ratio against the size.
        --postgres-peer runs the PostgreSQL peer beside the SQLite peer, on the server
        OBJECTLOG_TEST_POSTGRES_URL names or a throwaway one (tools/postgres-test-server).
        --store postgresql runs ObjectLog's PostgreSQL store beside that peer, on the same server;
        with --delete-rules, a batch delete that cascades and nullifies (N / 10 racks) instead.
        --indexed-only runs workload 3i alone: workload 3 with an index on value in both engines.
        """
    )
    exit(0)
}
let group = arguments.first.flatMap { $0.hasPrefix("-") ? nil : $0 }
let rest = group == nil ? arguments : Array(arguments.dropFirst())

switch group {
case "solver":
    runSolverBenchmarks(arguments: rest)
case "thumbnails":
    runThumbnailBenchmarks(arguments: rest)
case "store":
    runStoreBenchmarks(arguments: rest)
case "live":
    runLiveQueryBenchmark(arguments: rest)
case "history":
    runHistoryBenchmark(arguments: rest)
case nil:
    runStoreBenchmarks(arguments: rest)
    let objects = option("--scale", in: rest).flatMap(Double.init) ?? 1_000_000
    if objects < 1_000_000 {
        runSolverBenchmarks(arguments: ["--scale", String(max(objects / 1_000_000, 0.01))])
        runThumbnailBenchmarks(arguments: ["--quick"])
    } else {
        runSolverBenchmarks(arguments: [])
        runThumbnailBenchmarks(arguments: [])
    }
case let other?:
    print(
        "error: unknown benchmark group '\(other)'; use store, live, history, solver or "
            + "thumbnails"
    )
    exit(64)
}
