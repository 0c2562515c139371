// objectlog-bench: ObjectLog against SQLite and the machine's limits, plus the solver's and the
// thumbnailer's benchmarks. `objectlog-bench solver` or `objectlog-bench thumbnails` runs just those.

let arguments = Array(CommandLine.arguments.dropFirst())
let group = arguments.first.flatMap { $0.hasPrefix("-") ? nil : $0 }
let rest = group == nil ? arguments : Array(arguments.dropFirst())

switch group {
case "solver":
    runSolverBenchmarks(arguments: rest)
case "thumbnails":
    runThumbnailBenchmarks(arguments: rest)
case "store":
    runStoreBenchmarks(arguments: rest)
case nil:
    runStoreBenchmarks(arguments: rest)
    runSolverBenchmarks(arguments: rest)
    runThumbnailBenchmarks(arguments: rest)
case let other?:
    print("error: unknown benchmark group '\(other)'; use solver, thumbnails or store")
}
