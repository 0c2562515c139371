/// An error from the thumbnailer: bad arguments, bad pixel data, or a PNG that libpng rejected.
///
/// Catch by ``code``; ``message`` is one sentence that names what failed, suitable for an
/// `error: …` line.
///
/// ```swift
/// do {
///     let image = try Image(pngBytes: bytes)
/// } catch let error where error.code == .pngDecodingFailed {
///     print("error: \(error)")
/// }
/// ```
public struct ThumbnailError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure.
    public enum Code: Sendable, Equatable {
        /// An argument was out of range: a size, a channel count, a compression level, a
        /// field whose length does not match its dimensions.
        case invalidArgument
        /// The bytes do not start with the PNG signature.
        case notPNG
        /// The PNG header declares more pixels than the data present could hold, or more than
        /// the caller's limit.
        case imageTooLarge
        /// libpng failed to decode the data (truncated, corrupt, bad CRC, bad zlib stream).
        case pngDecodingFailed
        /// libpng failed to encode the image.
        case pngEncodingFailed
        /// Memory could not be allocated.
        case outOfMemory
    }

    /// The kind of failure.
    public var code: Code

    /// One sentence naming what failed, without a trailing period.
    public var message: String

    /// Makes an error with a code and a message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
