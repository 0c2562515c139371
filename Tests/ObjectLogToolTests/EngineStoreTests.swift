import Foundation
import ObjectLog
import ObjectLogStore
import TestSupport
import Testing

// MARK: - A model written by the engine

struct SampleSettings: Codable, Equatable {
    var palette = "viridis"
    var gamma = 1.5
}

final class Sample: ManagedObject {
    @Attribute var name = ""
    @Attribute var count: Int32 = 0
    @Attribute var size: UInt64 = 0
    @Attribute var ratio = 0.0
    @Attribute var level: Float = 0
    @Attribute var enabled = false
    @Attribute var created = Date(timeIntervalSinceReferenceDate: 0)
    @Attribute var identifier = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    @Attribute var note: String? = nil
    @Attribute var small = Data()
    @Attribute var settings = SampleSettings()
    @Attribute(.externalStorage) var image: Data? = nil
    @Relationship var group: SampleGroup?
}

final class SampleGroup: ManagedObject {
    @Attribute var title = ""
    @Relationship(inverse: \Sample.group, deleteRule: .nullify) var samples: [Sample]
}

let sampleEntities: [ManagedObject.Type] = [Sample.self, SampleGroup.self]

/// What the engine fixture holds.
struct EngineFixture {
    var path: String
    var groupKey: ObjectKey
    var sampleKeys: [ObjectKey]
    var created: Date
    var identifier: UUID
    var small: Data
    var large: Data
    var image: Data
}

