import Testing

@Suite("rdlab --version")
struct VersionTests {
    @Test("prints 'rdlab <version>' and exits 0; extra arguments are a usage error")
    func version() throws {
        let result = try RDLabProcess.run(["--version"])
        #expect(result.exitCode == 0)
        #expect(result.lines.count == 1)
        let words = result.lines.first?.split(separator: " ") ?? []
        #expect(words.first == "rdlab")
        #expect(words.count == 2 && words[1].split(separator: ".").count == 3, "\(result.lines)")
        #expect(result.standardError == "")
        // The same version objectlog prints.
        let objectlog = try RDLabProcess.runObjectLog(["--version"])
        #expect(objectlog.lines.last.map { $0.hasSuffix(String(words.last ?? "")) } == true)

        let extra = try RDLabProcess.run(["--version", "run"])
        #expect(extra.exitCode == 64)
        #expect(extra.errorLines == ["error: '--version' takes nothing else; see 'rdlab --help'"])
        #expect(try RDLabProcess.run(["--help"]).standardOutput.contains("--version"))
    }
}
