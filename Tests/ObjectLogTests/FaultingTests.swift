import Foundation
import TestSupport
import Testing

@testable import ObjectLog

@Suite("Faults outlive their context, report store errors, and survive compaction")
struct FaultingTests {
    /// Saves `count` cells with row = index and value = 10 × index.
    private func fill(_ container: PersistentContainer, count: Int) throws {
        let context = container.newContext()
        for index in 0..<count {
            let cell = Cell(context: context)
            cell.row = index
            cell.value = Double(index * 10)
        }
        try context.save()
    }

    @Test("faults fetched by a context that is gone still load their saved values")
    func faultsOutliveTheirContext() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        try fill(container, count: 50)
        // The context is a temporary: nothing holds it once `fetch` returns.
        let cells = try container.newContext().fetch(FetchRequest<Cell>())
        #expect(cells.count == 50)
        #expect(cells.allSatisfy { $0.isFault })
        #expect(cells.allSatisfy { $0.managedObjectContext == nil })
        let rows = cells.map(\.row).sorted()
        #expect(rows == Array(0..<50))
        #expect(cells.allSatisfy { $0.value == Double($0.row * 10) })
        for cell in cells { try cell.fulfillFault() }
    }

    @Test("a damaged record makes the fault's context throw at the next fetch and save")
    func storeErrorsWhileLoadingAFaultSurface() throws {
        let directory = TemporaryDirectory()
        let container = try makeContainer(directory)
        try fill(container, count: 3)
        let context = container.newContext()
        let cells = try context.fetch(FetchRequest<Cell>())
        let victim = try #require(cells.first)
        let location = try #require(
            container.coordinator.logStore!.location(of: victim.objectID.key)
        )
        // Flip a byte of the victim's payload on disk: its checksum no longer matches.
        let handle = try #require(FileHandle(forUpdatingAtPath: directory.file("test.objectlog")))
        let at = location.offset + UInt64(location.length) - 1  // the record's last byte
        try handle.seek(toOffset: at)
        let byte = try #require(try handle.read(upToCount: 1)?.first)
        try handle.seek(toOffset: at)
        try handle.write(contentsOf: Data([byte ^ 0xFF]))
        try handle.close()

        _ = victim.row  // a getter cannot throw: the error is kept
        #expect(context.faultError != nil)
        #expect(throws: ObjectLogError.self) { try context.fetch(FetchRequest<Cell>()) }
        // Reported once; the context works again.
        #expect(context.faultError == nil)
        #expect(try context.count(FetchRequest<Cell>()) == 3)

        // A save throws it too, and writes nothing.
        let other = container.newContext()
        let again = try other.fetch(FetchRequest<Cell>())
        let copy = try #require(again.first { $0.objectID == victim.objectID })
        copy.value = 99
        #expect(other.faultError != nil)
        let before = container.coordinator.logStore!.transactionCount
        #expect(throws: ObjectLogError.self) { try other.save() }
        #expect(container.coordinator.logStore!.transactionCount == before)

        // The throwing accessor reports it at once.
        let third = container.newContext()
        let fault = try third.object(with: victim.objectID)
        do {
            try fault.fulfillFault()
            Issue.record("loading a damaged record must throw")
        } catch {
            #expect(error.code == .store)
        }
        // A healthy object loads.
        let healthy = try #require(cells.last)
        try third.object(with: healthy.objectID).fulfillFault()
    }

    @Test("an object deleted from the store cannot be read as default values")
    func deletedObjectFaultThrows() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        try fill(container, count: 2)
        let reader = container.newContext()
        let fault = try #require(try reader.fetch(FetchRequest<Cell>()).first)
        let deleter = container.newContext()
        deleter.delete(try deleter.object(with: fault.objectID))
        try deleter.save()
        do {
            try fault.fulfillFault()
            Issue.record("a fault of a deleted object must not load")
        } catch {
            #expect(error.code == .notFound)
        }
    }

    @Test("after compaction, saving objects loaded before it does not report a conflict")
    func noSpuriousConflictAfterCompaction() throws {
        let directory = TemporaryDirectory()
        let container = try makeContainer(directory)
        try fill(container, count: 20)
        // Superseded records make compaction move the live ones.
        let churn = container.newContext()
        for cell in try churn.fetch(FetchRequest<Cell>()) { cell.value += 1 }
        try churn.save()

        let context = container.newContext()
        let cells = try context.fetch(FetchRequest<Cell>(sortBy: [SortDescriptor(\.row)]))
        let loadedOneByOne = cells[0]
        _ = loadedOneByOne.value  // exact offset
        let fetchedWithValues = try context.fetch(
            FetchRequest<Cell>(predicate: #Predicate { $0.row >= 10 })
        )  // offset bound
        let report = try container.coordinator.logStore!.compact()
        #expect(report.bytesAfter < report.bytesBefore)

        loadedOneByOne.value = -1
        for cell in fetchedWithValues { cell.value = -2 }
        try context.save()

        // A real conflict across a compaction is still caught.
        let stale = container.newContext()
        let staleCell = try #require(
            try stale.fetch(FetchRequest<Cell>(predicate: #Predicate { $0.row == 5 })).first
        )
        let writer = container.newContext()
        let fresh = try #require(
            try writer.fetch(FetchRequest<Cell>(predicate: #Predicate { $0.row == 5 })).first
        )
        fresh.value = 500
        try writer.save()
        try container.coordinator.logStore!.compact()
        staleCell.value = 600
        do {
            try stale.save()
            Issue.record("an update of an object changed since it was loaded must conflict")
        } catch {
            #expect(error.code == .conflict)
        }

        let checker = container.newContext()
        let values = try checker.fetch(FetchRequest<Cell>(sortBy: [SortDescriptor(\.row)]))
            .map(\.value)
        #expect(values[0] == -1)
        #expect(values[5] == 500)
        #expect(values[10...].allSatisfy { $0 == -2 })
    }

    @Test("loading many faults that are a minority of the objects reads just their records")
    func bulkLoadOfSomeFaults() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let total = ManagedObjectContext.faultsForBulkLoad * 5
        try fill(container, count: total)
        let ids = try container.newContext().fetchIdentifiers(FetchRequest<Cell>())
        let chosen = stride(from: 0, to: ids.count, by: 3).map { ids[$0] }
        #expect(chosen.count >= ManagedObjectContext.faultsForBulkLoad)
        #expect(chosen.count * 2 < total)
        let context = container.newContext()
        context.tracer = ContextTracer()
        let cells = try chosen.map { try context.object(with: $0, as: Cell.self) }
        var mismatches = 0
        for cell in cells where cell.value != Double(cell.row * 10) { mismatches += 1 }
        #expect(mismatches == 0)
        #expect(Set(cells.map(\.row)).count == chosen.count)
        #expect(context.statistics.bulkFaultLoads == 1)
        #expect(context.faultError == nil)
        // Objects not asked for stay unregistered.
        #expect(context.registeredObjects.count == chosen.count)
    }

    @Test("external data not yet read stays readable after the context is gone")
    func externalDataOutlivesTheContext() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let writer = container.newContext()
        let configuration = Configuration(context: writer)
        configuration.name = "spots"
        let thumbnail = Data(
            (0..<(ExternalStorage.minimumByteCount * 2)).map { UInt8(truncatingIfNeeded: $0 * 7) }
        )
        configuration.thumbnail = thumbnail
        try writer.save()

        let fetched = try container.newContext().fetch(
            FetchRequest<Configuration>(predicate: #Predicate { $0.name == "spots" })
        )
        let found = try #require(fetched.first)
        #expect(found.managedObjectContext == nil)
        #expect(found.thumbnail == thumbnail)
        try found.fulfillFault()
    }
}
