/// What a context tells its ``ContextTracer``: a path it took, or a moment a test may act at.
enum ContextEvent: Sendable, Hashable {
    /// A save encoded its objects on two threads or more.
    case parallelEncoding
    /// A bulk fault load decoded on two threads or more.
    case parallelDecoding
    /// A fetch made its faults on two threads or more.
    case parallelFaultBatch
    /// A bulk fault load ran, on one thread or more.
    case bulkFaultLoad
    /// A batch of a fetch with a `fetchBatchSize` loaded together.
    case batchFaultLoad
    /// A text-match count ran on two threads or more.
    case parallelTextCount
    /// A batch update rewrote its records on two threads or more.
    case parallelBatchUpdate
    /// A column scan listed and located its objects on two threads or more.
    case parallelPlan
    /// A fetch, count or aggregate read only the records the attribute columns let through.
    case columnScan
    /// A fetch or count read only the records a declared index let through.
    case declaredIndexScan
    /// A fetch, count or aggregate read only the records its store selected for it (a
    /// database store's `SELECT`).
    case storeQuery
    /// A batch request ran in its store as the store's own statements.
    case storeBatch
    /// A batch update has read its objects and is about to commit their new records.
    case beforeBatchUpdateCommit
}
