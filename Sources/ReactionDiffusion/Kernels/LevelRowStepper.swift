#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Steps bands of rows of a ``Precision/unorm8`` state, stored as one level byte k per value.
///
/// Each source row is expanded once into `Float` values k/255 (``ExpandedRows``), the cell
/// rules run on those exactly as in ``Precision/float32``, and each result is clamped, scaled by
/// 255, rounded to the nearest integer and narrowed to its level byte (``Unorm8/levels(of:)``).
/// Compared with storing k/255 as `Float`, a step moves a quarter of the bytes, but the
/// conversions back and forth add vector operations that ``Precision/float32`` does not have
/// (see Benchmarks/README.md for the measured difference). Thanks to the halo of the expanded
/// rows every column, edges included, goes through the vector path when the row holds at least
/// one vector; narrower rows go lane by lane through the same formulas.
struct LevelRowStepper: BandStepper {
    let source: PlaneSet<UInt8>
    let target: PlaneSet<UInt8>
    /// The calling thread's expanded rows.
    var cache: ExpandedRows

    private var lanes: Int { FloatVector.scalarCount }

    /// Whether row `y` of any chemical differs between the target and the source.
    func rowDiffers(_ y: Int, chemicalCount: Int) -> Bool {
        for chemical in 0..<chemicalCount {
            if memcmp(target.row(chemical, y), source.row(chemical, y), source.width) != 0 {
                return true
            }
        }
        return false
    }

    mutating func step(_ model: Model, _ parameters: Parameters, rows: Range<Int>) {
        switch model {
        case .grayScott:
            step(GrayScottRule(parameters), rows: rows)
        case .fitzHughNagumo:
            step(FitzHughNagumoRule(parameters), rows: rows)
        case .belousovZhabotinsky:
            step(BelousovZhabotinskyRule(parameters), rows: rows)
        }
    }

    /// Steps `rows` of a two-chemical model.
    ///
    /// While it computes a row, the loop also expands the levels of the row after the south row
    /// (the next row's south row), unless this is the last row of the run: independent work the
    /// processor overlaps with the stencil's chains of dependent operations (see
    /// ``ExpandedRows``).
    @inline(__always)
    private mutating func step<R: TwoChemicalRule>(_ rule: R, rows: Range<Int>) {
        guard let firstRow = rows.first else { return }
        let width = source.width
        cache.start(at: firstRow, source: source)
        for y in rows {
            if y != firstRow {
                cache.advance()
            }
            let first = cache.rows(0)
            let second = cache.rows(1)
            let outFirst = target.row(0, y)
            let outSecond = target.row(1, y)
            let expandsAhead = y + 1 < rows.upperBound
            guard width >= lanes else {
                if expandsAhead {
                    cache.expandAhead(source: source)
                }
                for x in 0..<width {
                    let (a, b): (Float, Float) = rule.update(first.cross(x), second.cross(x))
                    outFirst[x] = Unorm8.level(of: a)
                    outSecond[x] = Unorm8.level(of: b)
                }
                continue
            }
            // The last vector starts at `width - lanes`, overlapping the previous one (harmless:
            // the step reads only the source) rather than leaving a scalar tail.
            let last = width - lanes
            if last > lanes {
                // Three or more vectors: through the pipeline.
                if expandsAhead {
                    let ahead = AheadExpansion(
                        levels: (
                            cache.aheadLevels(0, source: source),
                            cache.aheadLevels(1, source: source)
                        ),
                        values: (cache.aheadValues(0), cache.aheadValues(1))
                    )
                    let stages = LevelRowStages(
                        rule: rule,
                        first: first,
                        second: second,
                        outFirst: outFirst,
                        outSecond: outSecond,
                        ahead: ahead
                    )
                    RowPipeline.run(stages, start: 0, last: last, lanes: lanes)
                    cache.finishAhead()
                } else {
                    let stages = LevelRowStages(
                        rule: rule,
                        first: first,
                        second: second,
                        outFirst: outFirst,
                        outSecond: outSecond,
                        ahead: NoAheadExpansion()
                    )
                    RowPipeline.run(stages, start: 0, last: last, lanes: lanes)
                }
            } else if expandsAhead {
                let aheadLevels = (
                    cache.aheadLevels(0, source: source), cache.aheadLevels(1, source: source)
                )
                let aheadValues = (cache.aheadValues(0), cache.aheadValues(1))
                var x = 0
                while x < last {
                    Self.expand(aheadLevels, x, into: aheadValues)
                    Self.stepVector(rule, first, second, x, outFirst, outSecond)
                    x &+= lanes
                }
                Self.expand(aheadLevels, last, into: aheadValues)
                Self.stepVector(rule, first, second, last, outFirst, outSecond)
                cache.finishAhead()
            } else {
                var x = 0
                while x < last {
                    Self.stepVector(rule, first, second, x, outFirst, outSecond)
                    x &+= lanes
                }
                Self.stepVector(rule, first, second, last, outFirst, outSecond)
            }
        }
    }

