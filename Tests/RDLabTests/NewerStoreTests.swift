import Foundation
import Testing

/// `Fixtures/rdlab-newer-model.olog`: a store with one configuration ("spots") that a newer
/// rdlab went on to write with a model of its own (version 2, which adds an entity).
@Suite("rdlab refuses a store written by a newer rdlab")
struct NewerStoreTests {
    @Test(
        "every command exits 65 naming both model versions and suggesting an upgrade; the store is unchanged",
        arguments: [
            ["list"], ["show", "spots"], ["resume", "spots", "--steps", "1"],
            ["run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--save", "b"],
            ["edit", "spots", "--notes", "x"], ["delete", "spots"], ["settings"],
        ]
    )
    func refused(arguments: [String]) throws {
        let lab = try LabFixture()
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/rdlab-newer-model.olog")
        try FileManager.default.copyItem(atPath: fixture.path, toPath: lab.store)
        let version = try RDLabProcess.run(["--version"]).standardOutput
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let before = lab.contents()
        let result = try lab.rdlab(arguments)
        #expect(result.exitCode == 65, "\(arguments): \(result.standardError)")
        #expect(
            result.errorLines == [
                "error: the store '\(lab.store)' was written by a newer rdlab (model version 2, "
                    + "0ea4d7f535afb09f) than this one (\(version), model version 1, "
                    + "e11be8d41ab08e28); upgrade rdlab to open it: this one neither reads nor "
                    + "writes it"
            ],
            "\(arguments)"
        )
        #expect(result.standardOutput.isEmpty)
        #expect(lab.contents() == before, "\(arguments)")
    }
}
