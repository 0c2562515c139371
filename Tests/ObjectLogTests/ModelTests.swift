import Foundation
import ObjectLogStore
import Testing

@testable import ObjectLog

@Suite("Model discovery")
struct ModelTests {
    @Test("properties are discovered in declaration order with types, options and inverses")
    func discovery() throws {
        let model = try ManagedObjectModel(testEntities)
        let configuration = try #require(model.entity(for: Configuration.self))
        let schema = configuration.schema
        #expect(
            schema.properties.map(\.name) == [
                "name", "model", "feed", "kill", "timestep", "width", "seed", "isFavorite",
                "created", "identifier", "homepage", "notes", "render", "thumbnail", "snapshots",
            ]
        )
        #expect(schema.property(named: "name")?.isUnique == true)
        #expect(schema.property(named: "timestep")?.type == .float)
        #expect(schema.property(named: "width")?.type == .int32)
        #expect(schema.property(named: "homepage")?.type == .url)
        #expect(schema.property(named: "homepage")?.isOptional == true)
        #expect(schema.property(named: "render")?.type == .codable)
        #expect(schema.property(named: "thumbnail")?.isExternal == true)
        #expect(schema.property(named: "scratch") == nil)
        let snapshots = try #require(schema.property(named: "snapshots"))
        #expect(snapshots.isToMany && !snapshots.isOrdered)
        #expect(snapshots.destination == "Snapshot")
        #expect(snapshots.inverse == "configuration")
        #expect(snapshots.deleteRule == .cascade)
        let snapshot = try #require(model.entity(for: Snapshot.self))
        #expect(snapshot.schema.property(named: "configuration")?.inverse == "snapshots")
        #expect(model.entity(for: Cell.self)?.schema.uniquenessConstraints == [["row", "column"]])
    }

    @Test("the version hash is stable and changes with the model")
    func versionHash() throws {
        let first = try ManagedObjectModel(testEntities)
        let second = try ManagedObjectModel(testEntities.reversed())
        #expect(first.versionHash == second.versionHash)
        #expect(first.versionHash.count == 16)
        let smaller = try ManagedObjectModel([Tag.self, Cell.self])
        #expect(smaller.versionHash != first.versionHash)
        let differences = first.schema.differences(to: smaller.schema)
        #expect(differences.contains("entity 'Configuration' was removed"))
    }

    @Test("destinations of relationships join the model even when not listed")
    func destinationsAreAdded() throws {
        let model = try ManagedObjectModel([Note.self])
        #expect(model.entities.map(\.name) == ["Folder", "Note", "Tag"])
        #expect(model.entities.map(\.tag) == [1, 2, 3])
    }
}
