/// When a context spreads large saves, fetches and fault loads over two threads.
///
/// The defaults keep parallel work to operations large enough that it pays for handing work
/// to other threads; tests and benchmarks lower them to exercise those paths on small data.
/// Not API: a context's `tuning` is package-internal.
///
/// The registry's release on two threads has its threshold on the table itself
/// (`ObjectTable.parallelReleaseThreshold`): the table releases its objects when it goes
/// away, where no context is at hand.
struct ContextTuning {
    /// The least number of changed objects a save encodes on two threads (see
    /// `encodePutsInParallel`).
    var parallelEncodingThreshold = 65_536
    /// The least number of objects for which a fetch makes its faults, and a bulk fault load
    /// decodes, on two threads (see `makeFaultsInParallel` and `loadAllFaultsInParallel`).
    var parallelDecodingThreshold = 65_536
    /// The least number of objects a batch update rewrites on two threads (see
    /// `BatchUpdateSplice`).
    var parallelBatchThreshold = 16_384
    /// The least number of objects found through the attribute columns for which a fetch or a
    /// batch request lists and locates them on two threads (see `keysInParallel`).
    var parallelPlanThreshold = 32_768
    /// About how many objects each part of parallel work gets.
    var parallelPartSize = 16_384
    /// A declared index serves a fetch only when it lets through at most one saved object of
    /// the entity in this many (see `candidatePlan`).
    ///
    /// Reading the objects an index lets through goes from key to key across the log, at
    /// several times the cost per object of the one sequential pass that builds the attribute
    /// columns, and the columns then decide later fetches without reading a record; the
    /// benchmark's range of a tenth of a million objects (workload 3) reads faster that way.
    var declaredIndexShare = 16

    /// Into how many parts parallel work on `count` objects is cut: 2 to 16.
    ///
    /// More parts than threads: `concurrentPerform` hands the next part to whichever thread
    /// is free, so a thread slowed by another process (on a shared machine) does fewer parts
    /// instead of holding the others up, as it would with two fixed halves.
    func parts(for count: Int) -> Int {
        min(16, max(2, count / max(parallelPartSize, 1)))
    }
}
