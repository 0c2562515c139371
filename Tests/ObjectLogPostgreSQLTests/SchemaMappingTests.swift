import Foundation
import ObjectLog
import StoreTestSupport
import Testing

@testable import ObjectLogPostgreSQL

/// A model with every kind of property the mapping handles.
enum Workshop {
    class Shape: ManagedObject {
        @Attribute(.unique) var name = ""
        @Attribute var area = 0.0
        @Relationship var board: Board?
        override class var isAbstract: Bool { self == Shape.self }
    }

    final class Circle: Shape {
        @Attribute var radius = 0.0
    }

    final class Polygon: Shape {
        @Attribute(.unique) var code = ""
        @Attribute var sides: Int16 = 3
    }

    final class Board: ManagedObject {
        @Attribute var title = ""
        @Attribute var note: String?
        @Attribute var created = Date()
        @Attribute var tiny: Int8 = 0
        @Attribute var big: UInt64 = 0
        @Attribute var ratio: Float = 0
        @Attribute var flag = false
        @Attribute var identifier = UUID()
        @Attribute var link = URL(string: "https://example.com")!
        @Attribute(.externalStorage) var scan = Data()
        @Relationship(inverse: \Shape.board, deleteRule: .cascade) var shapes: [Shape]
        @Relationship(inverse: \Label.boards) var labels: Set<Label>
    }

    final class Label: ManagedObject {
        @Attribute(.unique) var text = ""
        @Relationship var boards: Set<Board>
    }

    static let entities: [ManagedObject.Type] = [
        Shape.self, Circle.self, Polygon.self, Board.self, Label.self,
    ]
}

@Suite("PostgreSQL schema mapping")
struct SchemaMappingTests {
    static func mapping() throws -> SchemaMapping {
        try SchemaMapping(try ManagedObjectModel(Workshop.entities).schema)
    }

    @Test(
        "a hierarchy shares its root's table; relationships become keys, positions and join tables"
    )
    func layout() throws {
        let mapping = try Self.mapping()
        #expect(mapping.tables.map(\.name).sorted() == ["Board", "Label", "Shape"])
        let shape = try #require(mapping.tables.first { $0.name == "Shape" })
        #expect(Set(shape.entities.values) == ["Shape", "Circle", "Polygon"])
        let columns = Dictionary(
            uniqueKeysWithValues: shape.columns.map { ($0.name, $0.definition) }
        )
        #expect(columns["objectlog_key"] == "bigint PRIMARY KEY")
        #expect(columns["name"] == "text NOT NULL")
        // A subentity's own attribute is NULL in the rows of the other entities.
        #expect(columns["radius"] == "double precision")
        #expect(columns["sides"] == "smallint")
        #expect(columns["board"]?.hasPrefix("bigint REFERENCES \"Board\"") == true)
        // Board.shapes is ordered, and its inverse is Shape.board: the position lies beside it.
        #expect(columns["board_position"] == "bigint")
        let board = try #require(mapping.tables.first { $0.name == "Board" })
        #expect(board.columns.contains { $0.name == "shapes" } == false)
        #expect(mapping.joinTables.map(\.name) == ["Board_labels"])
        #expect(Set(mapping.uniqueIndexes.map(\.attributes)) == [["name"], ["code"], ["text"]])
    }

    @Test("attribute types map to the columns that hold them exactly")
    func types() {
        #expect(SchemaMapping.sqlType(.date) == "double precision")
        #expect(SchemaMapping.sqlType(.uint64) == "numeric(20, 0)")
        #expect(SchemaMapping.sqlType(.codable) == "json")
        #expect(SchemaMapping.sqlType(.data) == "bytea")
        #expect(SchemaMapping.sqlType(.uuid) == "uuid")
        #expect(quoted("odd\"name") == "\"odd\"\"name\"")
    }

    @Test(
        "the tables are created on the server, and a violation names its constraint's entity",
        .enabled(if: TestServer.runs, TestServer.skipReason)
    )
    func createdOnTheServer() throws {
        let connection = try TestServer.connect()
        let schema = "objectlog_mapping_\(UInt32.random(in: 0...UInt32.max))"
        try connection.execute("CREATE SCHEMA \(quoted(schema))")
        defer { _ = try? connection.execute("DROP SCHEMA \(quoted(schema)) CASCADE") }
        try connection.execute("SET search_path TO \(quoted(schema))")
        let mapping = try Self.mapping()
        for statement in mapping.creationStatements { try connection.execute(statement) }

        let types = try connection.execute(
            """
            SELECT column_name, data_type FROM information_schema.columns
            WHERE table_schema = $1 AND table_name = 'Board' ORDER BY ordinal_position
            """,
            [schema]
        ).rows
        let byName = Dictionary(uniqueKeysWithValues: types.map { ($0[0]!, $0[1]!) })
        #expect(byName["created"] == "double precision")
        #expect(byName["scan"] == "bytea")
        #expect(byName["identifier"] == "uuid")
        #expect(byName["big"] == "numeric")
        #expect(byName["note"] == "text")

        let circle = try #require(
            mapping.tables.first { $0.name == "Shape" }?.entities.first { $0.value == "Circle" }?
                .key
        )
        let polygon = try #require(
            mapping.tables.first { $0.name == "Shape" }?.entities.first { $0.value == "Polygon" }?
                .key
        )
        let insert =
            "INSERT INTO \"Shape\" (objectlog_key, objectlog_entity, objectlog_version, name, area, code) VALUES ($1, $2, 1, $3, 0, $4)"
        try connection.execute(insert, ["1", String(circle), "c1", nil])
        try connection.execute(insert, ["2", String(polygon), "p1", "P"])
        // Polygon's code is unique among polygons only: a circle may share it.
        try connection.execute(insert, ["3", String(circle), "c2", "P"])
        let sameCode = #expect(throws: PostgresError.self) {
            try connection.execute(insert, ["4", String(polygon), "p2", "P"])
        }
        #expect(sameCode?.isUniqueViolation == true)
        let constraint = try #require(sameCode?.constraint)
        #expect(mapping.constraint(named: constraint)?.entity == "Polygon")
        #expect(mapping.constraint(named: constraint)?.attributes == ["code"])
        // Shape's name is unique across the whole hierarchy.
        let sameName = #expect(throws: PostgresError.self) {
            try connection.execute(insert, ["5", String(polygon), "c1", "Q"])
        }
        #expect(
            sameName.flatMap { $0.constraint.flatMap(mapping.constraint(named:)) }?.entity
                == "Shape"
        )
    }
}
