import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A reusable barrier for a fixed number of threads that spins briefly, then yields.
///
/// A step of each thread's band of rows is short, so waking sleeping threads (as
/// `concurrentPerform` or a condition variable would: a system call and a trip through the
/// scheduler each) costs as much as the step itself (Benchmarks/README.md, "Threads").
final class SpinBarrier: Sendable {
    private let parties: Int
    private let arrived = Atomic<Int>(0)
    private let phase = Atomic<Int>(0)

    /// Creates a barrier that `parties` threads pass together.
    init(parties: Int) {
        self.parties = parties
    }

    /// Waits until all parties have called this method for the current phase.
    ///
    /// Everything a thread wrote before arriving is visible to every thread after it leaves.
    func arriveAndWait() {
        let current = phase.load(ordering: .acquiring)
        if arrived.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue == parties {
            arrived.store(0, ordering: .relaxed)
            phase.wrappingAdd(1, ordering: .releasing)
            return
        }
        var spins = 0
        while phase.load(ordering: .acquiring) == current {
            spins += 1
            if spins >= 4_000 {
                // More threads than free cores: let the late ones run.
                sched_yield()
            }
        }
    }
}

/// Runs `body(band)` for every band in `0..<bands` at once, band 0 on the calling thread and the
/// others on new threads, and returns when all have finished.
///
/// - Precondition: the system can create `bands - 1` threads.
func runConcurrently(bands: Int, _ body: @escaping @Sendable (Int) -> Void) {
    guard bands > 1 else {
        body(0)
        return
    }
    var threads: [pthread_t] = []
    for band in 1..<bands {
        let context = Unmanaged.passRetained(BandContext(band: band, body: body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread,
            nil,
            { raw in
                let context = Unmanaged<BandContext>.fromOpaque(raw!).takeRetainedValue()
                context.body(context.band)
                return nil
            },
            context
        )
        precondition(result == 0, "cannot create a solver thread (error \(result))")
        threads.append(thread)
    }
    body(0)
    for thread in threads {
        pthread_join(thread, nil)
    }
}

/// What a band's thread runs, passed through `pthread_create`'s context pointer.
private final class BandContext: Sendable {
    let band: Int
    let body: @Sendable (Int) -> Void

    init(band: Int, body: @escaping @Sendable (Int) -> Void) {
        self.band = band
        self.body = body
    }
}
