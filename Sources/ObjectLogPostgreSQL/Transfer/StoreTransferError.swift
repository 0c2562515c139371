/// Why a copy between stores, or an open of a store it needs, is refused: what the tools turn
/// into one line and an exit code.
package struct StoreTransferError: Error, Sendable, CustomStringConvertible {
    /// What kind of refusal it is.
    package enum Code: Sendable, Equatable {
        /// The destination file (or a file beside it) exists already.
        case destinationExists
        /// The destination database holds an ObjectLog store already.
        case destinationHoldsStore
        /// The database holds no ObjectLog store to read.
        case noStore
        /// Another export into the same database is running.
        case busy
        /// A record of the source cannot be copied (an entity its model does not describe,
        /// or external data that is missing or does not match its address).
        case unreadableRecord
    }

    /// What kind of refusal it is.
    package var code: Code
    /// The message, on one line, naming the store (never a password).
    package var message: String

    /// A refusal.
    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The message.
    package var description: String { message }
}
