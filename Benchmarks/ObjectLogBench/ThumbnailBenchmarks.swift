func runThumbnailBenchmarks(arguments: [String]) {
}
