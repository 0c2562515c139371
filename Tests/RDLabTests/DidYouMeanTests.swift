import Testing

@Suite("rdlab suggests the likely name for an unknown command, model, preset, parameter or setting")
struct DidYouMeanTests {
    @Test(
        "a near miss gets 'did you mean', exit 64 and one line",
        arguments: [
            (["lsit"], "error: unknown command 'lsit' (did you mean 'list'?); use one of"),
            (["shwo", "x"], "error: unknown command 'shwo' (did you mean 'show'?)"),
            (
                ["run", "--model", "gray-scot"],
                "error: unknown value 'gray-scot' for '--model' (did you mean 'gray-scott'?); use gray-scott"
            ),
            (
                ["run", "--model", "fitzhugh"],
                "error: unknown value 'fitzhugh' for '--model' (did you mean 'fitzhugh-nagumo'?)"
            ),
            (
                ["run", "--model", "gray-scott", "--preset", "spot"],
                "error: gray-scott has no preset 'spot' (did you mean 'Spots'?); its presets are"
            ),
            (
                ["run", "--model", "gray-scott", "--set", "dvv=0.1"],
                "error: unknown parameter 'dvv' (did you mean 'dv'?); known parameters:"
            ),
            (
                ["run", "--model", "fitzhugh-nagumo", "--set", "epsilom=0.1"],
                "error: unknown parameter 'epsilom' (did you mean 'epsilon'?)"
            ),
            (
                ["settings", "get", "autor"],
                "error: unknown setting 'autor' (did you mean 'author'?); use author,"
            ),
            (
                ["settings", "set", "default-model", "grey-scott"],
                "error: unknown model 'grey-scott' (did you mean 'gray-scott'?); use gray-scott"
            ),
        ]
    )
    func suggestion(arguments: [String], message: String) throws {
        let result = try RDLabProcess.run(arguments)
        #expect(result.exitCode == 64)
        #expect(result.errorLines.count == 1)
        #expect(result.errorLines.first?.hasPrefix(message) == true, "\(result.standardError)")
    }

    @Test("a word far from every name gets no suggestion")
    func farAway() throws {
        let result = try RDLabProcess.run(["xyzzy"])
        #expect(result.exitCode == 64)
        #expect(result.errorLines.count == 1)
        #expect(result.errorLines.first?.contains("did you mean") == false)
        let parameter = try RDLabProcess.run(["run", "--model", "gray-scott", "--set", "zzzz=1"])
        #expect(parameter.errorLines.first?.contains("did you mean") == false)
    }
}
