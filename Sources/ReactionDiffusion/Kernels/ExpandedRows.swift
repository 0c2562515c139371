/// One thread's `Float` copies of the rows of levels around the row being stepped, for each
/// chemical of a ``Precision/unorm8`` state.
///
/// Each copy holds the values k/255 of one row with one halo value on either side (the boundary
/// rule applied: 0, or the wrapped value), so the stencil reads every column, edges included,
/// with the same unconditional loads; rows beyond a zero boundary are copies of zeros. Column 0
/// of every copy starts a 64-byte line, so the loads of the north, centre and south values and
/// the stores of expanded values never straddle two lines.
///
/// Four copies per chemical rotate as the stepper moves down a run of rows: the north, centre
/// and south rows of the row being stepped, and the row after the south row, which a
/// two-chemical stepper expands *ahead*, while it computes the current row (see
/// ``aheadLevels(_:source:)``). Expanding a row in the same loop that consumes it would put the
/// conversion at the head of every cell's chain of dependent operations; expanded a row early,
/// it is independent work the processor overlaps with the stencil. Each row is expanded once
/// per chemical and read from the first-level cache as the south, centre and north row of three
/// steps.
struct ExpandedRows {
    /// The number of columns of a row, without the halo.
    let width: Int
    private let chemicalCount: Int
    private let height: Int
    private let wraps: Bool
    /// The distance in floats between two copies: the row, a halo value on either side, and
    /// padding that puts column 0 of every copy on a 64-byte boundary.
    private let stride: Int
    /// Four copies per chemical, 64-byte aligned; column 0 of a copy is at offset 16.
    private let storage: UnsafeMutablePointer<Float>
    /// A row of `width` zero levels, the source of the rows beyond a zero boundary.
    private let zeroLevels: UnsafeMutablePointer<UInt8>
    /// The copy holding the north row is `rotation`; the next three (modulo 4) hold the centre,
    /// south and ahead rows.
    private var rotation = 0
    /// The row being stepped.
    private var y = 0

    /// Allocates the copies for `chemicalCount` planes of `width` × `height`; call
    /// ``deallocate()`` when done.
    init(chemicalCount: Int, width: Int, height: Int, wraps: Bool) {
        self.width = width
        self.chemicalCount = chemicalCount
        self.height = height
        self.wraps = wraps
        // 16 floats before column 0 (the left halo is the last of them), the row and the right
        // halo, rounded up to whole 64-byte lines.
        stride = (16 + width + 1 + 15) / 16 * 16
        // Every copy starts with zero halos, which stay zero at a zero boundary.
        let count = 4 * chemicalCount * stride
        storage = UnsafeMutableRawPointer.allocate(
            byteCount: count * MemoryLayout<Float>.stride,
            alignment: 64
        ).initializeMemory(as: Float.self, repeating: 0, count: count)
        zeroLevels = .allocate(capacity: width)
        zeroLevels.initialize(repeating: 0, count: width)
    }

    /// Frees the copies.
    func deallocate() {
        UnsafeMutableRawPointer(storage).deallocate()
        zeroLevels.deallocate()
    }

    /// The north, centre and south rows around row `y` of `chemical`.
    @inline(__always)
    func rows(_ chemical: Int) -> HaloRows {
        HaloRows(
            north: UnsafePointer(copy(chemical, rotation)),
            centre: UnsafePointer(copy(chemical, rotation + 1)),
            south: UnsafePointer(copy(chemical, rotation + 2))
        )
    }

    /// Starts a run of rows at row `y`, expanding its north, centre and south rows for every
    /// chemical.
    mutating func start(at y: Int, source: PlaneSet<UInt8>) {
        self.y = y
        rotation = 0
        for chemical in 0..<chemicalCount {
            for slot in 0..<3 {
                expand(row: y - 1 + slot, of: source, chemical: chemical, into: slot)
            }
        }
    }

    /// Moves down to the next row: the centre row becomes the north row, the south row the
    /// centre row and the ahead row the south row; the copy of the old north row will receive
    /// the new ahead row.
    ///
    /// The new south row must have been expanded, ahead (see ``aheadLevels(_:source:)`` and
    /// ``expandAhead(source:)``) or by ``expandSouth(source:)`` after this call.
    mutating func advance() {
        y += 1
        rotation = (rotation + 1) & 3
    }

