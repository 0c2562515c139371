import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Text written to a file descriptor (standard output or error) or kept in memory (tests), which
/// remembers the first write that failed instead of trapping, as `FileHandle.write` does.
///
/// A full disk or a closed pipe (EPIPE, once SIGPIPE is ignored: see ``StandardStreams``) ends
/// the output: later text is dropped, and ``failureDescription`` says why, so that the tool can
/// finish its work and then report the failure with a non-zero exit.
///
/// ```swift
/// let output = TextOutput.descriptor(STDOUT_FILENO)
/// output.writeLine("hello")
/// output.flush()
/// if let reason = output.failureDescription { print("cannot write: \(reason)") }
/// ```
public final class TextOutput: Sendable {
    /// When written text reaches the file descriptor.
    public enum Buffering: Sendable {
        /// Collected and written in chunks of 64 KiB and on ``TextOutput/flush()``, so that a
        /// command printing many lines makes few system calls.
        case chunks
        /// Written by each ``TextOutput/write(_:)`` at once, so that the text interleaves with
        /// other writers of the same file (standard error, a progress line) in the order written.
        case none
    }

    private enum Destination {
        case descriptor(Int32)
        case memory
    }

    private struct State {
        var buffer: [UInt8] = []
        /// The `errno` of the first failed write, or 0; later output is dropped.
        var failure: Int32 = 0
        /// What was written, for a memory stream.
        var captured: [UInt8] = []
    }

    /// The buffer size at which ``Buffering/chunks`` writes out.
    private static let chunkSize = 1 << 16

    private let destination: Destination
    private let buffering: Buffering
    private let state: Mutex<State>

    private init(destination: Destination, buffering: Buffering) {
        self.destination = destination
        self.buffering = buffering
        var state = State()
        if buffering == .chunks { state.buffer.reserveCapacity(Self.chunkSize) }
        self.state = Mutex(state)
    }

    /// A stream writing to a file descriptor, buffered as `buffering` says.
    public static func descriptor(_ descriptor: Int32, buffering: Buffering = .chunks) -> TextOutput
    {
        TextOutput(destination: .descriptor(descriptor), buffering: buffering)
    }

    /// A stream that keeps what is written (and flushed) in ``captured``.
    public static func memory() -> TextOutput {
        TextOutput(destination: .memory, buffering: .chunks)
    }

    /// Whether the stream is a terminal (`isatty`); a memory stream never is.
    public var isTerminal: Bool {
        switch destination {
        case .descriptor(let descriptor): isatty(descriptor) == 1
        case .memory: false
        }
    }

    /// What was written to a memory stream and flushed.
    public var captured: [UInt8] {
        state.withLock { $0.captured }
    }

    /// What was written to a memory stream and flushed, as text.
    public var capturedText: String {
        String(decoding: captured, as: UTF8.self)
    }

    /// Appends `text`.
    public func write(_ text: String) {
        state.withLock { state in
            state.buffer.append(contentsOf: text.utf8)
            drainIfDue(&state)
        }
    }

    /// Appends `text` and a newline.
    public func writeLine(_ text: String = "") {
        state.withLock { state in
            state.buffer.append(contentsOf: text.utf8)
            state.buffer.append(UInt8(ascii: "\n"))
            drainIfDue(&state)
        }
    }

    /// Writes out everything buffered.
    public func flush() {
        state.withLock { drain(&$0) }
    }

    /// Why writing failed (`strerror`), or nil if every write so far succeeded.
    public var failureDescription: String? {
        let failure = state.withLock { $0.failure }
        return failure == 0 ? nil : String(cString: strerror(failure))
    }

    /// Whether a write has failed (see ``failureDescription``).
    public var hasFailed: Bool {
        state.withLock { $0.failure != 0 }
    }

    deinit { flush() }

    private func drainIfDue(_ state: inout State) {
        if buffering == .none || state.buffer.count >= Self.chunkSize { drain(&state) }
    }

    private func drain(_ state: inout State) {
        guard !state.buffer.isEmpty else { return }
        defer { state.buffer.removeAll(keepingCapacity: true) }
        guard state.failure == 0 else { return }
        switch destination {
        case .memory:
            state.captured.append(contentsOf: state.buffer)
        case .descriptor(let descriptor):
            state.failure = writeAll(state.buffer, to: descriptor)
        }
    }
}

/// Writes all of `bytes` to `descriptor`, and returns 0 or the `errno` of the write that failed.
///
/// See: man 2 write. A short write is continued and EINTR is retried; anything else (a full disk,
/// a closed pipe) ends the output.
private func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> Int32 {
    bytes.withUnsafeBytes { buffer in
        guard let base = buffer.baseAddress else { return 0 }
        var done = 0
        while done < buffer.count {
            let result = write(descriptor, base + done, buffer.count - done)
            if result < 0 {
                if errno == EINTR { continue }
                return errno
            }
            done += result
        }
        return 0
    }
}
