#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A buffered text output: a file descriptor (standard output or error) or memory (tests).
///
/// Writes are collected and flushed in large chunks so `dump` of many objects makes few system
/// calls.
public final class TextOutput {
    private enum Destination {
        case descriptor(Int32)
        case memory
    }

    private let destination: Destination
    private var buffer: [UInt8] = []
    /// The `errno` of the first failed write, or 0; later output is dropped.
    private var failure: Int32 = 0
    /// What was written, for a memory stream.
    public private(set) var captured: [UInt8] = []

    private init(destination: Destination) {
        self.destination = destination
        buffer.reserveCapacity(1 << 16)
    }

    /// A stream writing to a file descriptor.
    public static func descriptor(_ descriptor: Int32) -> TextOutput {
        TextOutput(destination: .descriptor(descriptor))
    }

    /// A stream that keeps what is written in ``captured``.
    public static func memory() -> TextOutput {
        TextOutput(destination: .memory)
    }

    /// Whether the stream is a terminal (`isatty`); a memory stream never is.
    public var isTerminal: Bool {
        switch destination {
        case .descriptor(let descriptor): isatty(descriptor) == 1
        case .memory: false
        }
    }

    /// What was written to a memory stream, as text.
    public var capturedText: String {
        String(decoding: captured, as: UTF8.self)
    }

    /// Appends `text`.
    public func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 1 << 16 { flush() }
    }

    /// Appends `text` and a newline.
    public func writeLine(_ text: String = "") {
        buffer.append(contentsOf: text.utf8)
        buffer.append(UInt8(ascii: "\n"))
        if buffer.count >= 1 << 16 { flush() }
    }

    /// Writes out everything buffered.
    public func flush() {
        guard !buffer.isEmpty else { return }
        guard failure == 0 else {
            buffer.removeAll(keepingCapacity: true)
            return
        }
        switch destination {
        case .memory:
            captured.append(contentsOf: buffer)
        case .descriptor(let descriptor):
            buffer.withUnsafeBytes { bytes in
                var done = 0
                while done < bytes.count {
                    let result = systemWrite(
                        descriptor,
                        bytes.baseAddress! + done,
                        bytes.count - done
                    )
                    if result < 0 {
                        // See: man 2 write. EINTR is retried; anything else (a full disk, a
                        // closed pipe) ends the output, and the tool reports it (exit 74).
                        if errno == EINTR { continue }
                        failure = errno
                        return
                    }
                    done += result
                }
            }
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Why writing failed (`strerror`), or nil if every write so far succeeded.
    public var failureDescription: String? {
        failure == 0 ? nil : String(cString: strerror(failure))
    }

    deinit { flush() }
}

/// `write(2)`, named apart from ``TextOutput/write(_:)``.
private func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, bytes, count)
}