    /// Expands the south row of the current row for every chemical, for a stepper that does not
    /// expand ahead.
    mutating func expandSouth(source: PlaneSet<UInt8>) {
        for chemical in 0..<chemicalCount {
            expand(row: y + 1, of: source, chemical: chemical, into: rotation + 2)
        }
    }

    /// Expands the ahead row (the row after the south row) for every chemical in one pass.
    mutating func expandAhead(source: PlaneSet<UInt8>) {
        for chemical in 0..<chemicalCount {
            expand(row: y + 2, of: source, chemical: chemical, into: rotation + 3)
        }
    }

    /// The levels of the ahead row of `chemical`, the row after the south row: the source row
    /// after the boundary rule, or a row of zeros.
    ///
    /// A stepper that expands them itself writes their values to ``aheadValues(_:)`` and then
    /// calls ``finishAhead()``.
    @inline(__always)
    func aheadLevels(_ chemical: Int, source: PlaneSet<UInt8>) -> UnsafePointer<UInt8> {
        guard let row = sourceRow(y + 2) else { return UnsafePointer(zeroLevels) }
        return UnsafePointer(source.row(chemical, row))
    }

    /// Where column 0 of the ahead row of `chemical` goes (64-byte aligned).
    @inline(__always)
    func aheadValues(_ chemical: Int) -> UnsafeMutablePointer<Float> {
        copy(chemical, rotation + 3)
    }

    /// Completes the halos of the ahead rows a stepper has expanded into ``aheadValues(_:)``.
    mutating func finishAhead() {
        guard wraps else { return }  // At a zero boundary the halos stay zero.
        for chemical in 0..<chemicalCount {
            let values = aheadValues(chemical)
            values[-1] = values[width - 1]
            values[width] = values[0]
        }
    }

    /// Column 0 of copy `slot` (modulo 4) of `chemical`.
    @inline(__always)
    private func copy(_ chemical: Int, _ slot: Int) -> UnsafeMutablePointer<Float> {
        storage + (chemical * 4 + (slot & 3)) * stride + 16
    }

    /// Row `row` of the source after the boundary rule, or `nil` beyond a zero boundary.
    @inline(__always)
    private func sourceRow(_ row: Int) -> Int? {
        if row >= 0 && row < height {
            return row
        }
        return wraps ? (row % height + height) % height : nil
    }

    /// Writes row `row` of `chemical` (after the boundary rule; zeros if it is beyond a zero
    /// boundary) as floats into copy `slot`.
    private func expand(row: Int, of source: PlaneSet<UInt8>, chemical: Int, into slot: Int) {
        let levels =
            sourceRow(row).map { UnsafePointer(source.row(chemical, $0)) }
            ?? UnsafePointer(zeroLevels)
        let values = copy(chemical, slot)
        let lanes = LevelVector.scalarCount
        if width >= lanes {
            // The last vector overlaps the previous one rather than leaving a scalar tail.
            var x = 0
            while x < width {
                let start = min(x, width - lanes)
                let vector = UnsafeRawPointer(levels + start).loadUnaligned(as: LevelVector.self)
                Unorm8.values(ofLevels: vector).store(to: values + start)
                x += lanes
            }
        } else {
            for x in 0..<width {
                values[x] = Unorm8.value(ofLevel: levels[x])
            }
        }
        if wraps {
            values[-1] = values[width - 1]
            values[width] = values[0]
        }
    }
}

/// The expanded rows a stencil reads around one row of one chemical, each pointing at column 0;
/// columns −1 and `width` are the halo.
struct HaloRows {
    let north: UnsafePointer<Float>
    let centre: UnsafePointer<Float>
    let south: UnsafePointer<Float>

    /// The five-point neighbourhoods of the lanes starting at column `x` (one `Float` or a
    /// vector), for `0 <= x` and `x + lanes <= width`; their centres are values k/255, so the
    /// Laplacian may be fused (see ``Cross/fusesLaplacian``).
    @inline(__always)
    func cross<V: FloatLanes>(_ x: Int) -> Cross<V> {
        Cross(
            north: .load(north + x),
            south: .load(south + x),
            west: .load(centre + x - 1),
            east: .load(centre + x + 1),
            centre: .load(centre + x),
            fusesLaplacian: true
        )
    }

    /// The 3×3 neighbourhoods of the lanes starting at column `x`, for `0 <= x` and
    /// `x + lanes <= width`.
    @inline(__always)
    func box<V: FloatLanes>(_ x: Int) -> Box<V> {
        Box(rowsNorth: north, centre: centre, south: south, at: x)
    }
}
