import Foundation
import TestSupport
import Testing

@Suite("Read-only commands leave the store alone")
struct ReadOnlyTests {
    static let commands: [[String]] = [
        ["info"], ["info", "--json"], ["verify"], ["verify", "--json"], ["dump"],
        ["dump", "--format", "json", "--full-blobs"], ["history"], ["history", "--json"], ["meta"],
        ["meta", "get", "author"], ["meta", "--json"],
    ]

    @Test("The store's bytes, modification time and neighbours are unchanged", arguments: commands)
    func unchanged(_ command: [String]) throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"), withBlob: true)
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSince1970: 1_000_000_000)],
            ofItemAtPath: fixture.path
        )
        let before = try FileState(fixture.path)
        let index = try FileState(fixture.path + "-index")
        let listing = directory.listing()
        var arguments = [command[0], fixture.path]
        arguments.append(contentsOf: command.dropFirst())
        let run = try runTool(arguments: arguments)
        #expect(run.status == 0, "\(run.standardError)")
        #expect(try FileState(fixture.path) == before)
        #expect(try FileState(fixture.path + "-index") == index)
        #expect(directory.listing() == listing)
    }

    @Test("Read-only commands do not cut off a torn tail", arguments: commands)
    func tornTailKept(_ command: [String]) throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"))
        _ = try appendTornTail(to: fixture.path)
        let before = try FileState(fixture.path)
        var arguments = [command[0], fixture.path]
        arguments.append(contentsOf: command.dropFirst())
        let run = try runTool(arguments: arguments)
        #expect(run.status == (command[0] == "verify" ? 65 : 0), "\(run.standardError)")
        #expect(try FileState(fixture.path) == before)
    }
}
