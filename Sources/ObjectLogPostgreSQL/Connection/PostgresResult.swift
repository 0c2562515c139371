/// The rows a statement returned, as text, and how many rows it changed.
public struct PostgresResult: Sendable, Equatable {
    /// The names of the result's columns.
    public var columns: [String]
    /// Each row's values as the server writes them as text; nil for SQL `NULL`.
    public var rows: [[String?]]
    /// The rows an `INSERT`, `UPDATE` or `DELETE` changed (0 for other statements).
    public var affectedRows: Int

    /// Creates a result.
    public init(columns: [String], rows: [[String?]], affectedRows: Int) {
        self.columns = columns
        self.rows = rows
        self.affectedRows = affectedRows
    }
}
