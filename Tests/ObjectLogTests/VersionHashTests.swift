import Foundation
import ObjectLogStore
import TestSupport
import Testing

@testable import ObjectLog

// FORMAT.md, section 10: the canonical JSON a version hash is computed over, with names that
// need every escape it lists.

final class HashTag: ManagedObject {
    @Attribute var label = ""
    override class var entityName: String { "Tag" }
}

final class HashDishV1: ManagedObject {
    @Attribute var name = ""
    override class var entityName: String { "Café/Plat\u{1}\t\"é\"\\" }
}

final class HashDishV2: ManagedObject {
    @Attribute(originalName: "name") var title = "plat/du jour"
    @Attribute var price: Int64 = -5
    @Attribute var note: String? = nil
    @Attribute(.externalStorage) var photo = Data()
    @Relationship var menu: HashMenu?
    override class var entityName: String { "Café/Plat\u{1}\t\"é\"\\" }
}

final class HashMenu: ManagedObject {
    @Attribute(.unique) var when = Date(timeIntervalSince1970: 0)
    @Relationship(inverse: \HashDishV2.menu, deleteRule: .cascade) var dishes: [HashDishV2]
    override class var entityName: String { "Menu\u{2028}😀" }
}

@Suite("The version hash: FNV-1a over the canonical JSON FORMAT.md defines")
struct VersionHashTests {
    @Test("FORMAT.md's example: the bytes hashed and the hash")
    func formatExample() throws {
        let model = try ManagedObjectModel([HashTag.self])
        var schema = model.schema
        for entity in schema.entities.indices {
            for property in schema.entities[entity].properties.indices {
                schema.entities[entity].properties[property].defaultValue = nil
            }
        }
        let expected =
            #"{"entities":[{"name":"Tag","properties":[{"isExternal":false,"isOptional":false,"#
            + #""isOrdered":false,"isToMany":false,"isUnique":false,"kind":"attribute","#
            + #""maximumCount":1,"minimumCount":0,"name":"label","type":"string"}],"tag":1,"#
            + #""uniquenessConstraints":[]}],"schemaVersion":1}"#
        #expect(String(decoding: schema.canonicalJSON(), as: UTF8.self) == expected)
        #expect(schema.canonicalJSON().count == 273)
        #expect(model.versionHash == "dff104c7fd036f7a")
    }

    @Test("the independent reader computes every recorded hash from the schema records")
    func independentReaderAgrees() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("hash.olog")
        let first = try PersistentContainer(path: path, for: [HashDishV1.self])
        let context = first.newContext()
        HashDishV1(context: context).name = "soupe"
        try context.save()
        try first.close()
        let second = try PersistentContainer(path: path, for: [HashDishV2.self, HashMenu.self])
        let hashes = second.model.versionHash
        try second.close()

        let json = try Self.independentRead(path)
        let models = try #require(json["models"] as? [[String: Any]])
        #expect(models.count == 2)
        for model in models {
            #expect(model["schemaHash"] as? String == model["hash"] as? String, "\(model)")
            #expect(model["canonical"] as? Bool == true, "\(model)")
        }
        #expect(models.last?["hash"] as? String == hashes)
        // The names need the escapes: a slash, a control character, a quote, a backslash.
        let store = try LogStore.open(path: path)
        defer { try? store.close() }
        let key = try #require(models.last?["key"] as? Int)
        let record = try #require(try store.readObject(ObjectKey(key))).payload
        let text = String(decoding: record, as: UTF8.self)
        #expect(text.contains(#""name":"Café\/Plat\u0001\t\"é\"\\""#), "\(text)")
        #expect(text.contains("\"name\":\"Menu\u{2028}😀\""), "\(text)")
    }

    /// What `tools/olog-read.py` (the reader written from FORMAT.md alone) reads from `path`.
    static func independentRead(_ path: String) throws -> [String: Any] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", root.appendingPathComponent("tools/olog-read.py").path, path,
        ]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }
}
