import Foundation
import TestSupport
import Testing

/// `--set` takes only the parameters of the configuration's model, and `edit` checks only the
/// values it changes, with the built `rdlab`.
@Suite("Parameters belong to their model")
struct ParameterCheckTests {
    @Test("run refuses another model's parameter, naming the model's own")
    func runRefusesForeignParameter() throws {
        let result = try RDLabProcess.run([
            "run", "--model", "gray-scott", "--set", "a0=1", "--size", "8", "--steps", "1",
            "--no-save",
        ])
        #expect(result.exitCode == 64)
        #expect(
            result.errorLines == [
                "error: gray-scott has no parameter 'a0'; its parameters are f, k, du, dv"
            ]
        )
    }

    @Test("edit refuses another model's parameter, and blames only the values it changes")
    func editChecksWhatChanges() throws {
        let directory = TemporaryDirectory()
        let store = directory.file("lab.olog")
        let saved = try RDLabProcess.run([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--save", "spots",
            "--store", store,
        ])
        try #require(saved.exitCode == 0)

        let foreign = try RDLabProcess.run(["edit", "spots", "--set", "alpha=-3", "--store", store])
        #expect(foreign.exitCode == 64)
        #expect(
            foreign.errorLines == [
                "error: gray-scott has no parameter 'alpha'; its parameters are f, k, du, dv"
            ]
        )

        let forced = try RDLabProcess.run([
            "edit", "spots", "--set", "f=2", "--force", "--store", store,
        ])
        #expect(forced.exitCode == 0)

        // Changing another value is not refused for the stored f = 2, which is reported as kept.
        let other = try RDLabProcess.run(["edit", "spots", "--set", "du=0.1", "--store", store])
        #expect(other.exitCode == 0)
        #expect(other.errorLines == ["warning: stored value kept: f = 2.0 is outside [0.0, 1.0]"])

        // A new out-of-range value is still refused without --force.
        let bad = try RDLabProcess.run(["edit", "spots", "--set", "k=5", "--store", store])
        #expect(bad.exitCode == 64)
        #expect(
            bad.errorLines == ["error: k = 5.0 is outside [0.0, 1.0]; pass --force to accept them"]
        )
    }
}
