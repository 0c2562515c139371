import CReactionDiffusionSupport

/// A running reaction-diffusion simulation: a model, its parameters and its current state.
///
/// Each ``step(count:)`` computes the next state from the current one into a second buffer and
/// swaps them. Rows are split into ``threadCount`` contiguous bands stepped in parallel; every
/// cell's value is computed by the same operations whatever the band, so results are bit-for-bit
/// identical for any thread count. While stepping, each thread flushes denormal floats to zero:
/// tiny values diffusing into a zero background would otherwise slow x86 down many times over.
///
/// ```swift
/// let seed = InitialState.make(for: .grayScott, width: 256, height: 256, seed: 42)
/// let simulation = Simulation(
///     model: .grayScott,
///     parameters: Preset.named("Worms", for: .grayScott)!.parameters,
///     field: seed
/// )
/// simulation.step(count: 1_000)
/// let state = simulation.field
/// ```
///
/// A simulation is not safe to use from several tasks at once; give each its own.
public final class Simulation {
    /// The model being integrated.
    public let model: Model
    /// The parameters the next steps use; may be changed between steps.
    public var parameters: Parameters
    /// How the state is stored between steps.
    public let precision: Precision
    /// The rule a ``Precision/unorm8`` step follows (unused in ``Precision/float32``):
    /// ``Unorm8Rule/current`` unless given, and the rule a saved state was computed with when
    /// it is continued, so that it continues bit for bit.
    public let unorm8Rule: Unorm8Rule
    /// What the stencil reads beyond the edges.
    public let boundary: Boundary
    /// The number of row bands stepped in parallel (at least 1); results do not depend on it.
    public var threadCount: Int {
        didSet { threadCount = max(1, threadCount) }
    }
    /// The number of columns.
    public let width: Int
    /// The number of rows.
    public let height: Int
    /// The number of steps taken since the simulation was created.
    public private(set) var stepCount = 0
    /// Whether a step skips rows whose neighbourhood did not change in the previous step; `true`
    /// by default.
    ///
    /// A row's next values depend only on its own and its two neighbouring rows, so when none of
    /// those changed in the previous step the row's next values equal its current ones, which the
    /// target buffer already holds: the step leaves it alone. Results are bit-for-bit the same
    /// either way. It pays most in ``Precision/unorm8``, where rounding to k/255 makes the empty
    /// background and settled patterns exactly stationary; the benchmark turns it off to compare
    /// stencil kernels.
    public var skipsUnchangedRows = true
    /// The instruction set the steps run on.
    ///
    /// ``SolverKernel/best`` unless changed (to compare kernels, say). Every kernel gives the
    /// same bits; only ``SolverKernel/available`` ones can be named.
    public var kernel: SolverKernel = .best

    /// The state: `Float` values in ``Precision/float32``; in ``Precision/unorm8`` one byte per
    /// value, the level k of the value k/255.
    private var current: UnsafeMutableRawPointer
    private var next: UnsafeMutableRawPointer
    private let zeroRow: UnsafeMutablePointer<Float>
    private let valueCount: Int
    /// Per row: whether it differs between `current` and `next` (the previous state); 1 until a
    /// step has shown otherwise.
    private var rowChanged: UnsafeMutablePointer<UInt8>
    /// The other generation of `rowChanged`, written by the next step.
    private var nextRowChanged: UnsafeMutablePointer<UInt8>
    /// The parameters the previous step used; a change invalidates `rowChanged`.
    private var previousParameters: Parameters?

