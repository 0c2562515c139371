// The solver's benchmark: Gray-Scott cell updates per second at 512 × 512, for every kernel this
// processor can run (avx512, avx2, sse2, scalar on x86-64; neon, scalar on AArch64), each against
// the straightforward C step compiled for the same instructions (-O3, denormals flushed), in the
// same run. Goals, on 1 thread and on all cores, every row computed: each vector kernel's
// float32 ≥ 0.8× the C peer of its instruction set; unorm8 (by the current rule, which rdlab
// runs) ≥ 1× float32 on the same kernel (≥ 0.8× on the SSE2 baseline); unorm8 by rule 1, which
// states saved before rule 2 continue with, is measured on one thread without a goal. The
// "skipping" rows show the solver's default, which leaves
// rows alone whose neighbourhood did not change (exact, and most effective in unorm8).
//
// Single-threaded rows also show the rate per CPU-second of the stepping thread: on a machine
// shared with other work the wall clock counts, at random, time the thread spent waiting for a
// core, and ratios of wall-clock rates then vary by ±30% from run to run.
//
//     objectlog-bench solver [--scale S] [--samples N] [--size N]
//
// `--scale` multiplies the number of steps per sample (default 1: 200 steps at 512 × 512), so
// CI's smoke run can pass `--scale 0.05`; `--size` changes the grid (the goals are set at 512).

import CSolverPeer
import Foundation
import ReactionDiffusion

func runSolverBenchmarks(arguments: [String]) {
    var scale = 1.0
    var samples = 5
    var side = 512
    var index = 0
    while index < arguments.count {
        let argument = arguments[index]
        let value = index + 1 < arguments.count ? arguments[index + 1] : nil
        switch argument {
        case "--scale":
            guard let text = value, let parsed = Double(text), parsed > 0, parsed.isFinite else {
                print("error: --scale needs a positive number")
                return
            }
            scale = parsed
            index += 2
        case "--samples":
            guard let text = value, let parsed = Int(text), parsed > 0 else {
                print("error: --samples needs a positive integer")
                return
            }
            samples = parsed
            index += 2
        case "--size":
            guard let text = value, let parsed = Int(text), parsed >= 16, parsed <= 8_192 else {
                print("error: --size needs an integer from 16 to 8192")
                return
            }
            side = parsed
            index += 2
        default:
            index += 1
        }
    }
    SolverBenchmark(side: side, scale: scale, samples: samples).run()
}

private struct SolverBenchmark {
    let width: Int
    let height: Int
    let steps: Int
    let samples: Int
    let cores = ProcessInfo.processInfo.activeProcessorCount
    let parameters = Model.grayScott.defaultParameters
    let seed: Field

    init(side: Int, scale: Double, samples: Int) {
        width = side
        height = side
        // About 5 × 10⁷ cell updates per sample at scale 1 (200 steps at 512 × 512).
        steps = max(2, Int((200 * scale * 512 * 512 / Double(side * side)).rounded()))
        self.samples = samples
        // Start from a developed pattern (500 steps at scale 1), so the timed steps see typical
        // values (and denormals where the pattern meets the empty background).
        let warm = Simulation(
            model: .grayScott,
            parameters: Model.grayScott.defaultParameters,
            precision: .float32,
            field: InitialState.make(for: .grayScott, width: width, height: height, seed: 1),
            threadCount: ProcessInfo.processInfo.activeProcessorCount
        )
        warm.step(count: max(25, Int(500 * scale)))
        seed = warm.field
    }

