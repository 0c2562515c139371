/// A parameter name that does not exist, or a value outside the range the solver accepts.
public struct ParameterError: Error, Sendable, Hashable, CustomStringConvertible {
    /// One sentence saying which parameter is wrong and what is accepted.
    public var message: String

    /// Creates an error with the sentence that describes it.
    public init(_ message: String) {
        self.message = message
    }

    /// The ``message``.
    public var description: String { message }
}
