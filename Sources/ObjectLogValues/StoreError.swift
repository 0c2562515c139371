import Foundation

/// An error of a store below the engine: of the log store's files, or one the stores share
/// (missing external data).
///
/// Every error names what failed in a sentence (`message`), and where known the file (`path`)
/// and the byte offset (`offset`) of the damage. Callers can switch on `code`.
///
/// ```swift
/// do {
///     let store = try LogStore.open(path: "app.olog")
/// } catch let error where error.code == .locked {
///     print("another process is writing to the store")
/// }
/// ```
///
/// The error is a `LocalizedError`, so `localizedDescription` (what most logging and alert
/// code shows) is its ``description`` too, not Foundation's "The operation could not be
/// completed".
public struct StoreError: Error, Sendable, CustomStringConvertible, Equatable, LocalizedError {
    /// What kind of failure this is.
    public enum Code: String, Sendable, Equatable {
        /// The file does not exist (and was not to be created).
        case notFound
        /// The file exists but is not an ObjectLog store (wrong magic, empty, a directory…).
        case notAStore
        /// The store was written by a newer major format version.
        case unsupportedVersion
        /// A checksum or structure check failed before the last valid commit: data is damaged.
        case corrupt
        /// Another process holds the store open for writing.
        case locked
        /// A write was attempted on a store opened read-only.
        case readOnly
        /// An earlier `fsync` failed; the handle refuses further writes until reopened.
        case poisoned
        /// The operating system reported an I/O error.
        case io
        /// A value exceeds a format limit (record length, key count…).
        case tooLarge
        /// An external blob file named by a record is missing or does not match its checksum.
        case missingBlob
        /// An argument is outside what the call accepts.
        case invalidArgument
        /// The store has been closed.
        case closed
    }

    /// What kind of failure this is.
    public var code: Code
    /// What went wrong, in a sentence that names the file, offset or object where known.
    public var message: String
    /// The file concerned, if any.
    public var path: String?
    /// The byte offset of the damage in `path`, if the error is about damaged bytes.
    public var offset: UInt64?
    /// The `errno` value behind an `.io` error, if any.
    public var errno: Int32?

    /// Creates an error.
    public init(
        _ code: Code,
        _ message: String,
        path: String? = nil,
        offset: UInt64? = nil,
        errno: Int32? = nil
    ) {
        self.code = code
        self.message = message
        self.path = path
        self.offset = offset
        self.errno = errno
    }

    /// The message, prefixed with the file and offset when known.
    public var description: String {
        var parts: [String] = []
        if let path { parts.append(path) }
        if let offset { parts.append("offset \(offset)") }
        return parts.isEmpty ? message : parts.joined(separator: ", ") + ": " + message
    }

    /// The same as ``description``: what `localizedDescription` shows.
    public var errorDescription: String? { description }
}
