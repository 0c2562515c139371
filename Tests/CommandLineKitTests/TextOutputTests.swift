import CommandLineKit
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("Output streams report writes that fail")
struct TextOutputTests {
    /// A temporary file, removed when the test is done.
    final class TemporaryFile {
        let descriptor: Int32
        private let path: String

        init() throws {
            var template = Array("/tmp/CommandLineKitTests-XXXXXX".utf8CString)
            descriptor = mkstemp(&template)
            try #require(descriptor >= 0)
            // mkstemp replaced the X's; the array still ends with the terminating NUL.
            path = String(
                decoding: template.dropLast().map { UInt8(bitPattern: $0) },
                as: UTF8.self
            )
        }

        /// The file's size in bytes.
        var size: Int {
            var status = stat()
            return fstat(descriptor, &status) == 0 ? Int(status.st_size) : -1
        }

        deinit {
            close(descriptor)
            unlink(path)
        }
    }

    @Test("A memory stream keeps what was written once it is flushed")
    func memory() {
        let output = TextOutput.memory()
        output.write("a")
        output.writeLine("b")
        output.writeLine()
        #expect(output.capturedText.isEmpty, "buffered until flushed")
        output.flush()
        #expect(output.capturedText == "ab\n\n")
        #expect(output.captured == Array("ab\n\n".utf8))
        #expect(!output.isTerminal)
        #expect(!output.hasFailed)
        #expect(output.failureDescription == nil)
    }

    @Test("Unbuffered text reaches the file at once; chunked text at flush or at 64 KiB")
    func buffering() throws {
        let file = try TemporaryFile()
        let unbuffered = TextOutput.descriptor(file.descriptor, buffering: .none)
        unbuffered.writeLine("now")
        #expect(file.size == 4)

        let chunked = TextOutput.descriptor(file.descriptor, buffering: .chunks)
        chunked.writeLine("later")
        #expect(file.size == 4)
        chunked.flush()
        #expect(file.size == 10)
        chunked.write(String(repeating: "x", count: (1 << 16) - 1))
        #expect(file.size == 10)
        chunked.write("x")
        #expect(file.size == 10 + (1 << 16), "a full chunk is written without a flush")
        #expect(!chunked.hasFailed)
    }

    @Test("A full device: the failure is kept, later text dropped, and nothing traps")
    func fullDevice() throws {
        let descriptor = open("/dev/full", O_WRONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        for buffering in [TextOutput.Buffering.chunks, .none] {
            let output = TextOutput.descriptor(descriptor, buffering: buffering)
            output.writeLine("lost")
            output.flush()
            #expect(output.hasFailed)
            #expect(output.failureDescription == String(cString: strerror(ENOSPC)))
            output.writeLine("also lost")
            output.flush()
            #expect(output.failureDescription == String(cString: strerror(ENOSPC)))
        }
    }

    @Test("A closed pipe is EPIPE once SIGPIPE is ignored, not the end of the process")
    func closedPipe() throws {
        StandardStreams.ignoreBrokenPipeSignal()
        var descriptors: [Int32] = [0, 0]
        try #require(pipe(&descriptors) == 0)
        close(descriptors[0])
        defer { close(descriptors[1]) }
        let output = TextOutput.descriptor(descriptors[1], buffering: .none)
        output.writeLine("nobody reads this")
        #expect(output.failureDescription == String(cString: strerror(EPIPE)))
    }

    @Test(
        "A failed standard output is reported in one line and turns success into exit 74",
        arguments: [
            (ExitCode.success, ExitCode.ioError), (.dataError, .dataError), (.failure, .failure),
        ]
    )
    func exitStatus(status: ExitCode, expected: ExitCode) throws {
        let descriptor = open("/dev/full", O_WRONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        let errors = TextOutput.memory()
        let streams = StandardStreams(output: .descriptor(descriptor), error: errors)
        streams.output.writeLine("results")
        #expect(streams.exitStatus(after: status) == expected)
        #expect(
            errors.capturedText
                == "error: cannot write standard output: \(String(cString: strerror(ENOSPC)))\n"
        )
    }

    @Test("A failed standard error alone turns success into exit 74, silently")
    func failedErrorStream() throws {
        let descriptor = open("/dev/full", O_WRONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        let output = TextOutput.memory()
        let streams = StandardStreams(output: output, error: .descriptor(descriptor))
        streams.error.writeLine("warning: something")
        output.writeLine("results")
        #expect(streams.exitStatus(after: .success) == .ioError)
        #expect(output.capturedText == "results\n")
    }

    @Test("Streams that can be written leave the status alone")
    func healthyStreams() {
        let streams = StandardStreams(output: .memory(), error: .memory())
        streams.output.writeLine("results")
        #expect(streams.exitStatus(after: .success) == .success)
        #expect(streams.exitStatus(after: .usage) == .usage)
        #expect(streams.output.capturedText == "results\n")
        #expect(streams.error.capturedText.isEmpty)
    }
}
