import Foundation
import Testing

@Suite("rdlab settings: unset keys exit as objectlog meta get does; malformed values are reported")
struct SettingsTests {
    @Test("get of an unset setting exits 1, the status of objectlog meta get of a missing key")
    func unset() throws {
        let lab = try LabFixture()
        try lab.succeed([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--save", "a",
        ])
        let rdlab = try lab.rdlab(["settings", "get", "author"])
        let objectlog = try RDLabProcess.runObjectLog(["meta", lab.store, "get", "rdlab.author"])
        #expect(objectlog.exitCode == 1)
        #expect(rdlab.exitCode == objectlog.exitCode)
        #expect(rdlab.standardOutput == "")
        #expect(
            rdlab.errorLines == [
                "error: 'author' is not set; set it with 'rdlab settings set author <value>'"
            ]
        )
        #expect(try RDLabProcess.run(["settings", "--help"]).standardOutput.contains("exits 1"))
    }

    @Test(
        "a value set through objectlog meta that the setting cannot take is reported as malformed"
    )
    func malformed() throws {
        let lab = try LabFixture()
        try lab.succeed([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--save", "a",
        ])
        for (key, value) in [("rdlab.defaultSize", "huge"), ("rdlab.defaultModel", "brusselator")] {
            let set = try RDLabProcess.runObjectLog(["meta", lab.store, "set", key, value])
            #expect(set.exitCode == 0, "\(set.standardError)")
        }
        let listing = try lab.succeed(["settings"])
        #expect(listing.lines.contains("default-size = (malformed)"))
        #expect(listing.lines.contains("default-model = (malformed)"))
        #expect(!listing.standardOutput.contains("default-size = (not set)"))
        #expect(
            listing.errorLines == [
                "warning: the setting default-model (metadata rdlab.defaultModel) holds \"brusselator\", which is not a model name (gray-scott, fitzhugh-nagumo or belousov-zhabotinsky); it is ignored until set again with 'rdlab settings set default-model <value>'",
                "warning: the setting default-size (metadata rdlab.defaultSize) holds \"huge\", which is not an integer from 1 to 8192; it is ignored until set again with 'rdlab settings set default-size <value>'",
            ]
        )
        let get = try lab.rdlab(["settings", "get", "default-size"])
        #expect(get.exitCode == 65)
        #expect(get.errorLines.count == 1)
        #expect(
            get.errorLines.first?.hasPrefix(
                "error: the setting default-size (metadata rdlab.defaultSize) holds \"huge\""
            ) == true
        )

        // A run that would use the default warns and runs with the built-in one.
        let run = try lab.succeed(["run", "--model", "gray-scott", "--steps", "1", "--no-save"])
        #expect(run.errorLines.count == 1)
        #expect(run.errorLines.first?.hasPrefix("warning: the setting default-size") == true)
        #expect(run.lines.first?.contains("640 × 640") == true)

        // Other saves leave the malformed values alone; setting one replaces it.
        try lab.succeed(["edit", "a", "--tag", "t"])
        let stored = try RDLabProcess.runObjectLog(["meta", lab.store, "get", "rdlab.defaultSize"])
        #expect(stored.standardOutput == "huge\n")
        try lab.succeed(["settings", "set", "default-size", "32"])
        #expect(try lab.succeed(["settings", "get", "default-size"]).lines == ["32"])
        #expect(try lab.succeed(["settings"]).errorLines.count == 1)
    }
}
