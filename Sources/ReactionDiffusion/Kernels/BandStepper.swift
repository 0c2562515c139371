import CReactionDiffusionSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What a thread of a step needs from the stepper of the state's storage: ``Float32Stepper`` for
/// ``Precision/float32``, ``Unorm8Stepper`` for ``Precision/unorm8``.
protocol BandStepper {
    /// The type of one stored value.
    associatedtype Element
    /// The buffer the step reads.
    var source: PlaneSet<Element> { get }
    /// The buffer the step writes.
    var target: PlaneSet<Element> { get }

    /// Computes `rows` of the target from the source.
    mutating func step(rows: Range<Int>)
}

extension BandStepper {
    /// Whether row `y` of any chemical differs, bit for bit, between the target and the source.
    func rowDiffers(_ y: Int, chemicalCount: Int) -> Bool {
        let byteCount = source.width * MemoryLayout<Element>.stride
        for chemical in 0..<chemicalCount {
            if memcmp(target.row(chemical, y), source.row(chemical, y), byteCount) != 0 {
                return true
            }
        }
        return false
    }
}

extension rd_parameters {
    /// The C kernels' copy of `p`.
    init(_ p: Parameters) {
        self.init(
            a0: p.a0,
            a1: p.a1,
            epsilon: p.epsilon,
            delta: p.delta,
            k1: p.k1,
            k2: p.k2,
            k3: p.k3,
            f: p.f,
            k: p.k,
            du: p.du,
            dv: p.dv,
            alpha: p.alpha,
            beta: p.beta,
            gamma: p.gamma,
            timestep: p.timestep
        )
    }
}

extension rd_grid {
    /// The C kernels' description of a step of `model` with `parameters` on `kernel`, under
    /// `unorm8Rule` for a ``Precision/unorm8`` state.
    init(
        kernel: SolverKernel,
        model: Model,
        parameters p: Parameters,
        width: Int,
        height: Int,
        wraps: Bool,
        zeroRow: UnsafePointer<Float>,
        unorm8Rule: Unorm8Rule
    ) {
        let modelIdentifier: Int32
        switch model {
        case .grayScott: modelIdentifier = Int32(RD_MODEL_GRAY_SCOTT)
        case .fitzHughNagumo: modelIdentifier = Int32(RD_MODEL_FITZHUGH_NAGUMO)
        case .belousovZhabotinsky: modelIdentifier = Int32(RD_MODEL_BELOUSOV_ZHABOTINSKY)
        }
        self.init(
            kernel: kernel.identifier,
            model: modelIdentifier,
            parameters: rd_parameters(p),
            width: Int32(width),
            height: Int32(height),
            wraps: wraps ? 1 : 0,
            zero_row: zeroRow,
            unorm8_rule: Int32(unorm8Rule.rawValue)
        )
    }
}

/// Steps bands of rows of a ``Precision/float32`` state with the C kernel of the grid.
struct Float32Stepper: BandStepper {
    let source: PlaneSet<Float>
    let target: PlaneSet<Float>
    let grid: rd_grid

    mutating func step(rows: Range<Int>) {
        withUnsafePointer(to: grid) { grid in
            rd_step_float32(
                grid,
                source.base,
                target.base,
                Int32(rows.lowerBound),
                Int32(rows.upperBound)
            )
        }
    }
}

/// Steps bands of rows of a ``Precision/unorm8`` state, one level byte k per value, with the C
/// kernel of the grid, by the grid's rule: rule 1 expands the rows each thread reads into
/// `Float` values k/255 in its own scratch space, steps them as ``Precision/float32`` does and
/// narrows the results back to levels; rule 2 computes on the levels in fixed point.
struct Unorm8Stepper: BandStepper {
    let source: PlaneSet<UInt8>
    let target: PlaneSet<UInt8>
    let grid: rd_grid
    /// The calling thread's expanded rows (`rd_unorm8_scratch_count` floats, 64-byte aligned).
    let scratch: UnsafeMutablePointer<Float>

    mutating func step(rows: Range<Int>) {
        withUnsafePointer(to: grid) { grid in
            rd_step_unorm8(
                grid,
                source.base,
                target.base,
                Int32(rows.lowerBound),
                Int32(rows.upperBound),
                scratch
            )
        }
    }
}