    /// The best and median cell updates per second of each body, which steps `steps` times, by
    /// the wall clock, and the best by the calling thread's CPU time.
    ///
    /// Samples are taken round-robin (one of each body, then the next round), so load from other
    /// processes on a shared machine weighs on every configuration alike. For a single-threaded
    /// body the CPU-time rate leaves out the time other processes held the core, which the
    /// wall-clock rates of a loaded machine include at random.
    func measure(_ bodies: [() -> Void]) -> [Rate] {
        var wallRates = Array(repeating: [Double](), count: bodies.count)
        var cpuRates = Array(repeating: [Double](), count: bodies.count)
        for body in bodies {
            body()  // warm-up
        }
        let cells = Double(width * height * steps)
        for _ in 0..<samples {
            for (index, body) in bodies.enumerated() {
                let cpuStart = threadCPUSeconds()
                let start = ContinuousClock.now
                body()
                let elapsed = ContinuousClock.now - start
                let cpuSeconds = threadCPUSeconds() - cpuStart
                let seconds =
                    Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds)
                    * 1e-18
                wallRates[index].append(cells / seconds)
                cpuRates[index].append(cells / cpuSeconds)
            }
        }
        return zip(wallRates, cpuRates).map { wall, cpu in
            let sorted = wall.sorted()
            return Rate(best: sorted.last!, median: sorted[sorted.count / 2], cpuBest: cpu.max()!)
        }
    }

    /// The CPU time the calling thread has used, in seconds.
    func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
    }

    /// Steps the solver on `kernel`.
    ///
    /// With `skipping` off (the kernel comparisons) every row is computed, as the C peer does.
    /// A unorm8 state steps by `rule`, the current rule (what rdlab runs) unless given.
    func solverBody(
        kernel: SolverKernel,
        precision: Precision,
        threads: Int,
        skipping: Bool = false,
        rule: Unorm8Rule = .current
    ) -> () -> Void {
        let simulation = Simulation(
            model: .grayScott,
            parameters: parameters,
            precision: precision,
            unorm8Rule: rule,
            field: seed,
            threadCount: threads
        )
        simulation.kernel = kernel
        simulation.skipsUnchangedRows = skipping
        return { simulation.step(count: steps) }
    }

    func cBody(level: Int32, threads: Int) -> () -> Void {
        let buffers = PeerBuffers(seed: seed)
        let p = parameters
        return {
            csp_gray_scott_run(
                level,
                buffers.u,
                buffers.v,
                buffers.nextU,
                buffers.nextV,
                Int32(width),
                Int32(height),
                Int32(steps),
                Int32(threads),
                p.f,
                p.k,
                p.du,
                p.dv
            )
        }
    }

    /// The C peer's build for the instruction set of `kernel`: the baseline for the portable
    /// kernels.
    func peerLevel(for kernel: SolverKernel) -> Int32 {
        switch kernel.name {
        case "avx512": Int32(CSP_LEVEL_AVX512)
        case "avx2": Int32(CSP_LEVEL_AVX2)
        default: Int32(CSP_LEVEL_BASELINE)
        }
    }

    /// The largest difference between the solver and the C peer after `steps` float32
    /// steps from the same state: a check that both compute the same thing (the C compiler may
    /// fuse multiply-adds, so they need not agree to the last bit).
    func agreement() -> Float {
        let simulation = Simulation(
            model: .grayScott,
            parameters: parameters,
            precision: .float32,
            field: seed
        )
        simulation.step(count: steps)
        var u = Array(seed.plane(0))
        var v = Array(seed.plane(1))
        var nextU = [Float](repeating: 0, count: width * height)
        var nextV = nextU
        let p = parameters
        csp_gray_scott_run(
            peerLevel(for: .best),
            &u,
            &v,
            &nextU,
            &nextV,
            Int32(width),
            Int32(height),
            Int32(steps),
            1,
            p.f,
            p.k,
            p.du,
            p.dv
        )
        let peer = steps % 2 == 0 ? u + v : nextU + nextV
        return zip(simulation.field.values, peer).map { abs($0 - $1) }.max() ?? .nan
    }

    func run() {
        #if DEBUG
        print(
            "warning: objectlog-bench is a debug build; run `swift run -c release objectlog-bench`"
        )
        #endif
        let kernels = SolverKernel.available
        print(
            "Solver: Gray-Scott \(width) × \(height), \(steps) steps per sample, best of \(samples), "
                + "\(cores) cores"
        )
        print("  CPU: \(MachineDescription.cpuModel)")
        print("  CPU features: \(MachineDescription.vectorFeatures)")
        print(
            "  kernel: \(SolverKernel.best) (runs here: "
                + kernels.map(\.name).joined(separator: ", ") + ")"
        )
        let threadCounts = cores >= 2 ? [1, cores] : [1]
        // The peers of the instruction sets of this processor's kernels, each once.
        var peerLevels: [Int32] = []
        for kernel in kernels where !peerLevels.contains(peerLevel(for: kernel)) {
            peerLevels.append(peerLevel(for: kernel))
        }

        struct Body {
            let name: String
            let run: () -> Void
        }
        var bodies: [Body] = []
        for level in peerLevels {
            for threads in threadCounts {
                bodies.append(
                    Body(
                        name: "C peer \(peerName(level)) float32, \(threadsText(threads))",
                        run: cBody(level: level, threads: threads)
                    )
                )
            }
        }
        for kernel in kernels {
            for precision in [Precision.float32, .unorm8] {
                for threads in threadCounts {
                    bodies.append(
                        Body(
                            name: "\(kernel) \(precision.rawValue), \(threadsText(threads))",
                            run: solverBody(kernel: kernel, precision: precision, threads: threads)
                        )
                    )
                }
            }
            // The rule that states saved before rule 2 continue with, on one thread: no goal.
            bodies.append(
                Body(
                    name: "\(kernel) unorm8 rule 1, 1 thread",
                    run: solverBody(
                        kernel: kernel,
                        precision: .unorm8,
                        threads: 1,
                        rule: .floatingPoint
                    )
                )
            )
        }
        for precision in [Precision.float32, .unorm8] {
            bodies.append(
                Body(
                    name:
                        "\(SolverKernel.best) \(precision.rawValue), \(threadsText(cores)), skipping",
                    run: solverBody(
                        kernel: .best,
                        precision: precision,
                        threads: cores,
                        skipping: true
                    )
                )
            )
        }
        let measured = measure(bodies.map(\.run))
        var rates: [String: Rate] = [:]
        for (body, rate) in zip(bodies, measured) {
            rates[body.name] = rate
        }

        print(
            "  \("".padding(toLength: 40, withPad: " ", startingAt: 0))  Mcell/s   median  per CPU-s"
        )
        for (body, rate) in zip(bodies, measured) {
            let best = String(format: "%8.1f", rate.best / 1e6)
            let median = String(format: "%8.1f", rate.median / 1e6)
            let cpu =
                body.name.hasSuffix(", 1 thread")
                ? String(format: "%9.1f", rate.cpuBest / 1e6) : "        –"
            print(
                "  \(body.name.padding(toLength: 40, withPad: " ", startingAt: 0)) \(best) \(median) \(cpu)"
            )
        }

        var missed = 0
        /// Prints a goal's line and returns 1 if it was missed.
        func goal(_ name: String, _ ratio: Double, atLeast target: Double) -> Int {
            let verdict = ratio >= target ? "met" : "NOT met"
            let text = String(format: "%.2f× (goal ≥ %.2f×)", ratio, target)
            print(
                "  \(name.padding(toLength: 52, withPad: " ", startingAt: 0)) \(text)  \(verdict)"
            )
            return ratio >= target ? 0 : 1
        }
        func info(_ name: String, _ ratio: Double) {
            let text = String(format: "%.2f×", ratio)
            print("  \(name.padding(toLength: 52, withPad: " ", startingAt: 0)) \(text)  (no goal)")
        }
        print(
            "Ratios of best rates by the wall clock; \"CPU\": per CPU-second of the stepping thread"
        )
        for kernel in kernels {
            let peer = peerName(peerLevel(for: kernel))
            // The scalar kernel is the portable fallback and the reference: measured, no goal.
            let hasGoals = kernel != .scalar
            let unorm8Goal = kernel.name == "sse2" ? 0.8 : 1.0
            for threads in threadCounts {
                let t = threadsText(threads)
                guard let float32 = rates["\(kernel) float32, \(t)"],
                    let unorm8 = rates["\(kernel) unorm8, \(t)"],
                    let c = rates["C peer \(peer) float32, \(t)"]
                else { continue }
                let vsPeer = "\(kernel) float32 / C peer \(peer), \(t)"
                let vsFloat = "\(kernel) unorm8 / float32, every row, \(t)"
                if hasGoals {
                    missed += goal(vsPeer, float32.best / c.best, atLeast: 0.8)
                    missed += goal(vsFloat, unorm8.best / float32.best, atLeast: unorm8Goal)
                    if threads == 1 {
                        info(vsPeer + ", CPU", float32.cpuBest / c.cpuBest)
                        info(vsFloat + ", CPU", unorm8.cpuBest / float32.cpuBest)
                    }
                } else {
                    info(vsPeer, float32.best / c.best)
                    info(vsFloat, unorm8.best / float32.best)
                }
            }
            if let float32 = rates["\(kernel) float32, 1 thread"],
                let ruleOne = rates["\(kernel) unorm8 rule 1, 1 thread"]
            {
                info(
                    "\(kernel) unorm8 rule 1 / float32, every row, 1 thread",
                    ruleOne.best / float32.best
                )
            }
        }
        let best = SolverKernel.best
        if cores >= 2, let one = rates["\(best) float32, 1 thread"],
            let all = rates["\(best) float32, \(threadsText(cores))"]
        {
            info("\(best) float32, \(cores) threads / 1 thread", all.best / one.best)
        }
        if let skippingFloat = rates["\(best) float32, \(threadsText(cores)), skipping"],
            let skippingUnorm = rates["\(best) unorm8, \(threadsText(cores)), skipping"]
        {
            info(
                "\(best) unorm8 / float32, row skipping (default)",
                skippingUnorm.best / skippingFloat.best
            )
        }
        print(
            String(
                format: "  largest |solver − C| after %d float32 steps: %.3g",
                steps,
                agreement()
            )
        )
        print(missed == 0 ? "Every solver goal met." : "Solver goals not met: \(missed).")
    }

    func threadsText(_ threads: Int) -> String {
        threads == 1 ? "1 thread" : "\(threads) threads"
    }

    func peerName(_ level: Int32) -> String {
        switch level {
        case Int32(CSP_LEVEL_AVX512): "avx512"
        case Int32(CSP_LEVEL_AVX2): "avx2"
        default: "baseline"
        }
    }
}

/// A body's cell updates per second: the best and median by the wall clock, and the best per
/// second of the calling thread's CPU time.
private struct Rate {
    let best: Double
    let median: Double
    let cpuBest: Double
}

/// The C peer's four planes, allocated once and freed with the benchmark.
private final class PeerBuffers {
    let u: UnsafeMutablePointer<Float>
    let v: UnsafeMutablePointer<Float>
    let nextU: UnsafeMutablePointer<Float>
    let nextV: UnsafeMutablePointer<Float>
    private let count: Int

    init(seed: Field) {
        count = seed.cellCount
        u = .allocate(capacity: count)
        v = .allocate(capacity: count)
        nextU = .allocate(capacity: count)
        nextV = .allocate(capacity: count)
        u.initialize(from: Array(seed.plane(0)), count: count)
        v.initialize(from: Array(seed.plane(1)), count: count)
        nextU.initialize(repeating: 0, count: count)
        nextV.initialize(repeating: 0, count: count)
    }

    deinit {
        for buffer in [u, v, nextU, nextV] {
            buffer.deallocate()
        }
    }
}
