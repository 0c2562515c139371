import Foundation
import ObjectLogStore
import Testing

#if canImport(Glibc)
import Glibc
import TestSupport
#endif

/// Runs `objectlog` with its standard output on a pseudo-terminal, as in an interactive shell.
///
/// - Returns: The exit status and everything written to the terminal.
func runToolOnTerminal(
    _ arguments: [String],
    environment: [String: String] = [:]
) throws
    -> (status: Int32, output: String)
{
    // The pseudo-terminal calls are not in the Glibc module (they need _XOPEN_SOURCE), so
    // they are looked up in the C library by name.
    let master = PseudoTerminal.openMaster(O_RDWR | O_NOCTTY | O_CLOEXEC)
    guard master >= 0, PseudoTerminal.grant(master) == 0, PseudoTerminal.unlock(master) == 0,
        let name = PseudoTerminal.slaveName(master)
    else { throw ToolTestError("cannot open a pseudo-terminal") }
    defer { close(master) }
    // Held open here so the terminal stays up while the tool runs and after it exits.
    let slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)
    guard slave >= 0 else { throw ToolTestError("cannot open the pseudo-terminal's slave side") }
    defer { close(slave) }
    let run = try ToolLauncher.shared.run(
        arguments: arguments,
        directory: nil,
        environment: environment,
        outputPath: name
    )
    // The tool has exited: what it wrote is waiting on the master side.
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        var request = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
        guard poll(&request, 1, 100) > 0 else { break }
        let count = read(master, &buffer, buffer.count)
        guard count > 0 else { break }
        bytes.append(contentsOf: buffer[0..<count])
    }
    return (run.status, String(decoding: bytes, as: UTF8.self))
}

/// `posix_openpt`, `grantpt`, `unlockpt` and `ptsname` from the C library.
enum PseudoTerminal {
    private static func function<T>(_ name: String, as type: T.Type) -> T {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else {
            fatalError("the C library has no \(name)")
        }
        return unsafeBitCast(symbol, to: type)
    }

    static func openMaster(_ flags: Int32) -> Int32 {
        function("posix_openpt", as: (@convention(c) (Int32) -> Int32).self)(flags)
    }

    static func grant(_ descriptor: Int32) -> Int32 {
        function("grantpt", as: (@convention(c) (Int32) -> Int32).self)(descriptor)
    }

    static func unlock(_ descriptor: Int32) -> Int32 {
        function("unlockpt", as: (@convention(c) (Int32) -> Int32).self)(descriptor)
    }

    static func slaveName(_ descriptor: Int32) -> String? {
        let name = function(
            "ptsname",
            as: (@convention(c) (Int32) -> UnsafeMutablePointer<CChar>?).self
        )(descriptor)
        return name.map { String(cString: $0) }
    }
}

/// A store of about `megabytes` MiB of live objects, with as much again of dead versions.
func makeLargeStore(at path: String, megabytes: Int) throws {
    let store = try openWriter(path, durable: false)
    let keys = store.allocateKeys(megabytes)
    let payload = [UInt8](repeating: 0x5A, count: 1 << 20)
    for round in 0..<2 {
        var transaction = Transaction()
        for key in keys {
            transaction.put(key: key, entity: 1, payload: payload, isInsert: round == 0)
        }
        try store.commit(transaction)
    }
    try store.close()
}

@Suite("compact's progress bar")
struct TerminalTests {
    @Test("On a terminal, a compaction longer than the delay draws a bar, then clears it")
    func barOnTerminal() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("large.olog")
        // Over 8 MiB of live records, so the store reports progress before it finishes.
        try makeLargeStore(at: path, megabytes: 20)
        let run = try runToolOnTerminal(
            ["compact", path],
            environment: ["OBJECTLOG_PROGRESS_DELAY_MS": "0"]
        )
        #expect(run.status == 0)
        #expect(run.output.contains("\r[" + String(repeating: "#", count: 40) + "] 100%"))
        #expect(run.output.contains("%\r" + String(repeating: " ", count: 47) + "\rcompacted "))
    }

    @Test("On a terminal, a compaction shorter than a second draws no bar")
    func noBarWhenQuick() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("small.olog"))
        let run = try runToolOnTerminal(["compact", fixture.path])
        #expect(run.status == 0)
        #expect(run.output.hasPrefix("compacted \(fixture.path)"))
        #expect(!run.output.contains("%\r"))
    }

    @Test("Without a terminal there is no bar, however long compaction takes")
    func noBarInPipe() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("large.olog")
        try makeLargeStore(at: path, megabytes: 20)
        let run = try runTool(
            arguments: ["compact", path],
            environment: ["OBJECTLOG_PROGRESS_DELAY_MS": "0"]
        )
        let output = run.standardOutput
        #expect(run.status == 0)
        #expect(output.hasPrefix("compacted \(path)"))
        #expect(!output.contains("\r"))
    }
}
