func runSolverBenchmarks(arguments: [String]) {
}
