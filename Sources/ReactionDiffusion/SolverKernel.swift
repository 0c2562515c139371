import CReactionDiffusionSupport

/// The instruction set a ``Simulation`` steps with, chosen at run time from the processor's
/// features.
///
/// Every kernel of the build's architecture is compiled into the binary (on x86-64: `avx512`,
/// `avx2`, `sse2` and `scalar`; on AArch64: `neon` and `scalar`), and ``best`` is the fastest
/// one this processor and operating system can run, so the same binary runs at full speed on a
/// laptop, a server or an older machine. All kernels compute every value by the same rule in the
/// same order and give the same bits; only their speed differs.
///
/// ```swift
/// print(SolverKernel.best)            // "avx2" on a processor with AVX2 but not AVX-512
/// simulation.kernel = .scalar         // the lane-by-lane reference, for comparison
/// ```
public struct SolverKernel: Hashable, Sendable, CustomStringConvertible {
    /// The identifier of the C kernel (`RD_KERNEL_…`).
    let identifier: Int32

    private init(identifier: Int32) {
        self.identifier = identifier
    }

    /// The kernel named `name` (`"avx2"`, `"sse2"`, …), if this processor can run it.
    public init?(name: String) {
        guard let kernel = Self.available.first(where: { $0.name == name }) else { return nil }
        self = kernel
    }

    /// The kernel's short name: `avx512`, `avx2`, `sse2`, `neon` or `scalar`.
    public var name: String {
        String(cString: rd_kernel_name(identifier))
    }

    public var description: String { name }

    /// The kernels this processor and operating system can run, fastest first; the last is
    /// ``scalar``.
    public static var available: [SolverKernel] {
        // Only one architecture's kernels are ever available, and among them the identifiers grow
        // with the width of the vectors: the reverse order is fastest first.
        (0..<Int32(RD_KERNEL_COUNT)).reversed()
            .filter { rd_kernel_is_available($0) != 0 }
            .map(SolverKernel.init(identifier:))
    }

    /// The fastest kernel available here: the default of every ``Simulation``.
    public static var best: SolverKernel {
        SolverKernel(identifier: rd_kernel_best())
    }

    /// The lane-by-lane kernel, which every processor runs.
    public static let scalar = SolverKernel(identifier: Int32(RD_KERNEL_SCALAR))
}
