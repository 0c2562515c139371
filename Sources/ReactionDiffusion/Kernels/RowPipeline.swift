/// The loop over the vectors of one row that both steppers' two-chemical models use: a software
/// pipeline three vectors deep.
///
/// A vector's cells go through three stages: *prepare* (load the neighbourhoods and compute the
/// Laplacians), *finish* (the rest of the cell rule) and *store* (for ``Precision/unorm8``, the
/// narrowing to levels). Each pass of the loop prepares the vector three positions ahead,
/// finishes the next one and stores the current one, so the operations it issues depend on
/// results of earlier passes rather than on each other. Written as one vector after another,
/// every vector is a chain of about a dozen dependent operations (some 45 cycles from the first
/// load to the store), and the processor's out-of-order window fills with operations waiting
/// for their inputs; skewed like this, the same work is issued when its inputs are nearly ready.
/// The results are the same operations on the same values, only issued in another order.
///
/// A stage may start side work when it prepares a vector and complete it one pass later
/// (``RowStages/settle(_:_:)``): ``Precision/unorm8`` converts the levels of its ahead rows there
/// and stores them a pass later, when the conversion is done.
///
/// The row's vectors start at `start`, `start + lanes`, … and end with one at `last`, which may
/// overlap the one before it (harmless: a step reads only its source), so there is no scalar
/// tail. Every position is prepared, settled, finished and stored exactly once. Measured on this
/// machine's Zen 4 (see Benchmarks/README.md): `unorm8` 2.47 → 2.71 and `float32` 2.70 → 2.85
/// Gcell per CPU-second at 512 × 512, with bit-for-bit the same results.
///
/// The stages are the methods of a ``RowStages`` value rather than closures, which the optimiser
/// left as calls per vector.
enum RowPipeline {
    /// Runs the vectors at `start`, `start + lanes`, … and `last` through the three stages.
    ///
    /// Requires `last > start + lanes` (at least three vectors); narrower rows take a plain loop.
    @inline(__always)
    static func run<Stages: RowStages>(_ stages: Stages, start: Int, last: Int, lanes: Int) {
        var x = start
        let first = stages.prepare(x)
        stages.settle(first, x)
        var result = stages.finish(first)
        var next = stages.prepare(x &+ lanes)
        stages.settle(next, x &+ lanes)
        var afterNext = stages.prepare(min(x &+ 2 &* lanes, last))
        // Safe: `x + 3 * lanes` stays below `last + 3 * lanes`, far from overflow.
        while x &+ 3 &* lanes <= last {
            // `afterNext` was prepared in the previous pass (or above), at `x + 2 * lanes`.
            stages.settle(afterNext, x &+ 2 &* lanes)
            let later = stages.prepare(x &+ 3 &* lanes)
            let nextResult = stages.finish(next)
            stages.store(result, x)
            result = nextResult
            next = afterNext
            afterNext = later
            x &+= lanes
        }
        // Left: `x`, `x + lanes` and `afterNext` (at `x + 2 * lanes` or `last`), and `last` if
        // `afterNext` is not at `last` yet.
        let afterNextX = min(x &+ 2 &* lanes, last)
        stages.settle(afterNext, afterNextX)
        let nextResult = stages.finish(next)
        stages.store(result, x)
        let afterNextResult = stages.finish(afterNext)
        stages.store(nextResult, x &+ lanes)
        stages.store(afterNextResult, afterNextX)
        if afterNextX < last {
            let lastPrepared = stages.prepare(last)
            stages.settle(lastPrepared, last)
            stages.store(stages.finish(lastPrepared), last)
        }
    }
}

/// The three stages of the vectors of one row for ``RowPipeline``.
///
/// Conforming types implement every method `@inline(__always)`; they are the loop body.
protocol RowStages {
    /// What the first stage leaves for the second: the neighbourhoods of a vector.
    associatedtype Prepared
    /// What the second stage leaves for the third: the new values of a vector.
    associatedtype Result

    /// Loads the neighbourhoods of the lanes starting at column `x`.
    func prepare(_ x: Int) -> Prepared
    /// Finishes side work that `prepare(x)` started, one pass later: called once for every
    /// prepared vector, before it is finished.
    func settle(_ prepared: Prepared, _ x: Int)
    /// Applies the cell rule to prepared neighbourhoods.
    func finish(_ prepared: Prepared) -> Result
    /// Stores new values at the lanes starting at column `x`.
    func store(_ result: Result, _ x: Int)
}

extension RowStages {
    /// No side work.
    @inline(__always)
    func settle(_ prepared: Prepared, _ x: Int) {}
}
