import Foundation
import ObjectLogStore
import TestSupport
import Testing

/// The committed version 3.0 fixture holds a patch and records no model: nothing can merge the
/// patch with its base.
@Suite("A store of patches without a model: refused with exit 65, never changed")
struct PatchedStoreTests {
    @Test(
        "dump, compact and recover refuse the v3.0 fixture with exit 65 and one true line; nothing is written",
        arguments: [
            ["dump"], ["dump", "--entity", "1"], ["compact"], ["compact", "--json"], ["recover"],
        ]
    )
    func refused(_ command: [String]) throws {
        let directory = TemporaryDirectory()
        let path = try copyFormatFixture("v3.0.olog", to: directory)
        let before = try FileState(path)
        let files = try fileNames(in: directory)
        let run = try runTool(arguments: [command[0], path] + command.dropFirst())
        #expect(run.status == 65, "\(command): \(run.standardError)")
        #expect(run.standardOutput.isEmpty, "\(command)")
        let lines = run.standardError.split(separator: "\n")
        #expect(lines.count == 1, "\(command): \(run.standardError)")
        #expect(
            lines.first?.hasPrefix(
                "error: \(path): object #1 is stored as a patch, which only the store's model can "
                    + "merge with its base, and the store records no ObjectLog model; "
            ) == true,
            "\(command): \(run.standardError)"
        )
        // The command that failed is not offered as the remedy.
        #expect(!run.standardError.contains("objectlog \(command[0])"), "\(command)")
        #expect(try FileState(path) == before, "\(command)")
        #expect(try fileNames(in: directory) == files, "\(command)")
    }

    @Test("the read commands that need no merge still read the v3.0 fixture")
    func readable() throws {
        let directory = TemporaryDirectory()
        let path = try copyFormatFixture("v3.0.olog", to: directory)
        let before = try FileState(path)
        for command in ["info", "verify", "history"] {
            #expect(try runTool(command, path).status == 0, "\(command)")
        }
        let repair = try runTool("repair", path)
        #expect(repair.status == 0)
        #expect(repair.standardOutput == "\(path): not damaged; nothing to repair\n")
        #expect(try FileState(path) == before)
    }

    @Test("help says which exit code a store that needs a model it lacks gets")
    func helpNamesTheExitCode() throws {
        // Help wraps its lines: compare the words.
        func words(_ run: ToolRun) -> String {
            run.standardOutput.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        }
        #expect(
            words(try runTool("help")).contains(
                "65 damaged data, not a store, or a store that cannot be read without a model it "
                    + "does not record"
            )
        )
        for command in ["dump", "compact", "recover"] {
            #expect(words(try runTool("help", command)).contains("exit 65"), "\(command)")
        }
    }
}
