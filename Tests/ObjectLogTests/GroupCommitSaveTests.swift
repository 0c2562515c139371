import Foundation
import ObjectLog
import ObjectLogStore
import Synchronization
import TestSupport
import Testing

@testable import ObjectLog

/// Runs `body` on a thread of its own; `group` is left when it returns.
private func spawn(_ group: DispatchGroup, _ body: @escaping @Sendable () -> Void) {
    group.enter()
    Thread {
        body()
        group.leave()
    }
    .start()
}

/// Saves of contexts on several threads share the store's flushes: each save is checked and
/// written under the coordinator's lock, and waits for its flush without it.
@Suite("Group commit: saves of several contexts share a flush")
struct GroupCommitSaveTests {
    final class Reading: ManagedObject {
        @Attribute var value = 0
    }

    /// A container of `testEntities` and `Reading` over `fileSystem`.
    static func container(on fileSystem: any FileSystem) throws -> PersistentContainer {
        var options = StoreOptions()
        options.fileSystem = fileSystem
        return try PersistentContainer(
            path: "/g.olog",
            model: try ManagedObjectModel(testEntities + [Reading.self]),
            options: options
        )
    }

    @Test("contexts on eight threads saving one object at a time all land and reopen intact")
    func eightContextsSave() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("group.olog")
        let container = try PersistentContainer(path: path, for: testEntities)
        let threadCount = 8
        let perThread = 25
        let failures = Mutex<[String]>([])
        let numbers = Mutex<[Int: [UInt64]]>([:])
        let threads = DispatchGroup()
        for thread in 0..<threadCount {
            spawn(threads) {
                let context = container.newContext()
                context.onDidSave { changes in
                    guard let number = changes.transactionNumber else { return }
                    numbers.withLock { $0[thread, default: []].append(number) }
                }
                for index in 0..<perThread {
                    let cell = Cell(context: context)
                    cell.row = thread
                    cell.column = index
                    cell.value = Double(thread * 1000 + index)
                    do {
                        try context.save()
                    } catch {
                        failures.withLock { $0.append("\(thread).\(index): \(error)") }
                    }
                }
            }
        }
        threads.wait()
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(3) })")
        let statistics = try #require(container.coordinator.logStore?.statistics)
        #expect(statistics.logSyncs <= statistics.commits)
        // Each context's saves in the order it made them.
        for (thread, list) in numbers.withLock({ $0 }) {
            #expect(list == list.sorted() && list.count == perThread, "thread \(thread)")
        }
        try container.close()

        let reopened = try PersistentContainer(path: path, for: testEntities)
        let cells = try reopened.newContext().fetch(FetchRequest<Cell>())
        #expect(cells.count == threadCount * perThread)
        #expect(cells.allSatisfy { $0.value == Double($0.row * 1000 + $0.column) })
        try reopened.close()
    }

    @Test(
        "a save checked while another's commit waits for its flush meets it: a conflict, a uniqueness violation"
    )
    func checksSeeAPendingSave() throws {
        let fileSystem = GatedFileSystem(base: MemoryFileSystem())
        let container = try Self.container(on: fileSystem)
        let setup = container.newContext()
        let cell = Cell(context: setup)
        cell.row = 1
        try setup.save()
        let id = cell.objectID
        let first = container.newContext()
        let second = container.newContext()
        let mine = try #require(try first.existingObject(with: id) as? Cell)
        let theirs = try #require(try second.existingObject(with: id) as? Cell)
        _ = (mine.value, theirs.value)

        let flush = fileSystem.syncCount + 1
        fileSystem.hold(sync: flush)
        mine.value = 1
        let twin = Cell(context: first)
        twin.row = 7
        nonisolated(unsafe) let saving = first
        let threads = DispatchGroup()
        let saved = Mutex(false)
        spawn(threads) {
            saved.withLock { $0 = (try? saving.save()) != nil }
        }
        fileSystem.waitUntilHolding(sync: flush)
        // The first save is written, not durable: reads do not see it.
        #expect(try container.newContext().count(FetchRequest<Cell>()) == 1)
        theirs.value = 2
        let conflict = #expect(throws: ObjectLogError.self) { try second.save() }
        #expect(conflict?.code == .conflict)
        second.rollback()
        let other = Cell(context: second)
        other.row = 7
        let duplicate = #expect(throws: ObjectLogError.self) { try second.save() }
        #expect(duplicate?.code == .uniqueness)
        fileSystem.release(sync: flush)
        threads.wait()
        #expect(saved.withLock { $0 })
        let cells = try container.newContext().fetch(
            FetchRequest<Cell>(sortBy: [SortDescriptor(\.row)])
        )
        #expect(cells.map(\.row) == [1, 7])
        #expect(cells.first?.value == 1)
        try container.close()
    }

    @Test("a failed flush fails every save it covered, and the store keeps the saves before")
    func failedFlushFailsCoveredSaves() throws {
        let faulty = FaultyFileSystem()
        let fileSystem = GatedFileSystem(base: faulty)
        let container = try Self.container(on: fileSystem)
        let flush = fileSystem.syncCount + 1
        fileSystem.hold(sync: flush)
        let outcomes = Mutex<[Int: Bool]>([:])
        let threads = DispatchGroup()
        func save(_ value: Int) {
            spawn(threads) {
                let context = container.newContext()
                Reading(context: context).value = value
                let succeeded = (try? context.save()) != nil
                outcomes.withLock { $0[value] = succeeded }
            }
        }
        save(0)
        fileSystem.waitUntilHolding(sync: flush)
        let writes = fileSystem.writeCount
        for value in 1...4 { save(value) }
        fileSystem.waitForWrites(writes + 4)
        // The first save's flush has synced; the next, of the four written meanwhile, fails.
        faulty.fail(.sync, after: 1)
        fileSystem.release(sync: flush)
        threads.wait()
        #expect(outcomes.withLock { $0 } == [0: true, 1: false, 2: false, 3: false, 4: false])
        let readings = try container.newContext().fetch(FetchRequest<Reading>())
        #expect(readings.map(\.value) == [0])
        let context = container.newContext()
        Reading(context: context).value = 5
        let refused = #expect(throws: ObjectLogError.self) { try context.save() }
        #expect(refused?.storeError?.code == .poisoned)
    }

    @Test("a fetch through the attribute columns waits for a save whose flush is running")
    func columnFetchWaitsForPendingSave() throws {
        let fileSystem = GatedFileSystem(base: MemoryFileSystem())
        let container = try Self.container(on: fileSystem)
        let setup = container.newContext()
        for value in 0..<100 { Reading(context: setup).value = value }
        try setup.save()
        func below(_ bound: Int) throws -> Int {
            let context = container.newContext()
            context.tracer = ContextTracer()
            let count = try context.count(
                FetchRequest<Reading>(predicate: #Predicate { $0.value < bound })
            )
            #expect(context.statistics.columnScans == 1, "the columns decided the count")
            return count
        }
        #expect(try below(50) == 50)

        let flush = fileSystem.syncCount + 1
        fileSystem.hold(sync: flush)
        let saver = container.newContext()
        for reading in try saver.fetch(FetchRequest<Reading>()) where reading.value < 10 {
            reading.value += 1000
        }
        nonisolated(unsafe) let saving = saver
        let threads = DispatchGroup()
        spawn(threads) { try? saving.save() }
        fileSystem.waitUntilHolding(sync: flush)
        // The count waits for the save's flush, and then sees it in the columns and the
        // records alike.
        spawn(threads) {
            Thread.sleep(forTimeInterval: 0.05)
            fileSystem.release(sync: flush)
        }
        #expect(try below(50) == 40)
        threads.wait()
        let values = try container.newContext().fetch(FetchRequest<Reading>()).map(\.value)
        #expect(values.filter { $0 < 50 }.count == 40)
    }
}
