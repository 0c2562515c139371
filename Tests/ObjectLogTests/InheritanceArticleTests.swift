import Foundation
import ObjectLog
import TestSupport
import Testing

// The code of the article "Entity inheritance" (ObjectLog.docc/EntityInheritance.md), exactly
// as the article shows it, in a namespace so that its names do not clash with other tests'.
// EntityInheritanceTests runs its tests on the same classes.
enum InheritanceArticle {
    class Shape: ManagedObject {
        @Attribute(.unique) var name = ""
        @Attribute var area = 0.0
        @Relationship var canvas: Canvas?
        override class var isAbstract: Bool { self == Shape.self }
    }

    final class Circle: Shape {
        @Attribute var radius = 0.0
    }

    class Polygon: Shape {
        @Attribute var sides = 0
        @Attribute(.unique) var code = ""
    }

    final class Square: Polygon {
        @Attribute var side = 0.0
    }

    final class Canvas: ManagedObject {
        @Attribute var title = ""
        @Relationship(inverse: \Shape.canvas, deleteRule: .cascade) var shapes: [Shape]
    }

    static func openDrawing(at path: String) throws -> PersistentContainer {
        try PersistentContainer(path: path, for: [Circle.self, Square.self, Canvas.self])
    }

    static func largeShapes(in context: ManagedObjectContext) throws -> [String] {
        let request = FetchRequest<Shape>(
            predicate: #Predicate { $0.area > 10 },
            sortBy: [SortDescriptor(\.area, order: .reverse)]
        )
        // Circles, polygons and squares, largest first.
        return try context.fetch(request).map { "\(type(of: $0)) \($0.name)" }
    }

    static func plainPolygons(in context: ManagedObjectContext) throws -> Int {
        var request = FetchRequest<Polygon>()
        request.includesSubentities = false
        // Polygons that are not squares.
        return try context.count(request)
    }
}

@Suite("The entity inheritance article's example")
struct InheritanceArticleTests {
    typealias Article = InheritanceArticle

    @Test("the article's hierarchy, fetches and refusal, as it shows them")
    func articleExample() throws {
        let directory = TemporaryDirectory()
        let container = try Article.openDrawing(at: directory.file("drawing.olog"))
        let context = container.newContext()
        let canvas = Article.Canvas(context: context)
        for (name, area) in [("dot", 3.0), ("disc", 50.0)] {
            let circle = Article.Circle(context: context)
            circle.name = name
            circle.area = area
            circle.canvas = canvas
        }
        let hexagon = Article.Polygon(context: context)
        hexagon.name = "hexagon"
        hexagon.sides = 6
        hexagon.code = "P6"
        hexagon.area = 20
        hexagon.canvas = canvas
        let square = Article.Square(context: context)
        square.name = "tile"
        square.sides = 4
        square.code = "P4"
        square.area = 30
        square.canvas = canvas
        try context.save()

        let reader = container.newContext()
        #expect(
            try Article.largeShapes(in: reader) == [
                "Circle disc", "Square tile", "Polygon hexagon",
            ]
        )
        #expect(try Article.plainPolygons(in: reader) == 1)
        // "Typed lookups accept any class on the object's path up to the root."
        #expect(try reader.object(with: square.objectID, as: Article.Shape.self).name == "tile")
        // "Inserting an instance of its class fails with abstractEntity."
        let abstract = #expect(throws: ObjectLogError.self) {
            try reader.insert(Article.Shape())
        }
        #expect(abstract?.code == .abstractEntity)
        // "A square cannot take a circle's name."
        let copy = Article.Square(context: reader)
        copy.name = "disc"
        let clash = #expect(throws: ObjectLogError.self) { try reader.save() }
        #expect(clash?.code == .uniqueness)
    }

    @Test("this file holds the article's code exactly")
    func articleCodeIsHere() throws {
        let (blocks, source) = try articleCodeBlocks("EntityInheritance.md", asIn: #filePath)
        #expect(blocks.count == 3)
        for expected in blocks {
            #expect(source.contains(expected), "not in this file: \(expected.prefix(44))")
        }
    }
}