    /// Creates a simulation starting from `field`.
    ///
    /// In ``Precision/unorm8`` the starting state is first clamped and rounded to k/255, as the
    /// original's texture would have stored it.
    ///
    /// - Parameters:
    ///   - model: the model to integrate.
    ///   - parameters: its parameters.
    ///   - precision: how the state is stored; ``Precision/unorm8`` by default, as the original.
    ///   - unorm8Rule: the rule ``Precision/unorm8`` steps follow; ``Unorm8Rule/current`` by
    ///     default.
    ///   - boundary: what lies beyond the edges; ``Boundary/zero`` by default, as the original.
    ///   - field: the starting state, whose ``Field/chemicalCount`` must be the model's.
    ///   - threadCount: the number of row bands stepped in parallel; 1 by default.
    /// - Precondition: `field.chemicalCount == model.chemicalCount`.
    public init(
        model: Model,
        parameters: Parameters,
        precision: Precision = .unorm8,
        unorm8Rule: Unorm8Rule = .current,
        boundary: Boundary = .zero,
        field: Field,
        threadCount: Int = 1
    ) {
        precondition(
            field.chemicalCount == model.chemicalCount,
            "\(model.displayName) needs \(model.chemicalCount) chemicals, the field has \(field.chemicalCount)"
        )
        self.model = model
        self.parameters = parameters
        self.precision = precision
        self.unorm8Rule = unorm8Rule
        self.boundary = boundary
        self.threadCount = max(1, threadCount)
        self.width = field.width
        self.height = field.height
        self.valueCount = field.values.count
        switch precision {
        case .float32:
            let bytes = valueCount * MemoryLayout<Float>.stride
            current = .allocate(byteCount: bytes, alignment: 64)
            current.initializeMemory(as: Float.self, from: field.values, count: valueCount)
            next = .allocate(byteCount: bytes, alignment: 64)
            next.initializeMemory(as: Float.self, repeating: 0, count: valueCount)
        case .unorm8:
            current = .allocate(byteCount: valueCount, alignment: 64)
            let levels = current.bindMemory(to: UInt8.self, capacity: valueCount)
            for (index, value) in field.values.enumerated() {
                levels[index] = Unorm8.level(of: value)
            }
            next = .allocate(byteCount: valueCount, alignment: 64)
            next.initializeMemory(as: UInt8.self, repeating: 0, count: valueCount)
        }
        zeroRow = .allocate(capacity: width)
        zeroRow.initialize(repeating: 0, count: width)
        rowChanged = .allocate(capacity: height)
        rowChanged.initialize(repeating: 1, count: height)
        nextRowChanged = .allocate(capacity: height)
        nextRowChanged.initialize(repeating: 1, count: height)
    }

    deinit {
        current.deallocate()
        next.deallocate()
        zeroRow.deallocate()
        rowChanged.deallocate()
        nextRowChanged.deallocate()
    }

    /// A copy of the current state.
    ///
    /// In ``Precision/unorm8`` every value is exactly the `Float` nearest some k/255.
    public var field: Field {
        let values: [Float]
        switch precision {
        case .float32:
            values = Array(
                UnsafeBufferPointer(
                    start: current.assumingMemoryBound(to: Float.self),
                    count: valueCount
                )
            )
        case .unorm8:
            let levels = UnsafeBufferPointer(
                start: current.assumingMemoryBound(to: UInt8.self),
                count: valueCount
            )
            values = levels.map(Unorm8.value(ofLevel:))
        }
        return Field(
            chemicalCount: model.chemicalCount,
            width: width,
            height: height,
            values: values
        )
    }

    /// Advances the simulation by `count` steps.
    ///
    /// - Complexity: O(`count` × width × height × chemicals).
    public func step(count: Int = 1) {
        guard count > 0 else { return }
        if previousParameters != parameters {
            // Rows that were stationary under the old parameters need not be under the new.
            rowChanged.update(repeating: 1, count: height)
            previousParameters = parameters
        }
        let bands = min(threadCount, height)
        let job = StepJob(
            buffers: (current, next),
            width: width,
            rowFlags: (RowFlags(base: rowChanged), RowFlags(base: nextRowChanged)),
            skipsUnchangedRows: skipsUnchangedRows,
            kernel: kernel,
            zeroRow: UnsafePointer(zeroRow),
            wraps: boundary == .periodic,
            model: model,
            parameters: parameters,
            precision: precision,
            unorm8Rule: unorm8Rule,
            height: height,
            bands: bands,
            steps: count,
            barrier: SpinBarrier(parties: bands)
        )
        runConcurrently(bands: bands) { band in
            job.run(band: band)
        }
        if count % 2 == 1 {
            swap(&current, &next)
            swap(&rowChanged, &nextRowChanged)
        }
        stepCount += count
    }
}

