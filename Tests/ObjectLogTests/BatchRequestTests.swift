import Foundation
import ObjectLogStore
import StoreTestSupport
import TestSupport
import Testing

@testable import ObjectLog

@Suite("Batch delete, update and insert, in the store, without loading objects")
struct BatchRequestTests {
    /// A container with a 10 × 10 grid of cells (value = 10 · row + column).
    func grid(_ store: TestStore) throws -> PersistentContainer {
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        for row in 0..<10 {
            for column in 0..<10 {
                let cell = Cell(context: context)
                cell.row = row
                cell.column = column
                cell.value = Double(10 * row + column)
            }
        }
        try context.save()
        return container
    }

    func values(_ container: PersistentContainer) throws -> [Double] {
        let context = container.newContext()
        return try context.fetch(Cell.self).map(\.value).sorted()
    }

    @Test(
        "batch delete by predicate: the store and the contexts lose the objects",
        arguments: TestStoreKind.persistent
    )
    @MainActor
    func delete(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try grid(store)
        // A context that has one of the cells loaded, and the main context, which merges.
        let holder = container.newContext()
        let doomed = try #require(
            try holder.fetch(FetchRequest<Cell>(predicate: #Predicate { $0.row == 0 })).first
        )
        let main = container.mainContext
        #expect(try main.count(FetchRequest<Cell>()) == 100)
        let result = try holder.execute(
            BatchDeleteRequest<Cell>(predicate: #Predicate { $0.row < 3 })
        )
        #expect(result.deleted.count == 30)
        #expect(result.transactionNumber != nil)
        #expect(doomed.isDeleted || doomed.managedObjectContext == nil)
        #expect(try holder.count(FetchRequest<Cell>()) == 70)
        #expect(try main.count(FetchRequest<Cell>()) == 70)
        #expect(try values(container).first == 30)
        // The deleted cells' grid places are free again for the uniqueness constraint.
        let context = container.newContext()
        let again = Cell(context: context)
        again.row = 0
        again.column = 0
        try context.save()
        try container.close()
        // And after reopening.
        let reopened = try store.open(for: testEntities)
        #expect(try reopened.newContext().count(FetchRequest<Cell>()) == 71)
        try reopened.close()
    }

    @Test(
        "predicates the attribute columns decide, and those they do not, match as fetches do",
        arguments: TestStoreKind.available
    )
    func predicates(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try grid(store)
        let context = container.newContext()
        let predicates: [Predicate<Cell>] = [
            #Predicate { $0.value >= 50 },
            #Predicate { $0.value >= 20 && $0.column != 3 },
            #Predicate { $0.row % 3 == 1 },
            #Predicate { $0.value > 10 && ($0.row * $0.column) % 4 == 0 },
        ]
        for predicate in predicates {
            let expected = Set(
                try context.fetch(FetchRequest<Cell>(predicate: predicate)).map(\.objectID)
            )
            let updated = try context.execute(
                BatchUpdateRequest<Cell>(predicate: predicate, updates: [.set(\.value, to: 0.5)])
            )
            #expect(Set(updated.updated) == expected)
            // Put the values back for the next predicate.
            let fixing = container.newContext()
            for object in try fixing.fetch(Cell.self) where object.value == 0.5 {
                object.value = Double(10 * object.row + object.column)
            }
            try fixing.save()
        }
        try container.close()
    }

    @Test(
        "a batch reports each object it changed once, its ID list made beside the commit or not",
        arguments: [2, Int.max]
    )
    func reportedIDs(threshold: Int) throws {
        let store = try TestStore(.logFile)
        let container = try grid(store)
        let context = container.newContext()
        // 2: the list is made on another thread while the commit runs.
        context.tuning.parallelBatchThreshold = threshold
        let updating = #Predicate<Cell> { $0.column % 3 == 0 }
        let toUpdate = try context.fetch(FetchRequest<Cell>(predicate: updating)).map(\.objectID)
        let updated = try context.execute(
            BatchUpdateRequest<Cell>(predicate: updating, updates: [.set(\.value, to: -1)])
        ).updated
        #expect(updated.count == 40)
        #expect(updated.count == Set(updated).count)
        #expect(Set(updated) == Set(toUpdate))

        let deleting = #Predicate<Cell> { $0.row >= 7 }
        let toDelete = try context.fetch(FetchRequest<Cell>(predicate: deleting)).map(\.objectID)
        let deleted = try context.execute(BatchDeleteRequest<Cell>(predicate: deleting)).deleted
        #expect(deleted.count == 30)
        #expect(deleted.count == Set(deleted).count)
        #expect(Set(deleted) == Set(toDelete))
        #expect(try context.count(FetchRequest<Cell>()) == 70)
        let stillUpdated = #Predicate<Cell> { $0.value == -1 }
        #expect(try context.count(FetchRequest<Cell>(predicate: stillUpdated)) == 28)
        try container.close()
    }

    @Test(
        "batch update by predicate sets the values and keeps the others",
        arguments: TestStoreKind.persistent
    )
    func update(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try grid(store)
        let holder = container.newContext()
        let watched = try #require(
            try holder.fetch(FetchRequest<Cell>(predicate: #Predicate { $0.value == 95 })).first
        )
        let result = try holder.execute(
            BatchUpdateRequest<Cell>(
                predicate: #Predicate { $0.value >= 90 },
                updates: [.set(\.value, to: -1)]
            )
        )
        #expect(result.updated.count == 10)
        #expect(watched.value == -1, "the executing context merges the change")
        let context = container.newContext()
        let cells = try context.fetch(FetchRequest<Cell>(predicate: #Predicate { $0.row == 9 }))
        #expect(cells.count == 10)
        #expect(cells.allSatisfy { $0.value == -1 })
        #expect(Set(cells.map(\.column)) == Set(0..<10))
        #expect(try values(container).filter { $0 >= 0 }.count == 90)
        // The columns that fetches filter with follow the update.
        #expect(try context.count(FetchRequest<Cell>(predicate: #Predicate { $0.value < 0 })) == 10)
        try container.close()
        let reopened = try store.open(for: testEntities)
        #expect(try values(reopened).filter { $0 == -1 }.count == 10)
        try reopened.close()
    }

    @Test(
        "a batch update that breaks a uniqueness constraint fails and writes nothing",
        arguments: TestStoreKind.available
    )
    func updateUniqueness(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try grid(store)
        let context = container.newContext()
        let before = try container.coordinator.store.transactionCount
        do {
            // Every cell of row 1 onto column 0: ten cells at (1, 0).
            try context.execute(
                BatchUpdateRequest<Cell>(
                    predicate: #Predicate { $0.row == 1 },
                    updates: [.set(\.column, to: 0)]
                )
            )
            Issue.record("a batch update making duplicates must fail")
        } catch {
            #expect(error.code == .uniqueness)
        }
        #expect(try container.coordinator.store.transactionCount == before)
        // Moving a row to one that is free is fine.
        try context.execute(
            BatchUpdateRequest<Cell>(
                predicate: #Predicate { $0.row == 1 },
                updates: [.set(\.row, to: 42)]
            )
        )
        #expect(try context.count(FetchRequest<Cell>(predicate: #Predicate { $0.row == 42 })) == 10)
        try container.close()
    }

    @Test("batch updates of relationships and external data are refused")
    func updateRefusals() throws {
        let directory = TemporaryDirectory()
        let container = try makeContainer(directory)
        let context = container.newContext()
        let configuration = Configuration(context: context)
        configuration.name = "spots"
        try context.save()
        for refused in [
            BatchUpdateRequest<Configuration>(updates: [.set(\.thumbnail, to: Data([1]))]),
            BatchUpdateRequest<Configuration>(updates: [.set(\.snapshots, to: [])]),
        ] {
            #expect {
                try context.execute(refused)
            } throws: { ($0 as? ObjectLogError)?.code == .invalidArgument }
        }
        // An attribute beside external data: the data's blob stays referred to.
        let state = Data(repeating: 9, count: ExternalStorage.minimumByteCount)
        let snapshot = Snapshot(context: context)
        snapshot.state = state
        try context.save()
        try context.execute(BatchUpdateRequest<Snapshot>(updates: [.set(\.step, to: 7)]))
        try container.coordinator.logStore!.compact()
        let check = container.newContext()
        let read = try #require(try check.fetch(Snapshot.self).first)
        #expect(read.step == 7)
        #expect(read.state == state, "compaction kept the blob the updated record refers to")
        try container.close()
    }

    @Test(
        "batch insert from plain values, with uniqueness, and a failing fill",
        arguments: TestStoreKind.available
    )
    func insert(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        let result = try context.execute(
            BatchInsertRequest<Cell>(count: 50) { index, cell in
                cell.row = index / 10
                cell.column = index % 10
                // The value is left at its default for odd indices.
                if index % 2 == 0 { cell.value = Double(index) }
            }
        )
        #expect(result.inserted.count == 50)
        let cells = try context.fetch(Cell.self).sorted {
            ($0.row, $0.column) < ($1.row, $1.column)
        }
        #expect(cells.count == 50)
        #expect(
            cells.enumerated().allSatisfy { index, cell in
                cell.value == (index % 2 == 0 ? Double(index) : 0)
            }
        )
        let commits = try container.coordinator.store.transactionCount
        #expect {
            try context.execute(BatchInsertRequest<Cell>(count: 1) { _, cell in cell.row = 0 })
        } throws: { ($0 as? ObjectLogError)?.code == .uniqueness }
        struct Refused: Error {}
        do {
            try context.execute(
                BatchInsertRequest<Cell>(count: 3) { index, cell in
                    if index == 2 { throw Refused() }
                    cell.row = 100 + index
                }
            )
            Issue.record("a failing fill must fail the insert")
        } catch {
            #expect(error.code == .callbackFailed)
            #expect(error.underlyingError is Refused)
        }
        #expect(try container.coordinator.store.transactionCount == commits)
        #expect(try context.count(FetchRequest<Cell>()) == 50)
        try container.close()
    }

    @Test(
        "batch delete of an entity with relationships follows its delete rules",
        arguments: TestStoreKind.persistent
    )
    func deleteRules(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        for name in ["a", "b"] {
            let configuration = Configuration(context: context)
            configuration.name = name
            insertSnapshots(3, of: configuration, into: context)
        }
        let folder = Folder(context: context)
        folder.title = "kept"
        let note = Note(context: context)
        note.folder = folder
        try context.save()
        // Cascade: the snapshots of "a" go with it.
        let result = try context.execute(
            BatchDeleteRequest<Configuration>(predicate: #Predicate { $0.name == "a" })
        )
        #expect(result.deleted.count == 4)
        let check = container.newContext()
        #expect(try check.count(FetchRequest<Snapshot>()) == 3)
        #expect(try check.fetch(Configuration.self).map(\.name) == ["b"])
        // Deny: a folder with notes stays.
        #expect {
            try context.execute(BatchDeleteRequest<Folder>())
        } throws: { ($0 as? ObjectLogError)?.code == .validation }
        #expect(try check.count(FetchRequest<Folder>()) == 1)
        try container.close()
    }

    @Test(
        "batch requests for a class outside the model throw entityNotInModel and write nothing",
        arguments: TestStoreKind.available
    )
    func outsideTheModel(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try grid(store)
        let context = container.newContext()
        let commits = try container.coordinator.store.transactionCount
        let outside: [(String, () throws -> Void)] = [
            ("delete", { _ = try context.execute(BatchDeleteRequest<Tally>()) }),
            (
                "update",
                {
                    _ = try context.execute(
                        BatchUpdateRequest<Tally>(updates: [.set(\.count, to: 1)])
                    )
                }
            ),
            (
                "insert",
                { _ = try context.execute(BatchInsertRequest<Tally>(count: 2) { _, _ in }) }
            ),
        ]
        for (name, request) in outside {
            do {
                try request()
                Issue.record("a batch \(name) of a class outside the model did not throw")
            } catch let error as ObjectLogError {
                #expect(error.code == .entityNotInModel, "batch \(name)")
            }
        }
        #expect(try container.coordinator.store.transactionCount == commits)
        #expect(try context.count(FetchRequest<Cell>()) == 100)
        try container.close()
    }

    @Test(
        "the executing context keeps its own unsaved edits of objects a batch request touches",
        arguments: TestStoreKind.available
    )
    func ownUnsavedEdits(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try grid(store)
        let context = container.newContext()
        let cells = try context.fetch(
            FetchRequest<Cell>(
                predicate: #Predicate { $0.row == 0 && $0.column < 2 },
                sortBy: [SortDescriptor(\.column)]
            )
        )
        let (edited, doomed) = (cells[0], cells[1])
        edited.column = 50
        doomed.column = 60
        // An update sets the values it names; the context's unsaved edit of another property
        // stays unsaved, and wins at the save.
        _ = try context.execute(
            BatchUpdateRequest<Cell>(
                predicate: #Predicate { $0.row == 0 && $0.column == 0 },
                updates: [.set(\.value, to: 7)]
            )
        )
        #expect(edited.value == 7)
        #expect(edited.column == 50)
        #expect(context.hasChanges)
        // A delete removes the object, unsaved edits and all.
        _ = try context.execute(
            BatchDeleteRequest<Cell>(predicate: #Predicate { $0.row == 0 && $0.column == 1 })
        )
        #expect(doomed.isDeleted || doomed.managedObjectContext == nil)
        try context.save()
        let check = container.newContext()
        let stored = try check.fetch(
            FetchRequest<Cell>(predicate: #Predicate { $0.row == 0 && $0.column >= 50 })
        )
        #expect(stored.map(\.column) == [50])
        #expect(stored.map(\.value) == [7])
        try container.close()
    }
}
