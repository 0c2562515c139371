/// Receives a context's events: which of its parallel and bulk paths it took, and the moments
/// a test may act at.
///
/// Tests and benchmarks install one (`context.tracer = ContextTracer()`) to check which path
/// ran, or to act between a batch update's read and its commit as another context could. A
/// context without one pays a nil check per event and nothing else; the concepts that emit
/// events know nothing of what is done with them. Not API: a context's `tracer` is
/// package-internal.
final class ContextTracer {
    /// The events counted so far.
    private(set) var statistics = ContextStatistics()
    /// Run at ``ContextEvent/beforeBatchUpdateCommit``: tests save there, as another context
    /// could.
    var beforeBatchUpdateCommit: (() -> Void)?

    init(beforeBatchUpdateCommit: (() -> Void)? = nil) {
        self.beforeBatchUpdateCommit = beforeBatchUpdateCommit
    }

    /// Counts `event`, and runs what a test asked to run at it.
    func record(_ event: ContextEvent) {
        statistics.record(event)
        if event == .beforeBatchUpdateCommit { beforeBatchUpdateCommit?() }
    }
}

extension ManagedObjectContext {
    /// Tells the context's tracer, if it has one, of `event`.
    @inline(__always)
    func trace(_ event: ContextEvent) {
        tracer?.record(event)
    }

    /// The events the context's tracer counted.
    ///
    /// Reading it without a tracer installed is a programming error: every count would read
    /// zero, whichever paths ran.
    var statistics: ContextStatistics {
        guard let tracer else {
            preconditionFailure("install a ContextTracer before reading a context's statistics")
        }
        return tracer.statistics
    }
}