/// The work of `steps` steps, split into bands of rows; each band runs on its own thread and
/// waits at the barrier after every step for the others, whose rows the next step reads.
private struct StepJob: @unchecked Sendable {
    // Unchecked: within a step the bands only read the source buffer and write disjoint rows of
    // the target; the barrier orders the steps; the buffers outlive the threads.
    let buffers: (UnsafeMutableRawPointer, UnsafeMutableRawPointer)
    let width: Int
    let rowFlags: (RowFlags, RowFlags)
    let skipsUnchangedRows: Bool
    let kernel: SolverKernel
    let zeroRow: UnsafePointer<Float>
    let wraps: Bool
    let model: Model
    let parameters: Parameters
    let precision: Precision
    let unorm8Rule: Unorm8Rule
    let height: Int
    let bands: Int
    let steps: Int
    let barrier: SpinBarrier

    func run(band: Int) {
        let rows = (band * height / bands)..<((band + 1) * height / bands)
        let savedControl = rd_flush_denormals()
        defer { rd_restore_float_control(savedControl) }
        let grid = rd_grid(
            kernel: kernel,
            model: model,
            parameters: parameters,
            width: width,
            height: height,
            wraps: wraps,
            zeroRow: zeroRow,
            unorm8Rule: unorm8Rule
        )
        switch precision {
        case .float32:
            let planes = planePair(of: Float.self)
            run(rows: rows) { even in
                Float32Stepper(
                    source: even ? planes.0 : planes.1,
                    target: even ? planes.1 : planes.0,
                    grid: grid
                )
            }
        case .unorm8:
            let planes = planePair(of: UInt8.self)
            let count = rd_unorm8_scratch_count(Int32(model.chemicalCount), Int32(width))
            let scratch = UnsafeMutableRawPointer.allocate(
                byteCount: count * MemoryLayout<Float>.stride,
                alignment: 64
            ).bindMemory(to: Float.self, capacity: count)
            defer { scratch.deallocate() }
            run(rows: rows) { even in
                Unorm8Stepper(
                    source: even ? planes.0 : planes.1,
                    target: even ? planes.1 : planes.0,
                    grid: grid,
                    scratch: scratch
                )
            }
        }
    }

    private func planePair<Element>(
        of _: Element.Type
    ) -> (PlaneSet<Element>, PlaneSet<Element>) {
        (
            PlaneSet(
                base: buffers.0.assumingMemoryBound(to: Element.self),
                width: width,
                height: height
            ),
            PlaneSet(
                base: buffers.1.assumingMemoryBound(to: Element.self),
                width: width,
                height: height
            )
        )
    }

    /// Runs the steps on `rows` with the stepper `makeStepper(even)` gives for an even or odd
    /// step (which buffer is the source).
    @inline(__always)
    private func run<S: BandStepper>(rows: Range<Int>, makeStepper: (Bool) -> S) {
        for step in 0..<steps {
            let even = step % 2 == 0
            var stepper = makeStepper(even)
            if skipsUnchangedRows {
                stepChangedRows(
                    rows,
                    with: &stepper,
                    changed: even ? rowFlags.0 : rowFlags.1,
                    nextChanged: even ? rowFlags.1 : rowFlags.0
                )
            } else {
                stepper.step(rows: rows)
                // Unknown, so "changed": skipping may be turned back on later.
                let nextChanged = even ? rowFlags.1 : rowFlags.0
                for y in rows {
                    nextChanged[y] = 1
                }
            }
            if bands > 1 {
                barrier.arriveAndWait()
            }
        }
    }

    /// Steps the rows of `rows` whose neighbourhood changed in the previous step, and records
    /// which rows this step changes.
    private func stepChangedRows<S: BandStepper>(
        _ rows: Range<Int>,
        with stepper: inout S,
        changed: RowFlags,
        nextChanged: RowFlags
    ) {
        var y = rows.lowerBound
        while y < rows.upperBound {
            guard changed.aroundRow(y, height: height, wraps: wraps) else {
                // The target already holds this row's current values (see `skipsUnchangedRows`).
                nextChanged[y] = 0
                y += 1
                continue
            }
            // Step the run of rows that need it in one call.
            var end = y + 1
            while end < rows.upperBound && changed.aroundRow(end, height: height, wraps: wraps) {
                end += 1
            }
            stepper.step(rows: y..<end)
            for row in y..<end {
                let differs = stepper.rowDiffers(row, chemicalCount: model.chemicalCount)
                nextChanged[row] = differs ? 1 : 0
            }
            y = end
        }
    }
}
