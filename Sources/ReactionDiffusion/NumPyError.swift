/// A `.npy` file that cannot be read or written.
public struct NumPyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// One sentence naming the file (when known) and what is wrong with it.
    public var message: String

    /// Creates an error with the sentence that describes it.
    public init(_ message: String) {
        self.message = message
    }

    /// The ``message``.
    public var description: String { message }
}
