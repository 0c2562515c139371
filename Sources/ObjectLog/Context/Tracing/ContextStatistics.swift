/// How often a context took its parallel and bulk paths, as its ``ContextTracer`` counted them.
///
/// Tests read it to check which path ran.
struct ContextStatistics {
    /// How many saves were encoded on two threads.
    var parallelEncodings = 0
    /// How many bulk fault loads decoded on two threads.
    var parallelDecodings = 0
    /// How many fetches made their faults on two threads.
    var parallelFaultBatches = 0
    /// How many bulk fault loads ran, on one thread or two.
    var bulkFaultLoads = 0
    /// How many batches of a fetch with a `fetchBatchSize` loaded together.
    var batchFaultLoads = 0
    /// How many text-match counts ran on two threads or more.
    var parallelTextCounts = 0
    /// How many batch updates rewrote their records on two threads or more.
    var parallelBatchUpdates = 0
    /// How many column scans listed and located their objects on two threads or more.
    var parallelPlans = 0
    /// How many fetches and counts read only the records the attribute columns let through,
    /// not every record of the entity.
    var columnScans = 0
    /// How many fetches and counts read only the records a declared index let through.
    var declaredIndexScans = 0
    /// Scans that read only the records their store selected.
    var storeQueries = 0
    /// Batch requests their store ran as its own statements.
    var storeBatches = 0

    /// Counts `event`.
    mutating func record(_ event: ContextEvent) {
        switch event {
        case .parallelEncoding: parallelEncodings += 1
        case .parallelDecoding: parallelDecodings += 1
        case .parallelFaultBatch: parallelFaultBatches += 1
        case .bulkFaultLoad: bulkFaultLoads += 1
        case .batchFaultLoad: batchFaultLoads += 1
        case .parallelTextCount: parallelTextCounts += 1
        case .parallelBatchUpdate: parallelBatchUpdates += 1
        case .parallelPlan: parallelPlans += 1
        case .columnScan: columnScans += 1
        case .declaredIndexScan: declaredIndexScans += 1
        case .storeQuery: storeQueries += 1
        case .storeBatch: storeBatches += 1
        case .beforeBatchUpdateCommit: break
        }
    }
}
