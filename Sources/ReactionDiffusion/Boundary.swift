/// What the stencil reads beyond the grid's edges.
public enum Boundary: String, CaseIterable, Sendable, Codable, Hashable {
    /// Cells outside the grid read as 0, as the original's out-of-bounds texture reads did.
    /// The default.
    case zero
    /// The grid wraps around: the left edge's west neighbour is the right edge, and so on.
    case periodic
}
