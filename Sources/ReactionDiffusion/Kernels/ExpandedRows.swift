/// One thread's `Float` copies of the three rows of levels around the row being stepped, for each
/// chemical of a ``Precision/unorm8`` state.
///
/// Each copy holds the values k/255 of one row with one halo value on either side (the boundary
/// rule applied: 0, or the wrapped value), so the stencil reads every column, edges included,
/// with the same unconditional loads. Rows beyond a zero boundary read as a shared row of zeros.
/// As the stepper moves down a run of rows, each row is expanded once per chemical, as the south
/// row of one step (either by ``expandSouth(source:)`` or by the stepper itself, into
/// ``southValues(_:)``), and then read from the first-level cache as the centre and north row of
/// the next two.
struct ExpandedRows {
    /// The number of columns of a row, without the halo.
    let width: Int
    private let chemicalCount: Int
    private let height: Int
    private let wraps: Bool
    /// The distance in floats between two buffers: the row and its halo, rounded up to 64 bytes.
    private let stride: Int
    /// Three buffers per chemical, then the row of zeros.
    private let storage: UnsafeMutablePointer<Float>
    /// A row of `width` zero levels, the source of the rows beyond a zero boundary.
    private let zeroLevels: UnsafeMutablePointer<UInt8>
    /// The buffer holding the north row is `rotation % 3`; the next two hold the centre and south.
    private var rotation = 0
    /// The row being stepped.
    private var y = 0

    /// Allocates the buffers for `chemicalCount` planes of `width` × `height`; call
    /// ``deallocate()`` when done.
    init(chemicalCount: Int, width: Int, height: Int, wraps: Bool) {
        self.width = width
        self.chemicalCount = chemicalCount
        self.height = height
        self.wraps = wraps
        stride = (width + 2 + 15) / 16 * 16
        // Every buffer starts with zero halos, which stay zero at a zero boundary.
        let count = (3 * chemicalCount + 1) * stride
        storage = .allocate(capacity: count)
        storage.initialize(repeating: 0, count: count)
        zeroLevels = .allocate(capacity: width)
        zeroLevels.initialize(repeating: 0, count: width)
    }

    /// Frees the buffers.
    func deallocate() {
        storage.deallocate()
        zeroLevels.deallocate()
    }

    /// The rows around row `y` of `chemical`, each pointing at its left halo value.
    ///
    /// The south row is valid once it has been expanded (see ``expandSouth(source:)``).
    @inline(__always)
    func rows(_ chemical: Int) -> HaloRows {
        let north: UnsafePointer<Float> =
            y == 0 && !wraps ? zeroRow : UnsafePointer(buffer(chemical, rotation % 3))
        let south: UnsafePointer<Float> =
            y == height - 1 && !wraps
            ? zeroRow : UnsafePointer(buffer(chemical, (rotation + 2) % 3))
        return HaloRows(
            north: north,
            centre: UnsafePointer(buffer(chemical, (rotation + 1) % 3)),
            south: south
        )
    }

    /// Starts a run of rows at row `y`, expanding its north and centre rows for every chemical.
    mutating func start(at y: Int, source: PlaneSet<UInt8>) {
        self.y = y
        rotation = 0
        for chemical in 0..<chemicalCount {
            expand(row: y - 1, of: source, chemical: chemical, into: 0)
            expand(row: y, of: source, chemical: chemical, into: 1)
        }
    }

    /// Moves down to the next row: the centre row becomes the north row and the south row the
    /// centre row; the buffer of the old north row will receive the new south row.
    mutating func advance() {
        y += 1
        rotation = rotation == 2 ? 0 : rotation + 1
    }

    /// Expands the south row of the current row for every chemical.
    mutating func expandSouth(source: PlaneSet<UInt8>) {
        for chemical in 0..<chemicalCount {
            expand(row: y + 1, of: source, chemical: chemical, into: (rotation + 2) % 3)
        }
    }

