import CommandLineKit
import Testing

@Suite("Exit codes and command errors")
struct ExitCodeTests {
    @Test(
        "Each exit code has its sysexits.h value and prints as its number",
        arguments: [
            (ExitCode.success, 0), (.failure, 1), (.usage, 64), (.dataError, 65), (.noInput, 66),
            (.cannotCreate, 73), (.ioError, 74), (.interrupted, 130),
        ] as [(ExitCode, Int32)]
    )
    func values(code: ExitCode, value: Int32) {
        #expect(code.rawValue == value)
        #expect(code.description == String(value))
        #expect(ExitCode(rawValue: value) == code)
    }

    @Test("A usage error exits 64 and, given the command, points at its help")
    func usageErrors() {
        let plain = CommandError.usage("missing value for '--steps'")
        #expect(plain.exitCode == .usage)
        #expect(plain.message == "missing value for '--steps'")
        #expect(plain.description == "error: missing value for '--steps'")

        let pointing = CommandError.usage("missing argument <path>", command: "objectlog info")
        #expect(pointing.exitCode == .usage)
        #expect(pointing.message == "missing argument <path>; see 'objectlog info --help'")
    }

    @Test("An error keeps the exit code it was given")
    func otherCodes() {
        let error = CommandError("'out.png' exists", exitCode: .cannotCreate)
        #expect(error.exitCode.rawValue == 73)
        #expect(error.description == "error: 'out.png' exists")
    }
}
