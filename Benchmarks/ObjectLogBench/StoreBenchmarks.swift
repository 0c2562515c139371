func runStoreBenchmarks(arguments: [String]) {
}
