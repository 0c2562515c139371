#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Steps bands of rows of a ``Precision/float32`` state: the edge columns through the boundary rule, the interior columns with
/// SIMD loads and no bounds branches.
///
/// The interior loop covers columns `1..<width - 1` in vectors of ``FloatVector``'s lanes; a last
/// partial vector is recomputed overlapping the previous one (harmless, since the step reads only
/// the source buffer), so there is no scalar tail.
struct RowStepper: BandStepper {
    let source: PlaneSet<Float>
    let target: PlaneSet<Float>
    let zeroRow: UnsafePointer<Float>
    let wraps: Bool

    private var lanes: Int { FloatVector.scalarCount }

    /// Whether row `y` of any chemical differs, bit for bit, between the target and the source.
    func rowDiffers(_ y: Int, chemicalCount: Int) -> Bool {
        for chemical in 0..<chemicalCount {
            if memcmp(target.row(chemical, y), source.row(chemical, y), source.width * 4) != 0 {
                return true
            }
        }
        return false
    }

    func step(_ model: Model, _ parameters: Parameters, rows: Range<Int>) {
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
    @inline(__always)
    private func step<R: TwoChemicalRule>(_ rule: R, rows: Range<Int>) {
        let width = source.width
        for y in rows {
            let first = RowTriple(planes: source, chemical: 0, y: y, zeroRow: zeroRow, wraps: wraps)
            let second = RowTriple(
                planes: source,
                chemical: 1,
                y: y,
                zeroRow: zeroRow,
                wraps: wraps
            )
            let outFirst = target.row(0, y)
            let outSecond = target.row(1, y)

            @inline(__always)
            func edge(_ x: Int) {
                let (a, b) = rule.update(first.edgeCross(x), second.edgeCross(x))
                outFirst[x] = a
                outSecond[x] = b
            }

            @inline(__always)
            func interior(_ x: Int) {
                let (a, b): (FloatVector, FloatVector) = rule.update(
                    first.interiorCross(x),
                    second.interiorCross(x)
                )
                a.store(to: outFirst + x)
                b.store(to: outSecond + x)
            }

            edge(0)
            if width > 1 {
                edge(width - 1)
            }
            // The last interior vector ends at column `width - 2`.
            let last = width - 1 - lanes
            if last > 1 + lanes {
                // Three or more interior vectors: through the pipeline.
                let stages = FloatRowStages(
                    rule: rule,
                    first: first,
                    second: second,
                    outFirst: outFirst,
                    outSecond: outSecond
                )
                RowPipeline.run(stages, start: 1, last: last, lanes: lanes)
            } else if width - 2 >= lanes {
                var x = 1
                while x + lanes <= width - 1 {
                    interior(x)
                    x += lanes
                }
                if x < width - 1 {
                    interior(width - 1 - lanes)
                }
            } else if width > 2 {
                for x in 1..<(width - 1) {
                    edge(x)
                }
            }
        }
    }

    /// Steps `rows` of Belousov-Zhabotinsky.
    @inline(__always)
    private func step(_ rule: BelousovZhabotinskyRule, rows: Range<Int>) {
        let width = source.width
        for y in rows {
            let first = RowTriple(planes: source, chemical: 0, y: y, zeroRow: zeroRow, wraps: wraps)
            let second = RowTriple(
                planes: source,
                chemical: 1,
                y: y,
                zeroRow: zeroRow,
                wraps: wraps
            )
            let third = RowTriple(planes: source, chemical: 2, y: y, zeroRow: zeroRow, wraps: wraps)
            let outFirst = target.row(0, y)
            let outSecond = target.row(1, y)
            let outThird = target.row(2, y)

            @inline(__always)
            func edge(_ x: Int) {
                let (a, b, c) = rule.update(first.edgeBox(x), second.edgeBox(x), third.edgeBox(x))
                outFirst[x] = a
                outSecond[x] = b
                outThird[x] = c
            }

            @inline(__always)
            func interior(_ x: Int) {
                let (a, b, c): (FloatVector, FloatVector, FloatVector) = rule.update(
                    first.interiorBox(x),
                    second.interiorBox(x),
                    third.interiorBox(x)
                )
                a.store(to: outFirst + x)
                b.store(to: outSecond + x)
                c.store(to: outThird + x)
            }

            edge(0)
            if width > 1 {
                edge(width - 1)
            }
            if width - 2 >= lanes {
                var x = 1
                while x + lanes <= width - 1 {
                    interior(x)
                    x += lanes
                }
                if x < width - 1 {
                    interior(width - 1 - lanes)
                }
            } else if width > 2 {
                for x in 1..<(width - 1) {
                    edge(x)
                }
            }
        }
    }
}

/// The stages of the interior of a row of a two-chemical model in ``Precision/float32`` for
/// ``RowPipeline``: neighbourhoods from the source rows, the rule, and the stores.
private struct FloatRowStages<Rule: TwoChemicalRule>: RowStages {
    let rule: Rule
    let first: RowTriple
    let second: RowTriple
    let outFirst: UnsafeMutablePointer<Float>
    let outSecond: UnsafeMutablePointer<Float>

    @inline(__always)
    func prepare(_ x: Int) -> (Cross<FloatVector>, Cross<FloatVector>) {
        (first.interiorCross(x), second.interiorCross(x))
    }

    @inline(__always)
    func finish(_ prepared: (Cross<FloatVector>, Cross<FloatVector>)) -> (FloatVector, FloatVector)
    {
        rule.update(prepared.0, prepared.1)
    }

    @inline(__always)
    func store(_ result: (FloatVector, FloatVector), _ x: Int) {
        result.0.store(to: outFirst + x)
        result.1.store(to: outSecond + x)
    }
}
