import Foundation
import Testing

@Suite("an empty --store is a clear error that leaves no file behind")
struct StorePathTests {
    @Test(
        "every store command refuses --store '' with exit 64 and writes nothing in the working directory",
        arguments: [
            ["run", "--model", "gray-scott", "--size", "8", "--steps", "1"],
            ["run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--save", "x"],
            ["resume"], ["list"], ["show", "x"], ["edit", "x", "--tag", "t"], ["rename", "a", "b"],
            ["delete", "x"], ["browse"], ["settings"], ["settings", "set", "author", "A"],
            ["demo", "--size", "8", "--steps", "1"],
        ]
    )
    func emptyStore(arguments: [String]) throws {
        let directory = LabFixture.makeDirectory()
        let result = try RDLabProcess.run(arguments + ["--store", ""], directory: directory.path)
        #expect(result.exitCode == 64, "\(result.standardError)")
        #expect(
            result.errorLines == [
                "error: the store path is empty; give a file name with --store, or leave --store out for ./rdlab.olog"
            ]
        )
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == [])
    }
}
