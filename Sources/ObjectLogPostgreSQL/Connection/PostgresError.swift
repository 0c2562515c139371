import Foundation

/// A failure of a PostgreSQL connection or statement, with what the server or libpq said.
///
/// Its message names where the connection went (``ConnectionTarget``) but never a password.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure it is.
    public enum Code: Sendable, Equatable {
        /// The connection string cannot be parsed.
        case invalidConnectionString
        /// The server cannot be reached, or refused the connection.
        case connectionFailed
        /// The connection was lost, or was already closed.
        case connectionLost
        /// The server refused the statement; ``PostgresError/sqlState`` says why.
        case statementFailed
        /// A parameter cannot be sent (text that holds a NUL character).
        case invalidParameter
    }

    /// What kind of failure it is.
    public var code: Code
    /// The message, on one line.
    public var message: String
    /// The server's SQLSTATE code (`23505` for a unique violation), for a refused statement.
    public var sqlState: String?
    /// The constraint a violation names, if any.
    public var constraint: String?
    /// The server's detail line, if any (for a unique violation, the key and its values).
    public var detail: String?

    /// Creates an error.
    public init(
        _ code: Code,
        _ message: String,
        sqlState: String? = nil,
        constraint: String? = nil,
        detail: String? = nil
    ) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.constraint = constraint
        self.detail = detail
    }

    /// Whether the server refused the statement for a unique violation (SQLSTATE `23505`), or
    /// for an exclusion constraint of equal values, the deferrable form of one (`23P01`).
    public var isUniqueViolation: Bool { sqlState == "23505" || sqlState == "23P01" }

    /// Whether the server accepts no writes: a hot standby, or a server in read-only mode
    /// (SQLSTATE `25006`).
    public var isReadOnlyServer: Bool { sqlState == Self.readOnlyState }

    /// The SQLSTATE of a write refused by a server that accepts none.
    static let readOnlyState = "25006"

    /// The message, and the SQLSTATE when there is one.
    public var description: String {
        sqlState.map { "\(message) (SQLSTATE \($0))" } ?? message
    }
}

/// libpq's message as one line: its messages end with a line break, and some span several.
func oneLine(_ message: String) -> String {
    message.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        .filter { !$0.isEmpty }.joined(separator: "; ")
}
