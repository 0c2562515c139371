import Foundation
import ObjectLogStore
import TestSupport
import Testing

@testable import ObjectLog

/// Two versions of a model whose batch updates write patch records.
enum PatchV1 {
    final class Item: ManagedObject {
        @Attribute var name = ""
        @Attribute var count = 0
        @Attribute var score = 0.0
        @Attribute var note: String? = nil
        override class var entityName: String { "Item" }
    }
    static let entities: [ManagedObject.Type] = [Item.self]
}

enum PatchV2 {
    final class Item: ManagedObject {
        @Attribute var name = ""
        @Attribute var count = 0
        // Renamed from `score`.
        @Attribute(originalName: "score") var rating = 0.0
        @Attribute var note: String? = nil
        // New: objects written before take the default.
        @Attribute var shelf = "A"
        override class var entityName: String { "Item" }
    }
    static let entities: [ManagedObject.Type] = [Item.self]
}

@Suite("Batch updates by patch records")
struct PatchedBatchUpdateTests {
    /// `count` items: name "item N", count N, score N, note "n N" for odd N.
    static func fill(_ container: PersistentContainer, count: Int) throws {
        let context = container.newContext()
        for index in 0..<count {
            let item = PatchV1.Item(context: context)
            item.name = "item \(index)"
            item.count = index
            item.score = Double(index)
            item.note = index % 2 == 1 ? "n \(index)" : nil
        }
        try context.save()
    }

    /// Every item's values as the fetches, the single lookups and the columns give them, which
    /// must agree; by count.
    static func values(
        _ container: PersistentContainer
    ) throws -> [Int: (name: String, score: Double, note: String?)] {
        let context = container.newContext()
        var fetched: [Int: (name: String, score: Double, note: String?)] = [:]
        for item in try context.fetch(PatchV1.Item.self) {
            fetched[item.count] = (item.name, item.score, item.note)
        }
        // One by one, in a context of their own.
        let single = container.newContext()
        for item in try context.fetch(PatchV1.Item.self) {
            let alone = try single.existingObject(with: item.objectID, as: PatchV1.Item.self)
            #expect(alone.name == item.name && alone.score == item.score && alone.note == item.note)
        }
        // The columns and the text search read the records too.
        let negative = try context.count(
            FetchRequest<PatchV1.Item>(predicate: #Predicate { $0.score < 0 })
        )
        #expect(negative == fetched.values.filter { $0.score < 0 }.count)
        let renamed = try context.count(
            FetchRequest<PatchV1.Item>(predicate: #Predicate { $0.name.contains("renamed") })
        )
        #expect(renamed == fetched.values.filter { $0.name.contains("renamed") }.count)
        return fetched
    }

    /// The keys of the items whose record is a patch.
    static func patchedCounts(_ container: PersistentContainer) throws -> Set<Int> {
        let store = container.coordinator.logStore!
        let context = container.newContext()
        return Set(
            try context.fetch(PatchV1.Item.self).filter {
                store.location(of: $0.objectID.key)?.isPatch == true
            }.map(\.count)
        )
    }

    @Test(
        "a batch update writes a patch for each object, which every read merges, before and after a reopen and a compaction",
        arguments: [false, true]
    )
    func patchesReadBack(parallel: Bool) throws {
        let directory = TemporaryDirectory()
        let path = directory.file("items.objectlog")
        let container = try PersistentContainer(path: path, for: PatchV1.entities)
        try Self.fill(container, count: 300)
        let context = container.newContext()
        context.tuning.parallelBatchThreshold = parallel ? 2 : .max
        context.tuning.parallelPartSize = 16
        let result = try context.execute(
            BatchUpdateRequest<PatchV1.Item>(
                predicate: #Predicate { $0.count % 3 == 0 },
                updates: [.set(\.score, to: -1), .set(\.name, to: "renamed")]
            )
        )
        #expect(result.updated.count == 100)
        #expect(try Self.patchedCounts(container) == Set(stride(from: 0, to: 300, by: 3)))
        var expected: [Int: (name: String, score: Double, note: String?)] = [:]
        for index in 0..<300 {
            let note = index % 2 == 1 ? "n \(index)" : nil
            expected[index] =
                index % 3 == 0 ? ("renamed", -1, note) : ("item \(index)", Double(index), note)
        }
        func check(_ container: PersistentContainer) throws {
            let values = try Self.values(container)
            #expect(values.count == 300)
            for (count, value) in expected {
                let found = values[count]
                #expect(
                    found?.name == value.name && found?.score == value.score
                        && found?.note == value.note,
                    "item \(count): \(String(describing: found))"
                )
            }
        }
        try check(container)
        try container.close()
        for usesIndex in [true, false] {
            var options = StoreOptions()
            options.usesIndex = usesIndex
            let reopened = try PersistentContainer(
                path: path,
                for: PatchV1.entities,
                options: options
            )
            #expect(try Self.patchedCounts(reopened).count == 100)
            try check(reopened)
            try reopened.close()
        }
        let compacted = try PersistentContainer(path: path, for: PatchV1.entities)
        try compacted.coordinator.logStore!.compact()
        #expect(try Self.patchedCounts(compacted).isEmpty)
        try check(compacted)
        try compacted.close()
    }

    @Test("a batch update of patched objects writes them whole; the next patches them again")
    func patchOverPatch() throws {
        let directory = TemporaryDirectory()
        let container = try PersistentContainer(
            path: directory.file("items.objectlog"),
            for: PatchV1.entities
        )
        try Self.fill(container, count: 50)
        let context = container.newContext()
        let all = #Predicate<PatchV1.Item> { $0.count < 10 }
        _ = try context.execute(BatchUpdateRequest(predicate: all, updates: [.set(\.score, to: 1)]))
        #expect(try Self.patchedCounts(container) == Set(0..<10))
        // Patched already: written whole, with both changes.
        _ = try context.execute(
            BatchUpdateRequest(predicate: all, updates: [.set(\.note, to: "second")])
        )
        #expect(try Self.patchedCounts(container).isEmpty)
        _ = try context.execute(
            BatchUpdateRequest(predicate: all, updates: [.set(\.name, to: "third")])
        )
        #expect(try Self.patchedCounts(container) == Set(0..<10))
        let values = try Self.values(container)
        for count in 0..<10 {
            #expect(values[count]?.name == "third")
            #expect(values[count]?.score == 1)
            #expect(values[count]?.note == "second")
        }
        #expect(values[10]?.name == "item 10" && values[10]?.score == 10)
        try container.close()
    }

    @Test("patches survive a model change: read, patched and compacted in the next version")
    func patchesAcrossVersions() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("items.objectlog")
        let first = try PersistentContainer(path: path, for: PatchV1.entities)
        try Self.fill(first, count: 40)
        // Patches written by version 1.
        _ = try first.newContext().execute(
            BatchUpdateRequest<PatchV1.Item>(
                predicate: #Predicate { $0.count < 20 },
                updates: [.set(\.score, to: -5)]
            )
        )
        try first.close()

        func check(_ container: PersistentContainer, shelf: (Int) -> String) throws {
            let items = try container.newContext().fetch(PatchV2.Item.self)
            #expect(items.count == 40)
            for item in items {
                let index = item.count
                #expect(item.rating == (index < 20 ? -5 : Double(index)), "item \(index)")
                #expect(item.note == (index % 2 == 1 ? "n \(index)" : nil))
                #expect(item.shelf == shelf(index))
                #expect(item.name == "item \(index)")
            }
        }
        let second = try PersistentContainer(path: path, for: PatchV2.entities)
        try check(second) { _ in "A" }
        // Version 2 patches objects whose bases version 1 wrote; those patched before are
        // written whole.
        _ = try second.newContext().execute(
            BatchUpdateRequest<PatchV2.Item>(
                predicate: #Predicate { $0.count >= 10 },
                updates: [.set(\.shelf, to: "B")]
            )
        )
        let store = second.coordinator.logStore!
        let patched = try second.newContext().fetch(PatchV2.Item.self).filter {
            store.location(of: $0.objectID.key)?.isPatch == true
        }.map(\.count)
        #expect(Set(patched) == Set(0..<10).union(20..<40))
        try check(second) { $0 >= 10 ? "B" : "A" }
        try second.close()
        let reopened = try PersistentContainer(path: path, for: PatchV2.entities)
        try check(reopened) { $0 >= 10 ? "B" : "A" }
        try reopened.coordinator.logStore!.compact()
        try check(reopened) { $0 >= 10 ? "B" : "A" }
        try reopened.close()
    }

