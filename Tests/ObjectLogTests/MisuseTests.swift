import Foundation
import ObjectLogStore
import Testing

@testable import ObjectLog

/// An entity class that no test container's model has.
final class Stranger: ManagedObject {
    @Attribute var label = ""
}

@Suite("Misuse the API can report is a typed error, not a trap")
struct MisuseTests {
    /// A cell saved by a context that is released before this returns: the object outlives
    /// its context.
    static func cellOfReleasedContext(_ container: PersistentContainer) throws -> Cell {
        let context = container.newContext()
        let cell = Cell(context: context)
        try context.save()
        return cell
    }

    @Test("fetching, counting and fetching IDs of a class outside the model throws")
    func fetchOutsideModel() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let context = container.newContext()
        let calls: [(String, () throws(ObjectLogError) -> Void)] = [
            ("fetch", { () throws(ObjectLogError) in _ = try context.fetch(Stranger.self) }),
            (
                "count",
                { () throws(ObjectLogError) in _ = try context.count(FetchRequest<Stranger>()) }
            ),
            (
                "fetchIdentifiers",
                { () throws(ObjectLogError) in
                    _ = try context.fetchIdentifiers(FetchRequest<Stranger>())
                }
            ),
        ]
        for (name, call) in calls {
            let error = try #require(throws: ObjectLogError.self, "\(name)") { try call() }
            #expect(error.code == .entityNotInModel)
            #expect(error.message.hasPrefix("class Stranger is not an entity of the model"))
        }
    }

    @Test("object(with:) and existingObject(with:) of an entity outside the model throw")
    func lookupOutsideModel() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let context = container.newContext()
        let id = ObjectID(entityName: "Stranger", key: 1)
        for lookup in [context.object(with:), context.existingObject(with:)] {
            let error = try #require(throws: ObjectLogError.self) { try lookup(id) }
            #expect(error.code == .entityNotInModel)
            #expect(error.objectID == id)
            #expect(error.message.hasPrefix("entity Stranger of Stranger#1 is not in the model"))
        }
        #expect(context.registeredObjects.isEmpty)
    }

    @Test("inserting an object of another context throws contextMismatch and leaves it there")
    func insertIntoSecondContext() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let first = container.newContext()
        first.name = "first"
        let second = container.newContext()
        second.name = "second"
        let cell = Cell(context: first)
        let error = try #require(throws: ObjectLogError.self) { try second.insert(cell) }
        #expect(error.code == .contextMismatch)
        #expect(
            error.message
                == "cannot insert \(cell) into context second: it belongs to context first; "
                + "look it up there by its objectID"
        )
        #expect(cell.managedObjectContext === first)
        #expect(!second.hasChanges)
        try first.save()
        #expect(try container.newContext().count(FetchRequest<Cell>()) == 1)
    }

    @Test("inserting an object of a class outside the model throws; init(context:) defers to save")
    func insertOutsideModel() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let context = container.newContext()
        let error = try #require(throws: ObjectLogError.self) { try context.insert(Stranger()) }
        #expect(error.code == .entityNotInModel)

        // The initializer cannot throw: the object stays outside, and the next save says so.
        let stranger = Stranger(context: context)
        #expect(stranger.managedObjectContext == nil)
        let cell = Cell(context: context)
        let saveError = try #require(throws: ObjectLogError.self) { try context.save() }
        #expect(saveError.code == .entityNotInModel)
        #expect(try container.newContext().count(FetchRequest<Cell>()) == 0)
        // Reported once; the rest of the changes then save.
        #expect(cell.isInserted)
        try context.save()
        #expect(try container.newContext().count(FetchRequest<Cell>()) == 1)
    }

    @Test("relating objects of two contexts is not done, and the next save throws contextMismatch")
    func relateAcrossContexts() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let first = container.newContext()
        let second = container.newContext()
        let configuration = Configuration(context: first)
        configuration.name = "Spots"
        let snapshot = Snapshot(context: second)
        try first.save()
        try second.save()

        snapshot.configuration = configuration
        // The assignment was refused, on both sides.
        #expect(snapshot.configuration == nil)
        #expect(configuration.snapshots.isEmpty)
        let error = try #require(throws: ObjectLogError.self) { try second.save() }
        #expect(error.code == .contextMismatch)
        #expect(error.objectID == snapshot.objectID)
        #expect(error.property == "configuration")
        #expect(
            error.message
                == "cannot relate \(snapshot) to \(configuration) (configuration): they belong "
                + "to different contexts; the relationship was not set"
        )
        // The first context is unaffected, and the error is reported once.
        try first.save()
        try second.save()

        // To-many from the other side too.
        configuration.snapshots = [snapshot]
        #expect(configuration.snapshots.isEmpty)
        #expect(throws: ObjectLogError.self) { try first.save() }

        // The supported way: look the object up in the other context by its ID.
        snapshot.configuration = try second.object(
            with: configuration.objectID,
            as: Configuration.self
        )
        try second.save()
        let reader = container.newContext()
        let saved = try reader.existingObject(with: snapshot.objectID, as: Snapshot.self)
        #expect(saved.configuration?.name == "Spots")
    }

    @Test("every misuse since the last save is reported, in one error that lists each")
    func severalMisuses() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let first = container.newContext()
        let second = container.newContext()
        let configuration = Configuration(context: first)
        let snapshots = [Snapshot(context: second), Snapshot(context: second)]
        try first.save()
        try second.save()

        for snapshot in snapshots { snapshot.configuration = configuration }
        let stranger = Stranger(context: second)
        let error = try #require(throws: ObjectLogError.self) { try second.save() }
        #expect(error.code == .contextMismatch)
        #expect(error.objectID == snapshots[0].objectID)
        #expect(error.property == "configuration")
        #expect(error.message == "3 misuses since the last save; nothing was saved")
        #expect(
            error.errors.map(\.code) == [.contextMismatch, .contextMismatch, .entityNotInModel]
        )
        #expect(error.errors.prefix(2).map(\.objectID) == snapshots.map(\.objectID))
        #expect(stranger.managedObjectContext == nil)
        #expect(snapshots.allSatisfy { $0.configuration == nil })
        // Reported once, every one of them: the retry saves what is left.
        try second.save()

        // One misuse is thrown as it is, not wrapped.
        snapshots[1].configuration = configuration
        let single = try #require(throws: ObjectLogError.self) { try second.save() }
        #expect(single.code == .contextMismatch)
        #expect(single.objectID == snapshots[1].objectID)
        #expect(single.errors.isEmpty)
    }

    @Test("inserting an object of a released context throws instead of copying it")
    func insertObjectOfReleasedContext() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let orphan = try Self.cellOfReleasedContext(container)
        let context = container.newContext()
        let error = try #require(throws: ObjectLogError.self) { try context.insert(orphan) }
        #expect(error.code == .contextMismatch)
        #expect(try container.newContext().count(FetchRequest<Cell>()) == 1)
    }

    @Test("an object of a released context still reads, and an object that left by reset writes")
    func readsAfterRelease() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let orphan: Cell = try {
            let context = container.newContext()
            let cell = Cell(context: context)
            cell.row = 5
            try context.save()
            return try container.newContext().existingObject(with: cell.objectID, as: Cell.self)
        }()
        #expect(orphan.managedObjectContext == nil)
        #expect(orphan.row == 5)

        // Leaving a live context on purpose is not a release: the object is the caller's.
        let context = container.newContext()
        let cell = Cell(context: context)
        context.reset()
        cell.row = 9
        #expect(cell.row == 9)
    }

    // Writes to an object whose context was released can never be saved: they stop the
    // program with a message (exit tests run the body in a child process; its standard
    // error shows the message was the one meant, not another failure).
    @Test("a write to a saved object of a released context stops the program")
    func writeAfterReleaseTraps() async throws {
        let result = await #expect(
            processExitsWith: .failure,
            observing: [\.standardErrorContent]
        ) {
            let container = try PersistentContainer.inMemory(for: testEntities)
            let orphan = try MisuseTests.cellOfReleasedContext(container)
            orphan.row = 1
        }
        let message = String(decoding: try #require(result).standardErrorContent, as: UTF8.self)
        #expect(message.contains("Cell.row of Cell#"))
        #expect(message.contains("was set after the object's context was released"))
    }

    @Test("a write to an unsaved object of a released context stops the program")
    func writeToPendingAfterReleaseTraps() async throws {
        let result = await #expect(
            processExitsWith: .failure,
            observing: [\.standardErrorContent]
        ) {
            let container = try PersistentContainer.inMemory(for: testEntities)
            let orphan: Configuration = {
                let context = container.newContext()
                return Configuration(context: context)
            }()
            orphan.name = "lost"
        }
        let message = String(decoding: try #require(result).standardErrorContent, as: UTF8.self)
        #expect(message.contains("Configuration.name of Configuration#"))
    }

    @Test("relating two objects outside any context stops the program")
    func relateOutsideContextsTraps() async throws {
        let result = await #expect(
            processExitsWith: .failure,
            observing: [\.standardErrorContent]
        ) {
            Snapshot().configuration = Configuration()
        }
        let message = String(decoding: try #require(result).standardErrorContent, as: UTF8.self)
        #expect(message.contains("neither is in a context; insert one of them first"))
    }
}
