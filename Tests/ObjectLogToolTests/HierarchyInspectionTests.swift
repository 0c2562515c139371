import Foundation
import ObjectLog
import ObjectLogStore
import TestSupport
import Testing

// MARK: - A hierarchy written by the engine

class ToolShape: ManagedObject {
    @Attribute var name = ""
    override class var isAbstract: Bool { self == ToolShape.self }
}

final class ToolCircle: ToolShape {
    @Attribute var radius = 0.0
}

class ToolPolygon: ToolShape {
    @Attribute var sides = 0
}

final class ToolSquare: ToolPolygon {
    @Attribute var side = 0.0
}

@Suite("info and dump show entity hierarchies")
struct HierarchyInspectionTests {
    /// A store with two circles, a polygon and a square; their keys by name.
    private func makeStore(at path: String) throws -> [String: ObjectKey] {
        let container = try PersistentContainer(
            path: path,
            for: [ToolCircle.self, ToolSquare.self]
        )
        let context = container.newContext()
        var objects: [ToolShape] = []
        for name in ["c1", "c2"] {
            let circle = ToolCircle(context: context)
            circle.name = name
            objects.append(circle)
        }
        let polygon = ToolPolygon(context: context)
        polygon.name = "tri"
        polygon.sides = 3
        objects.append(polygon)
        let square = ToolSquare(context: context)
        square.name = "sq"
        square.side = 2
        objects.append(square)
        try context.save()
        try container.close()
        return Dictionary(uniqueKeysWithValues: objects.map { ($0.name, $0.objectID.key) })
    }

    @Test("info lists subentities under their parent, abstract ones marked")
    func info() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("shapes.olog")
        _ = try makeStore(at: path)
        let text = try runTool("info", path)
        #expect(text.status == 0, "\(text.standardError)")
        let start = try #require(text.lines.firstIndex(of: "entities:"))
        let entities = text.lines[(start + 1)...].prefix { $0.hasPrefix("  ") }.map {
            $0.replacingOccurrences(of: " +", with: " ", options: .regularExpression)
        }
        #expect(
            entities == [
                " ToolShape 0 (abstract)", " ToolCircle 2", " ToolPolygon 1", " ToolSquare 1",
            ]
        )
        // The indentation shows the depth.
        let lines = text.lines[(start + 1)...].prefix { $0.hasPrefix("  ") }
        #expect(lines.map { $0.prefix { $0 == " " }.count } == [2, 4, 4, 6])

        let json = try runTool("info", path, "--json").jsonObject()
        #expect(
            json["superentities"] as? [String: String] == [
                "ToolCircle": "ToolShape", "ToolPolygon": "ToolShape", "ToolSquare": "ToolPolygon",
            ]
        )
        #expect(json["abstractEntities"] as? [String] == ["ToolShape"])
        #expect(
            json["entities"] as? [String: Int] == [
                "ToolShape": 0, "ToolCircle": 2, "ToolPolygon": 1, "ToolSquare": 1,
            ]
        )
    }

    @Test("schema names each entity's superentity and abstract ones")
    func schema() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("shapes.olog")
        _ = try makeStore(at: path)
        let text = try runTool("schema", path)
        #expect(text.status == 0, "\(text.standardError)")
        // Tags are given in name order: Circle 1, Polygon 2, Shape 3, Square 4.
        #expect(text.lines.contains("  ToolShape (tag 3, abstract): name: string"))
        #expect(
            text.lines.contains {
                $0.hasPrefix("  ToolSquare (tag 4, inherits ToolPolygon): name: string, sides:")
            }
        )
        let json = try runTool("schema", path, "--json").jsonObject()
        let versions = try #require(json["versions"] as? [[String: Any]])
        let entities = try #require(versions.last?["entities"] as? [[String: Any]])
        let byName = Dictionary(
            uniqueKeysWithValues: entities.map { ($0["name"] as? String ?? "", $0) }
        )
        #expect(byName["ToolSquare"]?["superentity"] as? String == "ToolPolygon")
        #expect(byName["ToolShape"]?["superentity"] is NSNull)
        #expect(byName["ToolShape"]?["isAbstract"] as? Bool == true)
        #expect(byName["ToolCircle"]?["isAbstract"] as? Bool == false)
    }

    @Test("dump --entity of a parent includes its subentities, each listing its superentities")
    func dump() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("shapes.olog")
        let keys = try makeStore(at: path)
        let all = try runTool("dump", path, "--entity", "ToolShape")
        #expect(all.status == 0, "\(all.standardError)")
        let objects = try EngineStoreTests.dumpedObjects(all)
        #expect(Set(objects.keys) == Set(keys.values))
        let squareKey = try #require(keys["sq"])
        let square = try #require(objects[squareKey])
        #expect(square["entity"] as? String == "ToolSquare")
        #expect(square["superentities"] as? [String] == ["ToolPolygon", "ToolShape"])
        let attributes = try #require(square["attributes"] as? [String: Any])
        #expect(attributes["name"] as? String == "sq" && attributes["side"] as? Double == 2)
        let polygons = try EngineStoreTests.dumpedObjects(
            try runTool("dump", path, "--entity", "ToolPolygon")
        )
        #expect(Set(polygons.keys) == Set(["tri", "sq"].compactMap { keys[$0] }))
        let circles = try EngineStoreTests.dumpedObjects(
            try runTool("dump", path, "--entity", "ToolCircle")
        )
        #expect(Set(circles.keys) == Set(["c1", "c2"].compactMap { keys[$0] }))
        #expect(circles.values.allSatisfy { $0["superentities"] as? [String] == ["ToolShape"] })
        // Verify agrees that the store is sound.
        #expect(try runTool("verify", path).status == 0)
    }
}