    @Test("a rewriting migration stage sees a patched object's merged value")
    func rewriteStageMerges() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("notes.objectlog")
        let container = try PersistentContainer(path: path, for: RunPlan.versions[0].entities)
        let context = container.newContext()
        RunPlan.insertNotes(60, into: context) { _ in ("a", "b", "c", "d") }
        try context.save()
        _ = try context.execute(
            BatchUpdateRequest<RunPlan.NoteV1>(
                predicate: #Predicate { $0.n < 30 },
                updates: [.set(\.c, to: "patched")]
            )
        )
        try container.close()
        let stage = MigrationStage.rewrite(
            from: "1",
            to: "2",
            entities: [
                "Note": { old, new in
                    guard case .int(let number)? = old["n"], case .string(let c)? = old["c"]
                    else { return }
                    new["n"] = .string("\(number):\(c)")
                }
            ]
        )
        let migrated = try PersistentContainer(
            path: path,
            plan: MigrationPlan(versions: RunPlan.versions, stages: [stage])
        )
        let notes = try migrated.newContext().fetch(RunPlan.NoteV2.self)
        #expect(notes.count == 60)
        for note in notes {
            let parts = note.n.split(separator: ":")
            let number = Int(parts.first ?? "") ?? -1
            let c = number < 30 ? "patched" : "c"
            #expect(note.n == "\(number):\(c)" && note.c == c, "\(note.n) \(note.c)")
        }
        try migrated.close()
    }
}
