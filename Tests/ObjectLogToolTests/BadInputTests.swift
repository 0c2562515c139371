import Foundation
import ObjectLogStore
import TestSupport
import Testing

@Suite("Bad input files")
struct BadInputTests {
    /// Every subcommand form that takes a store.
    static let commands: [[String]] = [
        ["info"], ["info", "--json"], ["verify"], ["verify", "--json"], ["dump"], ["history"],
        ["compact"], ["meta"], ["meta", "get", "author"], ["meta", "set", "author", "Bob"],
        ["meta", "delete", "author"], ["recover", "--output", "out.olog"], ["repair"],
    ]

    /// Runs `command` on `path` (inserted after the subcommand name).
    static func run(
        _ command: [String],
        path: String,
        in directory: TemporaryDirectory
    ) throws
        -> ToolRun
    {
        var arguments = [command[0], path]
        arguments.append(contentsOf: command.dropFirst())
        return try runTool(arguments: arguments, in: directory)
    }

    static func expectOneErrorLine(_ run: ToolRun, containing fragment: String) {
        #expect(run.standardError.hasPrefix("error: "))
        #expect(run.standardError.hasSuffix("\n"))
        #expect(run.standardError.filter { $0 == "\n" }.count == 1, "\(run.standardError)")
        #expect(run.standardError.contains(fragment), "\(run.standardError)")
    }

    @Test("A missing file: exit 66, and nothing is created", arguments: commands)
    func missingFile(_ command: [String]) throws {
        let directory = TemporaryDirectory()
        let run = try Self.run(command, path: "missing.olog", in: directory)
        #expect(run.status == 66)
        #expect(run.standardOutput.isEmpty)
        Self.expectOneErrorLine(run, containing: "missing.olog: no store file at this path")
        #expect(directory.listing().isEmpty)
    }

    @Test("A directory: exit 65, and nothing is created", arguments: commands)
    func directoryPath(_ command: [String]) throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(
            atPath: directory.file("folder.olog"),
            withIntermediateDirectories: false
        )
        let run = try Self.run(command, path: "folder.olog", in: directory)
        #expect(run.status == 65)
        Self.expectOneErrorLine(
            run,
            containing: "folder.olog: is a directory, not an ObjectLog store"
        )
        #expect(directory.listing() == ["folder.olog"])
    }

    @Test("An empty file: exit 65, file unchanged", arguments: commands)
    func emptyFile(_ command: [String]) throws {
        let directory = TemporaryDirectory()
        let path = directory.file("empty.olog")
        _ = FileManager.default.createFile(atPath: path, contents: Data())
        let before = try FileState(path)
        let run = try Self.run(command, path: "empty.olog", in: directory)
        #expect(run.status == 65)
        Self.expectOneErrorLine(
            run,
            containing: "empty.olog: is empty, not an ObjectLog store"
        )
        #expect(try FileState(path) == before)
        #expect(directory.listing() == ["empty.olog"])
    }

    @Test("A file that is not a store: exit 65, file unchanged, no lock file", arguments: commands)
    func notAStore(_ command: [String]) throws {
        let directory = TemporaryDirectory()
        let path = directory.file("notes.txt")
        _ = FileManager.default.createFile(atPath: path, contents: Data("just some text\n".utf8))
        let before = try FileState(path)
        let run = try Self.run(command, path: "notes.txt", in: directory)
        #expect(run.status == 65)
        Self.expectOneErrorLine(run, containing: "notes.txt: offset 0: not an ObjectLog store")
        #expect(try FileState(path) == before)
        #expect(directory.listing() == ["notes.txt"])
    }

    @Test("A header cut short: exit 65, file unchanged", arguments: commands)
    func truncatedHeader(_ command: [String]) throws {
        let directory = TemporaryDirectory()
        let path = directory.file("cut.olog")
        _ = try makeFixtureStore(at: path)
        try? FileManager.default.removeItem(atPath: path + "-index")
        try? FileManager.default.removeItem(atPath: path + "-lock")
        let bytes = FileManager.default.contents(atPath: path)!
        try bytes.prefix(20).write(to: URL(fileURLWithPath: path))
        let before = try FileState(path)
        let run = try Self.run(command, path: "cut.olog", in: directory)
        #expect(run.status == 65)
        Self.expectOneErrorLine(run, containing: "cut.olog: offset 20: the header is cut short")
        #expect(try FileState(path) == before)
        #expect(directory.listing() == ["cut.olog"])
    }

    @Test(
        "A store corrupted before a valid commit: exit 65 naming the offset, file unchanged",
        arguments: commands.filter { !["verify", "recover", "repair"].contains($0[0]) }
    )
    func corruptStore(_ command: [String]) throws {
        let directory = TemporaryDirectory()
        let path = directory.file("bad.olog")
        _ = try makeFixtureStore(at: path)
        let offset = try corruptFirstRecord(of: path)
        let before = try FileState(path)
        let run = try Self.run(command, path: "bad.olog", in: directory)
        #expect(run.status == 65)
        #expect(run.standardError.hasPrefix("error: "))
        #expect(run.standardError.filter { $0 == "\n" }.count == 1, "\(run.standardError)")
        #expect(run.standardError.contains("offset \(offset)"), "\(run.standardError)")
        #expect(try FileState(path) == before)
    }

    @Test(
        "A torn tail: writing commands refuse (65) and leave the file as it is",
        arguments: [["compact"], ["meta", "set", "author", "Bob"], ["meta", "delete", "author"]]
    )
    func tornTailRefusedByWriters(_ command: [String]) throws {
        let directory = TemporaryDirectory()
        let path = directory.file("torn.olog")
        _ = try makeFixtureStore(at: path)
        let offset = try appendTornTail(to: path)
        let before = try FileState(path)
        let run = try Self.run(command, path: "torn.olog", in: directory)
        #expect(run.status == 65)
        Self.expectOneErrorLine(run, containing: "torn tail at offset \(offset)")
        #expect(run.standardError.contains("--discard-torn-tail"))
        #expect(try FileState(path) == before)
    }

    @Test(
        "A store held open by another writer: writing commands exit 74 and change nothing",
        arguments: [["compact"], ["meta", "set", "author", "Bob"], ["meta", "delete", "author"]]
    )
    func lockedStore(_ command: [String]) throws {
        let directory = TemporaryDirectory()
        let path = directory.file("busy.olog")
        _ = try makeFixtureStore(at: path)
        let writer = try openWriter(path)
        defer { try? writer.close() }
        let before = try FileState(path)
        let run = try Self.run(command, path: "busy.olog", in: directory)
        #expect(run.status == 74)
        Self.expectOneErrorLine(
            run,
            containing: "busy.olog: the store is being written by another process"
        )
        #expect(try FileState(path) == before)
        #expect(writer.metadata["author"] == .string("Ada"))
    }

    @Test(
        "A store held open by another writer: read-only commands still work",
        arguments: [
            ["info"], ["verify"], ["dump"], ["history"], ["meta"], ["meta", "get", "author"],
        ]
    )
    func lockedStoreReadable(_ command: [String]) throws {
        let directory = TemporaryDirectory()
        let path = directory.file("busy.olog")
        _ = try makeFixtureStore(at: path)
        let writer = try openWriter(path)
        defer { try? writer.close() }
        let run = try Self.run(command, path: "busy.olog", in: directory)
        #expect(run.status == 0, "\(run.standardError)")
        #expect(run.standardError.isEmpty)
    }
}
