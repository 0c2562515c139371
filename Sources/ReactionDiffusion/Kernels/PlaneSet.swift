/// Raw access to one buffer of chemical planes, shared by the threads of a step: `Float` values
/// in ``Precision/float32``, `UInt8` levels in ``Precision/unorm8``.
///
/// Each thread writes only its own rows of the target and only reads the source, so the
/// unchecked `Sendable` conformance holds for the step's duration.
struct PlaneSet<Element>: @unchecked Sendable {
    /// The first value of plane 0.
    let base: UnsafeMutablePointer<Element>
    /// The number of columns.
    let width: Int
    /// The number of rows.
    let height: Int

    /// The first value of row `y` of `chemical`.
    @inline(__always)
    func row(_ chemical: Int, _ y: Int) -> UnsafeMutablePointer<Element> {
        base + (chemical * height + y) * width
    }
}

/// One flag per row, shared by the threads of a step like ``PlaneSet``.
struct RowFlags: @unchecked Sendable {
    /// The flag of row 0.
    let base: UnsafeMutablePointer<UInt8>

    /// The flag of row `y`.
    subscript(y: Int) -> UInt8 {
        get { base[y] }
        nonmutating set { base[y] = newValue }
    }

    /// Returns whether row `y` or a row next to it (after the boundary rule) is flagged.
    ///
    /// Rows beyond a zero boundary never change.
    @inline(__always)
    func aroundRow(_ y: Int, height: Int, wraps: Bool) -> Bool {
        if base[y] != 0 {
            return true
        }
        if y > 0 {
            if base[y - 1] != 0 { return true }
        } else if wraps && base[height - 1] != 0 {
            return true
        }
        if y < height - 1 {
            if base[y + 1] != 0 { return true }
        } else if wraps && base[0] != 0 {
            return true
        }
        return false
    }
}

/// The three rows a stencil reads around row `y` of one chemical, after the boundary rule.
struct RowTriple {
    /// The row above, a row of zeros, or the wrapped last row.
    let north: UnsafePointer<Float>
    /// Row `y` itself.
    let centre: UnsafePointer<Float>
    /// The row below, a row of zeros, or the wrapped first row.
    let south: UnsafePointer<Float>
    /// The number of columns.
    let width: Int
    /// Whether reads past the left and right ends wrap (otherwise they are 0).
    let wraps: Bool

    @inline(__always)
    init(planes: PlaneSet<Float>, chemical: Int, y: Int, zeroRow: UnsafePointer<Float>, wraps: Bool)
    {
        let height = planes.height
        centre = UnsafePointer(planes.row(chemical, y))
        if y > 0 {
            north = UnsafePointer(planes.row(chemical, y - 1))
        } else {
            north = wraps ? UnsafePointer(planes.row(chemical, height - 1)) : zeroRow
        }
        if y < height - 1 {
            south = UnsafePointer(planes.row(chemical, y + 1))
        } else {
            south = wraps ? UnsafePointer(planes.row(chemical, 0)) : zeroRow
        }
        width = planes.width
        self.wraps = wraps
    }

    /// The value at column `x` of `row`, for `x` in -1...width, after the boundary rule.
    @inline(__always)
    func read(_ row: UnsafePointer<Float>, _ x: Int) -> Float {
        if x < 0 {
            return wraps ? row[width - 1] : 0
        }
        if x >= width {
            return wraps ? row[0] : 0
        }
        return row[x]
    }

    /// The five-point neighbourhood of column `x`, reading edges through the boundary rule.
    @inline(__always)
    func edgeCross(_ x: Int) -> Cross<Float> {
        Cross(
            north: north[x],
            south: south[x],
            west: read(centre, x - 1),
            east: read(centre, x + 1),
            centre: centre[x]
        )
    }

    /// The five-point neighbourhoods of the lanes starting at column `x`, for
    /// `1 <= x` and `x + lanes <= width - 1`.
    @inline(__always)
    func interiorCross<V: FloatLanes>(_ x: Int) -> Cross<V> {
        Cross(
            north: .load(north + x),
            south: .load(south + x),
            west: .load(centre + x - 1),
            east: .load(centre + x + 1),
            centre: .load(centre + x)
        )
    }

