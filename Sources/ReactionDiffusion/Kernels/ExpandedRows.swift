/// One thread's `Float` copies of the three rows of levels around the row being stepped, for each
/// chemical of a ``Precision/unorm8`` state.
///
/// Each copy holds the values k/255 of one row with one halo value on either side (the boundary
/// rule applied: 0, or the wrapped value), so the stencil reads every column, edges included,
/// with the same unconditional loads. Rows beyond a zero boundary are a shared row of zeros. As
/// the stepper moves down a run of rows, each row is expanded once per chemical and then read as
/// the south, centre and north row of three consecutive steps from the first-level cache.
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
        let count = (3 * chemicalCount + 1) * stride
        storage = .allocate(capacity: count)
        storage.initialize(repeating: 0, count: count)
    }

    /// Frees the buffers.
    func deallocate() {
        storage.deallocate()
    }

    /// The rows around row `y` of `chemical`, each pointing at its left halo value.
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

    /// Expands the rows around row `y` of `source` for every chemical.
    mutating func start(at y: Int, source: PlaneSet<UInt8>) {
        self.y = y
        rotation = 0
        for chemical in 0..<chemicalCount {
            expand(row: y - 1, of: source, chemical: chemical, into: 0)
            expand(row: y, of: source, chemical: chemical, into: 1)
            expand(row: y + 1, of: source, chemical: chemical, into: 2)
        }
    }

    /// Moves down to the next row, expanding the one below it into the buffer of the row above
    /// the previous one.
    mutating func advance(source: PlaneSet<UInt8>) {
        y += 1
        rotation = rotation == 2 ? 0 : rotation + 1
        for chemical in 0..<chemicalCount {
            expand(row: y + 1, of: source, chemical: chemical, into: (rotation + 2) % 3)
        }
    }

    private var zeroRow: UnsafePointer<Float> {
        UnsafePointer(storage + 3 * chemicalCount * stride)
    }

    @inline(__always)
    private func buffer(_ chemical: Int, _ slot: Int) -> UnsafeMutablePointer<Float> {
        storage + (chemical * 3 + slot) * stride
    }

    /// Writes row `row` of `chemical` (wrapped if the boundary wraps; nothing if it is beyond a
    /// zero boundary, which ``rows(_:)`` then replaces by zeros) as floats into buffer `slot`.
    @inline(__always)
    private func expand(row: Int, of source: PlaneSet<UInt8>, chemical: Int, into slot: Int) {
        var row = row
        if row < 0 || row >= height {
            guard wraps else { return }
            row = (row + height) % height
        }
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
        halo[0] = wraps ? values[width - 1] : 0
        values[width] = wraps ? values[0] : 0
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