    /// The levels of the south row of `chemical`: the source row after the boundary rule, or a
    /// row of zeros.
    @inline(__always)
    func southLevels(_ chemical: Int, source: PlaneSet<UInt8>) -> UnsafePointer<UInt8> {
        guard let row = sourceRow(y + 1) else { return UnsafePointer(zeroLevels) }
        return UnsafePointer(source.row(chemical, row))
    }

    /// Where column 0 of the south row of `chemical` goes, for a stepper that expands it.
    ///
    /// Call ``finishSouth()`` when all its columns are written.
    @inline(__always)
    func southValues(_ chemical: Int) -> UnsafeMutablePointer<Float> {
        buffer(chemical, (rotation + 2) % 3) + 1
    }

    /// Completes the halos of the south rows a stepper has expanded into ``southValues(_:)``.
    mutating func finishSouth() {
        guard wraps else { return }  // At a zero boundary the halos stay zero.
        for chemical in 0..<chemicalCount {
            let values = southValues(chemical)
            values[-1] = values[width - 1]
            values[width] = values[0]
        }
    }

    private var zeroRow: UnsafePointer<Float> {
        UnsafePointer(storage + 3 * chemicalCount * stride)
    }

    @inline(__always)
    private func buffer(_ chemical: Int, _ slot: Int) -> UnsafeMutablePointer<Float> {
        storage + (chemical * 3 + slot) * stride
    }

    /// Row `row` of the source after the boundary rule, or `nil` beyond a zero boundary.
    @inline(__always)
    private func sourceRow(_ row: Int) -> Int? {
        if row >= 0 && row < height {
            return row
        }
        return wraps ? (row + height) % height : nil
    }

    /// Writes row `row` of `chemical` (after the boundary rule; nothing if it is beyond a zero
    /// boundary, which ``rows(_:)`` then replaces by zeros) as floats into buffer `slot`.
    private func expand(row: Int, of source: PlaneSet<UInt8>, chemical: Int, into slot: Int) {
        guard let row = sourceRow(row) else { return }
        let levels = UnsafePointer(source.row(chemical, row))
        let halo = buffer(chemical, slot)
        let values = halo + 1
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
            halo[0] = values[width - 1]
            values[width] = values[0]
        }
    }
}

/// The expanded rows a stencil reads around one row of one chemical, each pointing at its left
/// halo value (column −1), so column `x` of a row is at offset `x + 1`.
struct HaloRows {
    let north: UnsafePointer<Float>
    let centre: UnsafePointer<Float>
    let south: UnsafePointer<Float>

    /// The five-point neighbourhoods of the lanes starting at column `x` (one `Float` or a
    /// vector), for `0 <= x` and `x + lanes <= width`.
    @inline(__always)
    func cross<V: FloatLanes>(_ x: Int) -> Cross<V> {
        Cross(
            north: .load(north + x + 1),
            south: .load(south + x + 1),
            west: .load(centre + x),
            east: .load(centre + x + 2),
            centre: .load(centre + x + 1)
        )
    }

    /// The five-point neighbourhoods of the lanes starting at column `x`, with the south values
    /// given rather than loaded.
    @inline(__always)
    func cross<V: FloatLanes>(_ x: Int, south: V) -> Cross<V> {
        Cross(
            north: .load(north + x + 1),
            south: south,
            west: .load(centre + x),
            east: .load(centre + x + 2),
            centre: .load(centre + x + 1)
        )
    }

    /// The 3×3 neighbourhoods of the lanes starting at column `x`, for `0 <= x` and
    /// `x + lanes <= width`.
    @inline(__always)
    func box<V: FloatLanes>(_ x: Int) -> Box<V> {
        Box(
            northWest: .load(north + x),
            north: .load(north + x + 1),
            northEast: .load(north + x + 2),
            west: .load(centre + x),
            centre: .load(centre + x + 1),
            east: .load(centre + x + 2),
            southWest: .load(south + x),
            south: .load(south + x + 1),
            southEast: .load(south + x + 2)
        )
    }
}
