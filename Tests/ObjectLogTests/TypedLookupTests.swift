import Foundation
import ObjectLogStore
import StoreTestSupport
import Testing

@testable import ObjectLog

@Suite("Typed lookups and the shapes of perform closures")
struct TypedLookupTests {
    @Test(
        "object(with:as:) and existingObject(with:as:) return the class asked for",
        arguments: TestStoreKind.available
    )
    func typedLookups(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let writer = container.newContext()
        let cell = Cell(context: writer)
        cell.row = 3
        try writer.save()

        let reader = container.newContext()
        let fault: Cell = try reader.object(with: cell.objectID, as: Cell.self)
        #expect(fault.isFault)
        #expect(fault.row == 3)
        let loaded: Cell = try reader.existingObject(with: cell.objectID, as: Cell.self)
        #expect(loaded === fault)
        #expect(!loaded.isFault)
    }

    @Test(
        "a typed lookup of an object of another class throws typeMismatch, registering nothing",
        arguments: TestStoreKind.available
    )
    func typedLookupMismatch(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let writer = container.newContext()
        let cell = Cell(context: writer)
        try writer.save()

        let reader = container.newContext()
        let lookups: [(String, () throws(ObjectLogError) -> Tag)] = [
            (
                "object",
                { () throws(ObjectLogError) in try reader.object(with: cell.objectID, as: Tag.self)
                }
            ),
            (
                "existingObject",
                { () throws(ObjectLogError) in
                    try reader.existingObject(with: cell.objectID, as: Tag.self)
                }
            ),
        ]
        for (name, lookup) in lookups {
            let error = try #require(throws: ObjectLogError.self, "\(name)") { try lookup() }
            #expect(error.code == .typeMismatch)
            #expect(error.message == "\(cell.objectID) is a Cell, not a Tag")
            #expect(error.objectID == cell.objectID)
        }
        #expect(reader.registeredObjects.isEmpty)
        // A registered instance of another class is refused the same way.
        let registered = try reader.existingObject(with: cell.objectID)
        let error = try #require(throws: ObjectLogError.self) {
            try reader.object(with: registered.objectID, as: Tag.self)
        }
        #expect(error.code == .typeMismatch)
    }

    @Test(
        "existingObject(with:as:) of a missing object throws notFound",
        arguments: TestStoreKind.available
    )
    func typedExistingMissing(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        let missing = ObjectID(entityName: "Cell", key: 12_345)
        let error = try #require(throws: ObjectLogError.self) {
            try context.existingObject(with: missing, as: Cell.self)
        }
        #expect(error.code == .notFound)
    }

    // The shapes of closures users pass to `perform` and `performBackgroundTask`. This test
    // is mostly a compile-time one: with `rethrows` signatures, the `Void` closures declared
    // `throws(ObjectLogError)` below crashed the Swift 6.3.1 compiler, so a regression in the
    // signatures fails the build. The error type of each call is checked by the nested
    // functions that declare it: a call throwing `any Error` would not compile in them.
    @Test(
        "perform and performBackgroundTask take Void and value closures, throwing or not",
        arguments: TestStoreKind.available
    )
    func performShapes(kind: TestStoreKind) async throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let background = container.newBackgroundContext()

        // Not throwing: no `try`.
        await background.perform { context in context.name = "shapes" }
        let name = await background.perform { context in context.name }
        #expect(name == "shapes")
        await container.performBackgroundTask { _ in }
        let seven = await container.performBackgroundTask { _ in 7 }
        #expect(seven == 7)

        // Typed throws, Void and value.
        func typedVoid() async throws(ObjectLogError) {
            try await background.perform { (context) throws(ObjectLogError) in
                let cell = Cell(context: context)
                cell.row = 1
                try context.save()
            }
            try await container.performBackgroundTask { (context) throws(ObjectLogError) -> Void in
                let cell = Cell(context: context)
                cell.row = 2
                try context.save()
            }
        }
        func typedValue() async throws(ObjectLogError) -> Int {
            let inBackground = try await background.perform { (context) throws(ObjectLogError) in
                try context.count(FetchRequest<Cell>())
            }
            let inTask = try await container.performBackgroundTask {
                (context) throws(ObjectLogError) -> Int in
                try context.count(FetchRequest<Cell>())
            }
            #expect(inBackground == inTask)
            return inTask
        }
        try await typedVoid()
        #expect(try await typedValue() == 2)

        // Untyped throws, Void and value, with errors of the caller's own.
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            try await background.perform { _ in throw Refused() }
        }
        await #expect(throws: Refused.self) {
            try await container.performBackgroundTask { _ in throw Refused() }
        }
        let ids = try await container.performBackgroundTask { context in
            try context.fetchIdentifiers(FetchRequest<Cell>())
        }
        #expect(ids.count == 2)

        // A function of a typed error passed by name.
        @Sendable func insertTag(_ context: ManagedObjectContext) throws(ObjectLogError) {
            _ = Tag(context: context)
            try context.save()
        }
        try await background.perform(insertTag)
        try await container.performBackgroundTask(insertTag)
        #expect(try container.newContext().count(FetchRequest<Tag>()) == 2)
    }
}