    /// The 3×3 neighbourhood of column `x`, reading edges through the boundary rule.
    @inline(__always)
    func edgeBox(_ x: Int) -> Box<Float> {
        Box(
            northWest: read(north, x - 1),
            north: north[x],
            northEast: read(north, x + 1),
            west: read(centre, x - 1),
            centre: centre[x],
            east: read(centre, x + 1),
            southWest: read(south, x - 1),
            south: south[x],
            southEast: read(south, x + 1)
        )
    }

    /// The 3×3 neighbourhoods of the lanes starting at column `x`, for
    /// `1 <= x` and `x + lanes <= width - 1`.
    @inline(__always)
    func interiorBox<V: FloatLanes>(_ x: Int) -> Box<V> {
        Box(rowsNorth: north, centre: centre, south: south, at: x)
    }
}

/// What a two-chemical rule reads of a cell's five-point neighbourhood: the centre value and the
/// Laplacian.
///
/// The Laplacian is computed when the neighbourhood is made, not when a rule reads it, so a
/// stepper can make the neighbourhoods of a vector ahead of the update that consumes them (see
/// ``RowPipeline``).
struct Cross<V: FloatLanes> {
    /// The cell's value.
    let centre: V
    /// The five-point Laplacian with unit spacing, `(N + S + W + E) - 4·C`, summed in that order.
    let laplacian: V

    /// Computes the Laplacian of a cell and its four edge neighbours.
    ///
    /// `fusesLaplacian` subtracts `4·C` with a fused multiply-add. That gives the same result
    /// when `4·C` is exact (no overflow, no denormal): true for the values k/255 of a
    /// ``Precision/unorm8`` state, which are 0 or at least 1/255. The last step is then one
    /// operation on the processor's multiply-add units instead of a multiplication and a
    /// subtraction, the latter on the adders that the rest of the stencil keeps busy. A constant
    /// at every use, so the choice costs nothing once inlined.
    @inline(__always)
    init(north: V, south: V, west: V, east: V, centre: V, fusesLaplacian: Bool = false) {
        self.centre = centre
        let sum = ((north + south) + west) + east
        if fusesLaplacian {
            laplacian = sum.addingProduct(V(broadcast: -4), centre)
        } else {
            laplacian = sum - V(broadcast: 4) * centre
        }
    }
}

/// A cell and its eight neighbours.
struct Box<V: FloatLanes> {
    var northWest: V
    var north: V
    var northEast: V
    var west: V
    var centre: V
    var east: V
    var southWest: V
    var south: V
    var southEast: V

    /// The 3×3 mean as the original computed it: the sum starts at the centre value, then adds all
    /// nine cells row by row (so the centre counts twice), and is divided by 9.
    @inline(__always)
    var originalMean: V {
        var sum = centre
        sum = sum + northWest
        sum = sum + north
        sum = sum + northEast
        sum = sum + west
        sum = sum + centre
        sum = sum + east
        sum = sum + southWest
        sum = sum + south
        sum = sum + southEast
        return sum / V(broadcast: 9)
    }
}

extension Box {
    /// Loads the lanes starting at column `x` of three rows and their neighbours on both
    /// sides; the caller keeps `x - 1` and `x + lanes` inside the rows' readable memory.
    @inline(__always)
    init(
        rowsNorth north: UnsafePointer<Float>,
        centre: UnsafePointer<Float>,
        south: UnsafePointer<Float>,
        at x: Int
    ) {
        northWest = .load(north + x - 1)
        self.north = .load(north + x)
        northEast = .load(north + x + 1)
        west = .load(centre + x - 1)
        self.centre = .load(centre + x)
        east = .load(centre + x + 1)
        southWest = .load(south + x - 1)
        self.south = .load(south + x)
        southEast = .load(south + x + 1)
    }
}
