import Foundation
import Testing

@testable import ObjectLogStore

private let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("Fixtures")
private let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent()
    .deletingLastPathComponent()

@Suite("Format")
struct FormatTests {
    @Test("the committed version 1.0 fixture reads as FORMAT.md describes it")
    func fixtureV1() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("v1.0.olog")
        try FileManager.default.copyItem(
            atPath: fixtures.appendingPathComponent("v1.0.olog").path,
            toPath: path
        )
        var readOnly = StoreOptions()
        readOnly.readOnly = true
        let store = try LogStore.open(path: path, options: readOnly)
        #expect(store.formatVersion == "1.0")
        #expect(store.storeUUID == UUID(uuidString: "D26DCCAF-58C5-420E-B31B-DCA742884C9A"))
        #expect(store.transactionCount == 2)
        #expect(store.metadata == ["author": .string("Ada")])
        #expect(store.liveKeys(entity: nil) == [1])
        #expect(try store.readObject(1)?.payload == Array("world".utf8))
        #expect(store.location(of: 1)?.entity == 1)
        #expect(try LogStore.readMetadata(path: path) == ["author": .string("Ada")])
        let inspection = try StoreInspection(path: path)
        #expect(inspection.transactions.map(\.offset) == [512, 1024])
        #expect(inspection.transactions.map(\.inserted) == [2, 0])
        #expect(inspection.transactions.map(\.deleted) == [0, 1])
    }

    @Test("an independent reader written from FORMAT.md agrees with the store")
    func independentReader() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("r.olog")
        let store = try LogStore.open(path: path)
        var generator = SeededGenerator(seed: 3)
        var expected: [String: [UInt8]] = [:]
        for round in 0..<30 {
            var transaction = Transaction()
            let key = store.allocateKeys(1).lowerBound
            let payload = (0..<Int.random(in: 0..<20, using: &generator)).map { _ in
                UInt8.random(in: 0...255, using: &generator)
            }
            transaction.put(key: key, entity: UInt32(round % 3), payload: payload, isInsert: true)
            expected[String(key)] = payload
            if round % 4 == 3 {
                transaction.delete(key: key - 2, entity: UInt32((round - 2) % 3))
                expected[String(key - 2)] = nil
            }
            if round == 10 {
                transaction.metadata = [
                    "nested": .dictionary(["a": .array([.integer(1), .bool(true)])])
                ]
            }
            try store.commit(transaction)
            if round == 20 { try store.compact() }
        }
        try store.close()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", repositoryRoot.appendingPathComponent("tools/olog-read.py").path, path,
        ]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let live = try #require(json["live"] as? [String: [String: Any]])
        var read: [String: [UInt8]] = [:]
        for (key, object) in live {
            let hex = Array((object["value"] as? String ?? "").utf8)
            read[key] = stride(from: 0, to: hex.count, by: 2).map {
                UInt8(String(decoding: hex[$0..<($0 + 2)], as: UTF8.self), radix: 16)!
            }
        }
        #expect(read == expected)
        #expect(json["transactionCount"] as? Int == 30)
        let metadata = json["metadata"] as? [String: Any]
        #expect(metadata?["nested"] != nil)
    }
}
