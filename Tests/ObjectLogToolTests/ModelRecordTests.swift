import Foundation
import ObjectLog
import ObjectLogStore
import TestSupport
import Testing

@Suite("The model a store records: which key wins, and schema records are not objects")
struct ModelRecordTests {
    @Test("every command that counts live objects leaves the schema records out")
    func schemaRecordsAreNotCounted() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeEngineStore(at: directory.file("engine.olog"))
        let path = fixture.path
        let objects = fixture.sampleKeys.count + 1
        let store = try LogStore.open(path: path)
        #expect(store.liveCount(entity: ModelHistory.schemaEntityTag) == 1)
        try store.close()

        #expect(try runTool("info", path, "--json").jsonObject()["liveObjects"] as? Int == objects)
        #expect(
            try runTool("verify", path, "--json").jsonObject()["liveObjects"] as? Int == objects
        )
        #expect(
            try runTool("verify", path).standardOutput.contains(", \(objects) live object(s), ")
        )
        #expect(try runTool("dump", path).lines.count == objects)
        let output = directory.file("copy.olog")
        let recover = try runTool("recover", path, "--output", output)
        #expect(
            recover.lines.first == "recovered \(objects) live object(s) from \(path) into \(output)"
        )
        let compact = try runTool("compact", path, "--json")
        #expect(try compact.jsonObject()["objects"] as? Int == objects)
    }

    @Test("when the metadata holds both model keys, ObjectLog.modelVersions wins")
    func versionListWins() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeEngineStore(at: directory.file("engine.olog"))
        let path = fixture.path
        // A description of another model under the old key, beside the version list.
        let other = ModelSchema(entities: [
            ModelSchema.Entity(
                name: "Other",
                tag: 1,
                properties: [.attribute("value", type: .int64)],
                uniquenessConstraints: []
            )
        ])
        let store = try LogStore.open(path: path)
        var transaction = Transaction()
        var metadata = store.metadata
        metadata[PersistentStoreCoordinator.modelKey] = .string(
            String(decoding: other.canonicalJSON(), as: UTF8.self)
        )
        transaction.metadata = metadata
        try store.commit(transaction)
        #expect(try ModelHistory.read(from: store)?.current?.schema.entity(named: "Sample") != nil)
        try store.close()

        let info = try runTool("info", path, "--json").jsonObject()
        let entities = try #require(info["entities"] as? [String: Any])
        #expect(Set(entities.keys) == ["Sample", "SampleGroup"])
        let dump = try runTool("dump", path, "--entity", "Sample")
        #expect(dump.status == 0)
        #expect(dump.lines.allSatisfy { $0.contains("\"name\":\"sample ") })
        var options = StoreOptions()
        options.readOnly = true
        let container = try PersistentContainer(path: path, for: sampleEntities, options: options)
        #expect(try container.newContext().fetch(Sample.self).count == fixture.sampleKeys.count)
        try container.close()
    }
}
