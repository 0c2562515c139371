import Foundation
import ObjectLogStore
import TestSupport
import Testing

@Suite("backup")
struct BackupCommandTests {
    /// A store with `count` objects, each referring to an external blob of its own, still open
    /// for writing (as an app would hold it).
    private static func liveStore(at path: String, count: Int) throws -> LogStore {
        let store = try LogStore.open(path: path)
        var transaction = Transaction()
        for key in store.allocateKeys(count) {
            let blob = try store.writeBlob(Data(repeating: UInt8(key), count: 2_000))
            transaction.put(
                key: key,
                entity: 1,
                payload: [UInt8(key)],
                blobs: [blob],
                isInsert: true
            )
        }
        transaction.metadata = ["owner": .string("lab")]
        try store.commit(transaction)
        return store
    }

    @Test(
        "backup copies a store an app holds open, blobs and index included, and the copy verifies"
    )
    func copiesALiveStore() throws {
        let directory = TemporaryDirectory()
        let source = directory.file("live.olog")
        let store = try Self.liveStore(at: source, count: 12)
        let destination = directory.file("copy.olog")
        let run = try runTool("backup", source, destination)
        #expect(run.status == 0, "\(run.standardError)")
        #expect(run.standardError.isEmpty)
        #expect(run.lines.first == "backed up \(source) to \(destination) (as of transaction 1)")
        #expect(run.lines.contains { $0.hasSuffix("live objects:  12") })
        #expect(run.lines.contains { $0.contains("blobs:") && $0.contains("12 (") })
        try store.close()

        let copy = try LogStore.open(path: destination)
        #expect(copy.indexState == .loaded)
        #expect(copy.liveCount(entity: nil) == 12)
        #expect(copy.metadata == ["owner": .string("lab")])
        for key in copy.liveKeys(entity: nil) {
            let (payload, blobs) = try #require(try copy.readObject(key))
            #expect(try copy.readBlob(blobs[0]) == Data(repeating: payload[0], count: 2_000))
        }
        try copy.close()
        let verify = try runTool("verify", destination)
        #expect(verify.status == 0, "\(verify.standardOutput)")

        let json = try runTool("backup", source, directory.file("second.olog"), "--json")
        #expect(json.status == 0)
        let report = try #require(try json.json() as? [String: Any])
        #expect(report["objects"] as? Int == 12)
        #expect(report["blobs"] as? Int == 12)
        #expect(report["transaction"] as? Int == 1)
        #expect(report["restarts"] as? Int == 0)
    }

    @Test("an existing destination exits 73 and is left alone; a missing store exits 66")
    func refusals() throws {
        let directory = TemporaryDirectory()
        let source = directory.file("live.olog")
        try Self.liveStore(at: source, count: 2).close()
        let destination = directory.file("taken.olog")
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: destination))
        let taken = try runTool("backup", source, destination)
        #expect(taken.status == 73)
        #expect(
            taken.standardError
                == "error: \(destination): already exists; choose a new destination\n"
        )
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == Data("keep me".utf8))
        #expect(!FileManager.default.fileExists(atPath: destination + "-blobs"))

        let missing = try runTool("backup", directory.file("nope.olog"), directory.file("x.olog"))
        #expect(missing.status == 66)
        #expect(!FileManager.default.fileExists(atPath: directory.file("x.olog")))

        let usage = try runTool("backup", source)
        #expect(usage.status == 64)
    }
}