    /// Expands the levels of both chemicals' ahead rows at the lanes starting at column `x`.
    @_transparent  // See `store(_:to:)`.
    fileprivate static func expand(
        _ levels: (UnsafePointer<UInt8>, UnsafePointer<UInt8>),
        _ x: Int,
        into values: (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>)
    ) {
        Unorm8.values(ofLevels: load(levels.0 + x)).store(to: values.0 + x)
        Unorm8.values(ofLevels: load(levels.1 + x)).store(to: values.1 + x)
    }

    /// Computes and stores the levels of the lanes starting at column `x` of a two-chemical
    /// model.
    @_transparent  // See `store(_:to:)`.
    private static func stepVector<R: TwoChemicalRule>(
        _ rule: R,
        _ first: HaloRows,
        _ second: HaloRows,
        _ x: Int,
        _ outFirst: UnsafeMutablePointer<UInt8>,
        _ outSecond: UnsafeMutablePointer<UInt8>
    ) {
        let (a, b): (FloatVector, FloatVector) = rule.update(first.cross(x), second.cross(x))
        store(a, to: outFirst + x)
        store(b, to: outSecond + x)
    }

    /// Steps `rows` of Belousov-Zhabotinsky.
    @inline(__always)
    private mutating func step(_ rule: BelousovZhabotinskyRule, rows: Range<Int>) {
        guard let firstRow = rows.first else { return }
        let width = source.width
        cache.start(at: firstRow, source: source)
        for y in rows {
            if y != firstRow {
                cache.advance()
                cache.expandSouth(source: source)
            }
            let first = cache.rows(0)
            let second = cache.rows(1)
            let third = cache.rows(2)
            let outFirst = target.row(0, y)
            let outSecond = target.row(1, y)
            let outThird = target.row(2, y)

            if width >= lanes {
                // As in the two-chemical step.
                var next = 0
                while next < width {
                    let x = min(next, width - lanes)
                    let (a, b, c): (FloatVector, FloatVector, FloatVector) = rule.update(
                        first.box(x),
                        second.box(x),
                        third.box(x)
                    )
                    Self.store(a, to: outFirst + x)
                    Self.store(b, to: outSecond + x)
                    Self.store(c, to: outThird + x)
                    next += lanes
                }
            } else {
                for x in 0..<width {
                    let (a, b, c): (Float, Float, Float) = rule.update(
                        first.box(x),
                        second.box(x),
                        third.box(x)
                    )
                    outFirst[x] = Unorm8.level(of: a)
                    outSecond[x] = Unorm8.level(of: b)
                    outThird[x] = Unorm8.level(of: c)
                }
            }
        }
    }

    /// Loads the levels starting at `pointer`, which need not be aligned.
    @_transparent
    fileprivate static func load(_ pointer: UnsafePointer<UInt8>) -> LevelVector {
        UnsafeRawPointer(pointer).loadUnaligned(as: LevelVector.self)
    }

