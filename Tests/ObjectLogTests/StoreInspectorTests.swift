import Foundation
import ObjectLogStore
import TestSupport
import Testing

@testable import ObjectLog

@Suite("Generic decoding by the stored schema")
struct StoreInspectorTests {
    @Test("every attribute and relationship decodes without the model classes")
    func decodesEverything() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("inspect.objectlog")
        let identifier = UUID()
        let created = Date(timeIntervalSinceReferenceDate: 1000.25)
        let big = Data(repeating: 9, count: ExternalStorage.minimumByteCount + 1)
        var keys: (configuration: ObjectKey, snapshot: ObjectKey) = (0, 0)
        do {
            let container = try PersistentContainer(path: path, for: testEntities)
            let context = container.newContext()
            let configuration = Configuration(context: context)
            configuration.name = "Spots"
            configuration.width = -3
            configuration.seed = 77
            configuration.timestep = 0.25
            configuration.isFavorite = true
            configuration.created = created
            configuration.identifier = identifier
            configuration.homepage = URL(string: "https://example.org")
            configuration.render = RenderSettings(palette: "p", gamma: 2)
            let snapshot = Snapshot(context: context)
            snapshot.step = 12
            snapshot.state = big
            snapshot.configuration = configuration
            try context.save()
            keys = (configuration.objectID.key, snapshot.objectID.key)
            try container.close()
        }
        let inspector = try StoreInspector(path: path)
        defer { try? inspector.close() }
        #expect(inspector.versionHash == (try ManagedObjectModel(testEntities)).versionHash)
        let configuration = try #require(try inspector.object(key: keys.configuration))
        #expect(configuration.entity == "Configuration")
        #expect(configuration["name"] == .string("Spots"))
        #expect(configuration["model"] == .string("GrayScott"))
        #expect(configuration["width"] == .int(-3))
        #expect(configuration["seed"] == .uint(77))
        #expect(configuration["timestep"] == .float(0.25))
        #expect(configuration["feed"] == .double(0.055))
        #expect(configuration["isFavorite"] == .bool(true))
        #expect(configuration["created"] == .date(created))
        #expect(configuration["identifier"] == .uuid(identifier))
        #expect(configuration["homepage"] == .url("https://example.org"))
        #expect(configuration["notes"] == .null)
        #expect(configuration["thumbnail"] == .null)
        #expect(configuration["render"] == .json(#"{"gamma":2,"palette":"p"}"#))
        #expect(configuration["snapshots"] == .toMany([keys.snapshot]))
        let snapshots = try inspector.objects(entity: "Snapshot")
        #expect(snapshots.count == 1)
        #expect(snapshots[0]["step"] == .int(12))
        #expect(snapshots[0]["configuration"] == .toOne(keys.configuration))
        guard case .externalData(let blob, let count)? = snapshots[0]["state"] else {
            Issue.record("large data must be external")
            return
        }
        #expect(count == big.count)
        #expect(try inspector.data(of: blob) == big)
        #expect(try inspector.count(entity: "Configuration") == 1)
        #expect(try inspector.objects().count == 2)
    }

    @Test("damaged payloads give errors naming the entity, never a trap")
    func damagedPayload() throws {
        let model = try ManagedObjectModel(testEntities)
        let entity = try #require(model.schema.entity(named: "Configuration"))
        let bytes: [UInt8] = [UInt8(entity.properties.count), 0x05, 0x41]
        _ = bytes.withUnsafeBytes { buffer in
            #expect(throws: ObjectLogError.self) {
                try StoreInspector.decode(payload: buffer, entity: entity)
            }
        }
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<200 {
            let noise = (0..<Int.random(in: 0..<64, using: &generator)).map { _ in
                UInt8.random(in: 0...255, using: &generator)
            }
            noise.withUnsafeBytes { buffer in
                _ = try? StoreInspector.decode(payload: buffer, entity: entity)
            }
        }
    }
}