/// A store written through the engine: one group with three samples, one sample deleted and
/// one updated afterwards (so compaction has something to reclaim).
func makeEngineStore(at path: String) throws -> EngineFixture {
    let created = Date(timeIntervalSince1970: 1_700_000_000.5)
    let identifier = UUID()
    let small = Data([1, 2, 3, 250])
    let large = Data((0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
    let image = Data(
        (0..<(ExternalStorage.minimumByteCount + 10)).map { UInt8(truncatingIfNeeded: $0) }
    )
    let container = try PersistentContainer(path: path, for: sampleEntities)
    let context = container.newContext()
    let group = SampleGroup(context: context)
    group.title = "Spots"
    var samples: [Sample] = []
    for index in 0..<4 {
        let sample = Sample(context: context)
        sample.name = "sample \(index)"
        sample.count = Int32(-index)
        sample.size = UInt64(index) * 1_000_000_000_000
        sample.ratio = 0.25 * Double(index)
        sample.level = 0.1
        sample.enabled = index % 2 == 0
        sample.created = created
        sample.identifier = identifier
        sample.note = index == 1 ? "line one\nline \"two\"" : nil
        sample.small = index == 2 ? large : small
        sample.image = index == 3 ? image : nil
        sample.group = group
        samples.append(sample)
    }
    try context.save()
    context.delete(samples[0])
    samples[1].ratio = 9.5
    try context.save()
    let fixture = EngineFixture(
        path: path,
        groupKey: group.objectID.key,
        sampleKeys: samples.dropFirst().map(\.objectID.key),
        created: created,
        identifier: identifier,
        small: small,
        large: large,
        image: image
    )
    try container.close()
    return fixture
}

// MARK: - Tests

@Suite("Stores written by the engine")
struct EngineStoreTests {
    /// Each dumped line parsed, by id.
    static func dumpedObjects(_ run: ToolRun) throws -> [ObjectKey: [String: Any]] {
        var objects: [ObjectKey: [String: Any]] = [:]
        for line in run.lines {
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            )
            objects[ObjectKey(try #require(object["id"] as? Int))] = object
        }
        return objects
    }

    @Test("dump decodes attributes by name and gives relationship targets as ids")
    func dumpDecodes() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeEngineStore(at: directory.file("lab.olog"))
        let run = try runTool("dump", fixture.path)
        #expect(run.status == 0, "\(run.standardError)")
        #expect(run.standardError.isEmpty)
        let objects = try Self.dumpedObjects(run)
        #expect(Set(objects.keys) == Set(fixture.sampleKeys + [fixture.groupKey]))

        let group = try #require(objects[fixture.groupKey])
        #expect(group["entity"] as? String == "SampleGroup")
        #expect((group["attributes"] as? [String: Any])?["title"] as? String == "Spots")
        let groupRelationships = try #require(group["relationships"] as? [String: Any])
        #expect(
            (groupRelationships["samples"] as? [Int])?.map(ObjectKey.init) == fixture.sampleKeys
        )

        for (position, key) in fixture.sampleKeys.enumerated() {
            let index = position + 1
            let sample = try #require(objects[key])
            #expect(sample["entity"] as? String == "Sample")
            let attributes = try #require(sample["attributes"] as? [String: Any])
            #expect(attributes["name"] as? String == "sample \(index)")
            #expect(attributes["count"] as? Int == -index)
            #expect(attributes["size"] as? Int == index * 1_000_000_000_000)
            #expect(attributes["ratio"] as? Double == (index == 1 ? 9.5 : 0.25 * Double(index)))
            #expect(attributes["level"] as? Double == 0.1)
            #expect(attributes["enabled"] as? Bool == (index % 2 == 0))
            let created = try #require(attributes["created"] as? String)
            #expect(
                try Date(
                    created,
                    strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)
                )
                    == fixture.created
            )
            #expect(attributes["identifier"] as? String == fixture.identifier.uuidString)
            let settings = try #require(attributes["settings"] as? [String: Any])
            #expect(settings["palette"] as? String == "viridis")
            #expect(settings["gamma"] as? Double == 1.5)
            let relationships = try #require(sample["relationships"] as? [String: Any])
            #expect(relationships["group"] as? Int == Int(fixture.groupKey))
            switch index {
            case 1:
                #expect(attributes["note"] as? String == "line one\nline \"two\"")
                #expect(attributes["small"] as? String == fixture.small.base64EncodedString())
                #expect(attributes["image"] is NSNull)
            case 2:
                #expect(attributes["note"] is NSNull)
                let large = try #require(attributes["small"] as? [String: Any])
                #expect(large["length"] as? Int == fixture.large.count)
                #expect(large["sha256"] as? String == BlobID(contentsOf: fixture.large).hex)
            default:
                let image = try #require(attributes["image"] as? [String: Any])
                #expect(image["length"] as? Int == fixture.image.count)
                #expect(image["sha256"] as? String == BlobID(contentsOf: fixture.image).hex)
                #expect(image["base64"] == nil)
            }
        }

        let full = try Self.dumpedObjects(runTool("dump", fixture.path, "--full-blobs"))
        let third = try #require(full[fixture.sampleKeys[2]]?["attributes"] as? [String: Any])
        let image = try #require(third["image"] as? [String: Any])
        #expect(image["base64"] as? String == fixture.image.base64EncodedString())
        let second = try #require(full[fixture.sampleKeys[1]]?["attributes"] as? [String: Any])
        #expect(second["small"] as? String == fixture.large.base64EncodedString())
    }

    @Test("dump --entity takes the model's entity names; unknown names list the known ones")
    func dumpEntityNames() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeEngineStore(at: directory.file("lab.olog"))
        let groups = try runTool("dump", fixture.path, "--entity", "SampleGroup")
        #expect(groups.lines.count == 1)
        #expect(
            groups.lines[0].hasPrefix("{\"id\":\(fixture.groupKey),\"entity\":\"SampleGroup\",")
        )
        let samples = try runTool("dump", fixture.path, "--entity", "Sample", "--format", "json")
        #expect((try samples.json() as? [Any])?.count == fixture.sampleKeys.count)
        let unknown = try runTool("dump", fixture.path, "--entity", "Nope")
        #expect(unknown.status == 64)
        #expect(
            unknown.standardError
                == "error: no entity named 'Nope' in \(fixture.path) (entities: Sample, SampleGroup); "
                + "see 'objectlog dump --help'\n"
        )
    }

    @Test("info names the entities with their live counts and the model hash")
    func infoNames() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeEngineStore(at: directory.file("lab.olog"))
        let info = try runTool("info", fixture.path, "--json").jsonObject()
        #expect(
            info["entities"] as? [String: Int] == [
                "Sample": fixture.sampleKeys.count, "SampleGroup": 1,
            ]
        )
        let hash = try ManagedObjectModel(sampleEntities).versionHash
        #expect(info["modelHash"] as? String == hash)
        let text = try runTool("info", fixture.path).standardOutput
        #expect(text.contains("\n  Sample       \(fixture.sampleKeys.count)\n"))
        #expect(text.contains("\n  SampleGroup  1\n"))
        #expect(text.contains("model hash:      \(hash)\n"))
    }

    @Test("verify decodes every object and checks every relationship target")
    func verifyReferences() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeEngineStore(at: directory.file("lab.olog"))
        let clean = try runTool("verify", fixture.path)
        #expect(clean.status == 0, "\(clean.standardOutput)")
        // Each sample refers to the group, and the group to each sample.
        let references = 2 * fixture.sampleKeys.count
        #expect(clean.standardOutput.contains(", \(references) reference(s), "))

        // Remove the group beneath the engine: every sample's reference now dangles.
        let store = try openWriter(fixture.path)
        let groupTag = try #require(store.location(of: fixture.groupKey)).entity
        var transaction = Transaction()
        transaction.delete(key: fixture.groupKey, entity: groupTag)
        try store.commit(transaction)
        let offsets = fixture.sampleKeys.map { store.location(of: $0)!.offset }
        try store.close()

        let run = try runTool("verify", fixture.path)
        #expect(run.status == 65)
        #expect(run.lines.count == fixture.sampleKeys.count + 1)
        for (line, (key, offset)) in zip(
            run.lines,
            zip(fixture.sampleKeys, offsets).sorted { $0.1 < $1.1 }
        ) {
            #expect(
                line
                    == "reference at offset \(offset): object #\(key) (Sample).group refers to "
                    + "#\(fixture.groupKey), which is not a live object"
            )
        }
        #expect(run.standardError == "error: \(fixture.path): 3 problem(s) found (reference)\n")
    }

    @Test("verify reports a relationship whose inverse does not refer back")
    func verifyInverses() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("lab.olog")
        let container = try PersistentContainer(path: path, for: sampleEntities)
        let context = container.newContext()
        let group = SampleGroup(context: context)
        for index in 0..<2 {
            let sample = Sample(context: context)
            sample.name = "sample \(index)"
            sample.group = group
        }
        try context.save()
        let groupKey = group.objectID.key
        // The group's value while it lists two samples.
        let older = try #require(try container.coordinator.logStore!.readObject(groupKey))
        let third = Sample(context: context)
        third.group = group
        try context.save()
        let thirdKey = third.objectID.key
        try container.close()
        #expect(try runTool("verify", path).status == 0)

        // Put the older group value back beneath the engine: the third sample's group is the
        // group, but the group's samples no longer include it.
        let store = try openWriter(path)
        let location = try #require(store.location(of: groupKey))
        var transaction = Transaction()
        transaction.put(
            key: groupKey,
            entity: location.entity,
            payload: older.payload,
            isInsert: false
        )
        try store.commit(transaction)
        let offset = try #require(store.location(of: thirdKey)).offset
        try store.close()

        let run = try runTool("verify", path)
        #expect(run.status == 65)
        #expect(
            run.lines.first
                == "reference at offset \(offset): object #\(thirdKey) (Sample).group refers to "
                + "#\(groupKey), but #\(groupKey).samples does not refer back to #\(thirdKey)"
        )
        #expect(run.standardError == "error: \(path): 1 problem(s) found (reference)\n")
    }

    @Test("dump output is identical before and after compact")
    func dumpSurvivesCompaction() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeEngineStore(at: directory.file("lab.olog"))
        let before = try runTool("dump", fixture.path)
        let compact = try runTool("compact", fixture.path)
        #expect(compact.status == 0)
        #expect(
            compact.standardOutput.contains("  live objects:  \(fixture.sampleKeys.count + 1)\n")
        )
        let after = try runTool("dump", fixture.path)
        #expect(after.status == 0)
        #expect(after.standardOutput == before.standardOutput)
        #expect(try runTool("verify", fixture.path).status == 0)
        // The engine still opens the compacted store.
        let container = try PersistentContainer(path: fixture.path, for: sampleEntities)
        try container.close()
    }

    @Test("meta shows the engine's model versions, and refuses to change them")
    func metaReservedModel() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeEngineStore(at: directory.file("lab.olog"))
        let lines = try runTool("meta", fixture.path).lines
        // The model is no longer in the metadata: the versions are named by hash.
        #expect(!lines.contains { $0.hasPrefix("ObjectLog.model (string): ") })
        let versions = try #require(
            lines.first { $0.hasPrefix("ObjectLog.modelVersions (array): ") }
        )
        #expect(versions.count < 200)
        let schema = try runTool("schema", fixture.path, "--json")
        #expect(schema.status == 0)
        #expect(schema.standardOutput.contains("\"name\": \"SampleGroup\""))
        let refused = try runTool("meta", fixture.path, "set", "ObjectLog.modelHash", "0")
        #expect(refused.status == 64)
        #expect(
            refused.standardError.hasPrefix(
                "error: cannot set 'ObjectLog.modelHash': keys starting with 'ObjectLog.'"
            )
        )
    }
}
