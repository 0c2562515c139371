import Foundation
import ObjectLogStore
import TestSupport
import Testing

@testable import ObjectLog

/// A batch update reads its objects, then commits their new records; a save in between must
/// not be overwritten by the records it read before.
@Suite("A batch update keeps the saves made while it runs")
struct BatchUpdateConcurrencyTests {
    /// A container with 100 cells, `value` 0 through 99.
    func cells(_ directory: TemporaryDirectory) throws -> PersistentContainer {
        let container = try PersistentContainer(
            path: directory.file("cells.olog"),
            for: testEntities
        )
        let context = container.newContext()
        for index in 0..<100 {
            let cell = Cell(context: context)
            cell.row = index / 10
            cell.column = index % 10
            cell.value = Double(index)
        }
        try context.save()
        return container
    }

    /// Moves the cell with `value` to column `column + 100` in a context of its own.
    func moveCell(valued value: Double, in container: PersistentContainer) {
        do {
            let other = container.newContext()
            let request = FetchRequest<Cell>(predicate: #Predicate { $0.value == value })
            let cell = try #require(try other.fetch(request).first)
            cell.column += 100
            try other.save()
        } catch {
            Issue.record("the save in between failed: \(error)")
        }
    }

    /// Sets `value` to -1 on the cells from 90 up through `context`, running `saving` between
    /// each run's reading of the cells and its commit.
    func updateNineties(
        in context: ManagedObjectContext,
        between saving: @escaping () -> Void
    ) throws -> ObjectChanges {
        context.tracer = ContextTracer(beforeBatchUpdateCommit: saving)
        return try context.execute(
            BatchUpdateRequest<Cell>(
                predicate: #Predicate { $0.value >= 90 },
                updates: [.set(\.value, to: -1)]
            )
        )
    }

    /// How many cells of `container` match `predicate`, counted in a new context.
    func count(_ container: PersistentContainer, _ predicate: Predicate<Cell>) throws -> Int {
        try container.newContext().count(FetchRequest<Cell>(predicate: predicate))
    }

    @Test("a save in between is kept: the update reads the objects again and sets both")
    func saveInBetweenIsKept() throws {
        let directory = TemporaryDirectory()
        let container = try cells(directory)
        var runs = 0
        let result = try updateNineties(in: container.newContext()) {
            runs += 1
            if runs == 1 { moveCell(valued: 95, in: container) }
        }
        #expect(runs == 2, "the update ran again after the save")
        #expect(result.updated.count == 10)
        let moved = try container.newContext().fetch(
            FetchRequest<Cell>(predicate: #Predicate { $0.column >= 100 })
        )
        #expect(moved.count == 1)
        #expect(moved.first?.value == -1, "the save's column and the update's value both hold")
        #expect(try count(container, #Predicate { $0.value == -1 }) == 10)
        try container.close()
    }

    @Test("a save in between that touches none of its objects lets it commit at once")
    func unrelatedSaveInBetween() throws {
        let directory = TemporaryDirectory()
        let container = try cells(directory)
        var runs = 0
        let result = try updateNineties(in: container.newContext()) {
            runs += 1
            if runs == 1 { moveCell(valued: 5, in: container) }
        }
        #expect(runs == 1)
        #expect(result.updated.count == 10)
        #expect(try count(container, #Predicate { $0.value == -1 }) == 10)
        #expect(try count(container, #Predicate { $0.column >= 100 }) == 1)
        try container.close()
    }

    @Test("saves that change its objects every time make it fail with conflict, writing nothing")
    func savesEveryTimeConflict() throws {
        let directory = TemporaryDirectory()
        let container = try cells(directory)
        var runs = 0
        let error = #expect(throws: ObjectLogError.self) {
            try updateNineties(in: container.newContext()) {
                runs += 1
                moveCell(valued: 95, in: container)
            }
        }
        #expect(error?.code == .conflict)
        #expect(runs == ManagedObjectContext.batchUpdateAttempts)
        #expect(try count(container, #Predicate { $0.value == -1 }) == 0)
        let moved = try container.newContext().fetch(
            FetchRequest<Cell>(predicate: #Predicate { $0.value == 95 })
        )
        #expect(moved.first?.column == 5 + 100 * runs)
        try container.close()
    }
}
