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