    /// Stores the levels of `values` at `pointer`, which need not be aligned.
    // `@_transparent` (inlined before any optimisation) rather than `@inline(__always)`, which
    // the optimiser ignored here once the step function had grown large, leaving a call per
    // vector that cost more than the conversion.
    @_transparent
    fileprivate static func store(_ values: FloatVector, to pointer: UnsafeMutablePointer<UInt8>) {
        UnsafeMutableRawPointer(pointer).storeBytes(
            of: Unorm8.levels(of: values),
            as: LevelVector.self
        )
    }
}

/// The stages of a row of a two-chemical model in ``Precision/unorm8`` for ``RowPipeline``.
///
/// Neighbourhoods from the expanded rows, the rule, and the narrowing to levels. Next to the
/// neighbourhoods, `ahead` converts the ahead rows' levels at the same column (or nothing, on the
/// last row of a run); the values are stored one pass later (``settle(_:_:)``), when the
/// conversion has long finished, so the store does not hold up the retirement of everything
/// after it.
private struct LevelRowStages<Rule: TwoChemicalRule, Ahead: AheadRows>: RowStages {
    let rule: Rule
    let first: HaloRows
    let second: HaloRows
    let outFirst: UnsafeMutablePointer<UInt8>
    let outSecond: UnsafeMutablePointer<UInt8>
    let ahead: Ahead

    @inline(__always)
    func prepare(
        _ x: Int
    ) -> (Cross<FloatVector>, Cross<FloatVector>, (FloatVector, FloatVector)) {
        (first.cross(x), second.cross(x), ahead.values(x))
    }

    @inline(__always)
    func settle(
        _ prepared: (Cross<FloatVector>, Cross<FloatVector>, (FloatVector, FloatVector)),
        _ x: Int
    ) {
        ahead.store(prepared.2, x)
    }

    @inline(__always)
    func finish(
        _ prepared: (Cross<FloatVector>, Cross<FloatVector>, (FloatVector, FloatVector))
    ) -> (FloatVector, FloatVector) {
        rule.update(prepared.0, prepared.1)
    }

    @inline(__always)
    func store(_ result: (FloatVector, FloatVector), _ x: Int) {
        LevelRowStepper.store(result.0, to: outFirst + x)
        LevelRowStepper.store(result.1, to: outSecond + x)
    }
}

/// What ``LevelRowStages`` does with the ahead rows at each vector's column: a type rather than
/// a flag, so each choice gets its own loop.
private protocol AheadRows {
    /// Both chemicals' ahead values at the lanes starting at column `x` (anything, if there are
    /// none).
    func values(_ x: Int) -> (FloatVector, FloatVector)
    /// Stores ``values(_:)`` of column `x`, or does nothing.
    func store(_ values: (FloatVector, FloatVector), _ x: Int)
}

/// Expands both chemicals' ahead rows.
private struct AheadExpansion: AheadRows {
    let levels: (UnsafePointer<UInt8>, UnsafePointer<UInt8>)
    let values: (UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>)

    @inline(__always)
    func values(_ x: Int) -> (FloatVector, FloatVector) {
        (
            Unorm8.values(ofLevels: LevelRowStepper.load(levels.0 + x)),
            Unorm8.values(ofLevels: LevelRowStepper.load(levels.1 + x))
        )
    }

    @inline(__always)
    func store(_ values: (FloatVector, FloatVector), _ x: Int) {
        values.0.store(to: self.values.0 + x)
        values.1.store(to: self.values.1 + x)
    }
}

/// Leaves the ahead rows alone: the last row of a run has none to expand.
private struct NoAheadExpansion: AheadRows {
    @inline(__always)
    func values(_ x: Int) -> (FloatVector, FloatVector) {
        (FloatVector(), FloatVector())
    }

    @inline(__always)
    func store(_ values: (FloatVector, FloatVector), _ x: Int) {}
}
