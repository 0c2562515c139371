import ReactionDiffusion
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Kernels are chosen at run time from the processor's features")
struct SolverKernelTests {
    /// The vector features /proc/cpuinfo lists for the first processor, if it can be read.
    static var cpuFlags: Set<Substring>? {
        guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else {
            return nil
        }
        for line in text.split(separator: "\n")
        where line.hasPrefix("flags") || line.hasPrefix("Features") {
            return Set(line.split(separator: ":", maxSplits: 1).last!.split(separator: " "))
        }
        return nil
    }

    @Test("the best kernel runs here, comes first, and the scalar one is always there, last")
    func availability() {
        let available = SolverKernel.available
        #expect(available.first == SolverKernel.best)
        #expect(available.last == .scalar)
        #expect(Set(available.map(\.name)).count == available.count)
        #expect(
            Simulation(
                model: .grayScott,
                parameters: Model.grayScott.defaultParameters,
                field: InitialState.make(for: .grayScott, width: 8, height: 8, seed: 1)
            ).kernel == .best
        )
    }

    @Test("kernels are found by name, and only those this processor runs")
    func names() {
        for kernel in SolverKernel.available {
            #expect(SolverKernel(name: kernel.name) == kernel)
            #expect(kernel.description == kernel.name)
        }
        #expect(SolverKernel(name: "quantum") == nil)
    }

    @Test("the kernels offered match the features the operating system reports")
    func matchesReportedFeatures() throws {
        let names = SolverKernel.available.map(\.name)
        #if arch(x86_64)
        let flags = try #require(Self.cpuFlags)
        #expect(names.contains("sse2"))
        #expect(names.contains("avx2") == (flags.contains("avx2") && flags.contains("fma")))
        #expect(
            names.contains("avx512")
                == (flags.contains("avx512f") && flags.contains("avx512bw")
                    && flags.contains("avx512vl"))
        )
        #elseif arch(arm64)
        #expect(names.contains("neon"))
        #endif
    }
}
