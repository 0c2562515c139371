import Foundation
import ObjectLogStore
import TestSupport
import Testing

@testable import ObjectLog

@Suite("Two containers of one store in one process share its coordinator")
struct SharedStoreTests {
    @Test("a second container of the same file opens, sees the first's saves, and closes last")
    func twoContainersShare() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("shared.objectlog")
        let first = try PersistentContainer(path: path, for: testEntities)
        // Another spelling of the same file.
        let second = try PersistentContainer(
            path: directory.path + "/./shared.objectlog",
            for: testEntities
        )
        #expect(first.coordinator === second.coordinator)
        #expect(StoreShare.shareCount(path: path) == 2)

        let writer = first.newContext()
        let tag = Tag(context: writer)
        tag.label = "from the first"
        try writer.save()
        let seen = try second.newContext().existingObject(with: tag.objectID, as: Tag.self)
        #expect(seen.label == "from the first")

        // Closing one leaves the store open for the other, and twice counts once.
        try first.close()
        try first.close()
        #expect(StoreShare.shareCount(path: path) == 1)
        let other = second.newContext()
        _ = Tag(context: other)
        try other.save()
        try second.close()
        #expect(StoreShare.shareCount(path: path) == 0)

        // Closed by the last one: another handle (here a plain coordinator, which is not
        // shared) can take the writer lock now.
        let reopened = try PersistentStoreCoordinator(
            model: try ManagedObjectModel(testEntities),
            path: path
        )
        let count = try ManagedObjectContext(coordinator: reopened).count(FetchRequest<Tag>())
        #expect(count == 2)
        try reopened.store.close()
    }

    @Test("while a container is open, its store refuses other handles, as before")
    func plainCoordinatorStillLocked() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("locked.objectlog")
        let container = try PersistentContainer(path: path, for: testEntities)
        let error = try #require(throws: ObjectLogError.self) {
            try PersistentStoreCoordinator(model: try ManagedObjectModel(testEntities), path: path)
        }
        #expect(error.storeError?.code == .locked)
        try container.close()
    }

    @Test("a container released without close() leaves its coordinator to the next container")
    func releasedContainerIsReused() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("released.objectlog")
        var context: ManagedObjectContext?
        do {
            let container = try PersistentContainer(path: path, for: testEntities)
            context = container.newContext()
        }
        #expect(StoreShare.shareCount(path: path) == 0)
        // The context still holds the coordinator (and the lock): the next container uses it.
        let next = try PersistentContainer(path: path, for: testEntities)
        #expect(next.coordinator === context?.coordinator)
        try next.close()
    }

    @Test("opening a shared store with another model throws modelMismatch")
    func otherModelRefused() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("models.objectlog")
        let container = try PersistentContainer(path: path, for: testEntities)
        let error = try #require(throws: ObjectLogError.self) {
            try PersistentContainer(path: path, for: [Tag.self])
        }
        #expect(error.code == .modelMismatch)
        #expect(error.message.contains("is already open in this process for another model"))
        try container.close()
        // Once it is closed, the other model opens it (and migrates it).
        try PersistentContainer(path: path, for: [Tag.self]).close()
    }

    @Test("in-memory containers are never shared")
    func inMemoryNotShared() throws {
        let first = try PersistentContainer.inMemory(for: testEntities)
        let second = try PersistentContainer.inMemory(for: testEntities)
        #expect(first.coordinator !== second.coordinator)
    }
}
