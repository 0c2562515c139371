import Foundation
import ObjectLog
import StoreTestSupport
import TestSupport
import Testing

// Four wrong answers a differential test against SQLite found, each pinned in a few lines of
// public API.

final class TruthOwner: ManagedObject {
    @Attribute var name = ""
    @Relationship(inverse: \TruthItem.owner) var items: Set<TruthItem>
    override class var entityName: String { "Owner" }
}

final class TruthItem: ManagedObject {
    @Attribute var name = ""
    @Attribute var count = 0
    @Relationship var owner: TruthOwner?
    @Relationship(inverse: \TruthLabel.items) var labels: Set<TruthLabel>
    override class var entityName: String { "Item" }
}

final class TruthLabel: ManagedObject {
    @Attribute var name = ""
    @Relationship var items: Set<TruthItem>
    override class var entityName: String { "Label" }
}

@Suite("Every fetch tells the truth")
struct FetchTruthTests {
    let entities: [ManagedObject.Type] = [TruthOwner.self, TruthItem.self, TruthLabel.self]

    /// Three items owned by "Zed", "Zed" and "Amy", with 2, 0 and 1 labels.
    func items(in container: PersistentContainer) throws -> [ObjectID] {
        let context = container.newContext()
        let zed = TruthOwner(context: context)
        zed.name = "Zed"
        let amy = TruthOwner(context: context)
        amy.name = "Amy"
        let labels = (0..<2).map { index in
            let label = TruthLabel(context: context)
            label.name = "l\(index)"
            return label
        }
        var items: [TruthItem] = []
        for (index, owner) in [zed, zed, amy].enumerated() {
            let item = TruthItem(context: context)
            item.name = "item \(index)"
            item.owner = owner
            items.append(item)
        }
        items[0].labels = Set(labels)
        items[2].labels = [labels[0]]
        try context.save()
        return items.map(\.objectID)
    }

    @Test(
        "fetchIdentifiers sorts through a relationship as fetch does, registered or not",
        arguments: TestStoreKind.available
    )
    func identifiersSortThroughRelationships(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: entities)
        let ids = try items(in: container)
        let requests = [
            FetchRequest<TruthItem>(sortBy: [SortDescriptor(\.owner?.name)]),
            FetchRequest<TruthItem>(sortBy: [SortDescriptor(\.labels.count, order: .reverse)]),
            FetchRequest<TruthItem>(
                predicate: #Predicate { $0.count == 0 },
                sortBy: [SortDescriptor(\.owner?.name)]
            ),
        ]
        let expected = [
            [ids[2], ids[0], ids[1]], [ids[0], ids[2], ids[1]], [ids[2], ids[0], ids[1]],
        ]
        for (request, order) in zip(requests, expected) {
            // A fresh context: nothing registered.
            #expect(try container.newContext().fetchIdentifiers(request) == order)
            var limited = request
            limited.fetchLimit = 2
            #expect(try container.newContext().fetchIdentifiers(limited) == Array(order.prefix(2)))
            let context = container.newContext()
            #expect(try context.fetch(request).map(\.objectID) == order)
            #expect(try context.fetchIdentifiers(request) == order)
        }
    }

    /// Saves a change of `busy` and compacts the store, `times` times over: the other objects'
    /// records move while their context still holds what it loaded.
    private func saveAndCompact(
        _ busy: TruthItem,
        in context: ManagedObjectContext,
        of container: PersistentContainer,
        times: Int
    ) throws {
        for _ in 0..<times {
            busy.count += 1
            try context.save()
            try container.compact()
        }
    }

    @Test(
        "no false conflict however many compactions ran since an object was loaded",
        arguments: [4, 5, 9]
    )
    func noConflictAfterCompactions(compactions: Int) throws {
        let directory = TemporaryDirectory()
        let container = try PersistentContainer(path: directory.file("c.olog"), for: entities)
        let context = container.newContext()
        let kept = TruthItem(context: context)
        let busy = TruthItem(context: context)
        let doomed = TruthItem(context: context)
        try context.save()
        try saveAndCompact(busy, in: context, of: container, times: compactions)
        kept.count = 1
        context.delete(doomed)
        try context.save()
        let check = container.newContext()
        #expect(try check.fetch(TruthItem.self).map(\.count).sorted() == [1, compactions])
        try container.close()
    }

    @Test("a real conflict is still found after many compactions", arguments: [2, 6])
    func realConflictAfterCompactions(compactions: Int) throws {
        let directory = TemporaryDirectory()
        let container = try PersistentContainer(path: directory.file("c.olog"), for: entities)
        let context = container.newContext()
        let kept = TruthItem(context: context)
        let busy = TruthItem(context: context)
        try context.save()
        let other = container.newContext()
        let theirs = try other.object(with: kept.objectID, as: TruthItem.self)
        theirs.name = "theirs"
        try other.save()
        try saveAndCompact(busy, in: context, of: container, times: compactions)
        kept.count = 1
        #expect(throws: ObjectLogError.self) { try context.save() }
        try container.close()
    }

    @Test(
        "includesPendingChanges = false: saved values decide sorts and relationship predicates",
        arguments: TestStoreKind.available
    )
    func savedValuesDecide(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: entities)
        let context = container.newContext()
        let ada = TruthOwner(context: context)
        ada.name = "Ada"
        var byName: [String: TruthItem] = [:]
        for name in ["b", "c", "d"] {
            let item = TruthItem(context: context)
            item.name = name
            item.owner = ada
            byName[name] = item
        }
        try context.save()
        byName["b"]?.name = "z"
        ada.name = "Bea"
        let inserted = TruthItem(context: context)
        inserted.name = "a"
        inserted.owner = ada
        var sorted = FetchRequest<TruthItem>(sortBy: [SortDescriptor(\.name)])
        sorted.includesPendingChanges = false
        let order = try context.fetch(sorted)
        #expect(order.map { $0 === byName["b"] } == [true, false, false])
        #expect(order.map(\.name) == ["z", "c", "d"], "the objects keep their unsaved values")
        #expect(try context.fetchIdentifiers(sorted) == order.map(\.objectID))
        var owned = FetchRequest<TruthItem>(predicate: #Predicate { $0.owner?.name == "Ada" })
        owned.includesPendingChanges = false
        #expect(try context.count(owned) == 3)
        #expect(try context.fetch(owned).count == 3)
        #expect(try context.fetchIdentifiers(owned).count == 3)
        // With pending changes, the unsaved values decide.
        owned.includesPendingChanges = true
        #expect(try context.count(owned) == 0)
        sorted.includesPendingChanges = true
        #expect(try context.fetch(sorted).map(\.name) == ["a", "c", "d", "z"])
    }

    @Test(
        "an unsorted fetch is in key order, saved and unsaved objects alike, on every path",
        arguments: TestStoreKind.available
    )
    func keyOrder(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: entities)
        let first = container.newContext()
        let early = TruthItem(context: first)
        early.name = "early"
        try first.save()
        // Another context's keys come from a block of its own, above the first context's.
        let second = container.newContext()
        for index in 0..<3 { TruthItem(context: second).name = "second \(index)" }
        try second.save()
        let unsaved = TruthItem(context: first)
        unsaved.name = "unsaved"
        let keys = try first.fetch(TruthItem.self).map(\.objectID.key)
        #expect(keys == keys.sorted())
        #expect(keys.count == 5)
        #expect(try first.fetchIdentifiers(FetchRequest<TruthItem>()).map(\.key) == keys)
        let filtered = try first.fetch(
            FetchRequest<TruthItem>(predicate: #Predicate { $0.count == 0 })
        )
        #expect(filtered.map(\.objectID.key) == keys)
        // Pages do not shift across the save.
        var page = FetchRequest<TruthItem>()
        page.fetchOffset = 1
        page.fetchLimit = 2
        let before = try first.fetch(page).map(\.objectID)
        try first.save()
        #expect(try first.fetch(page).map(\.objectID) == before)
        #expect(try container.newContext().fetch(page).map(\.objectID) == before)
    }

    @Test("container.compact() reclaims old versions; contexts and a read-only container say so")
    func containerCompact() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("compact.olog")
        let container = try PersistentContainer(path: path, for: entities)
        let context = container.newContext()
        let item = TruthItem(context: context)
        for index in 0..<50 {
            item.name = String(repeating: "x", count: 100) + "\(index)"
            try context.save()
        }
        var fractions: [Double] = []
        let result = try container.compact { fractions.append($0) }
        #expect(result.bytesAfter < result.bytesBefore)
        #expect(result.objects == 1)
        #expect(fractions.last == 1)
        item.count = 7
        try context.save()
        try container.close()
        let reader = try PersistentContainer(path: path, for: entities, options: .readOnlyExisting)
        #expect(try reader.newContext().fetch(TruthItem.self).map(\.count) == [7])
        #expect(throws: ObjectLogError.self) { try reader.compact() }
        try reader.close()
    }

    @Test(
        "a cascade and a nullify show in fetches at once, before the save, unless pending changes are left out",
        arguments: TestStoreKind.available
    )
    func deleteRulesBeforeSave(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: testEntities)
        let context = container.newContext()
        var snapshots: [Snapshot] = []
        for name in ["kept", "doomed"] {
            let configuration = Configuration(context: context)
            configuration.name = name
            snapshots += insertSnapshots(3, of: configuration, into: context)
        }
        try context.save()
        let doomed = try #require(snapshots[3].configuration)
        let kept = try #require(snapshots[0].configuration)
        // Cascade: the configuration's snapshots go with it.
        context.delete(doomed)
        // Nullify: the snapshot leaves its configuration's to-many.
        context.delete(snapshots[0])
        #expect(try context.count(FetchRequest<Snapshot>()) == 2)
        #expect(kept.snapshots.count == 2)
        let twoSnapshots = #Predicate<Configuration> { $0.snapshots.count == 2 }
        #expect(try context.fetch(FetchRequest(predicate: twoSnapshots)) == [kept])
        var savedSnapshots = FetchRequest<Snapshot>()
        savedSnapshots.includesPendingChanges = false
        #expect(try context.count(savedSnapshots) == 6)
        var savedConfigurations = FetchRequest<Configuration>(predicate: twoSnapshots)
        savedConfigurations.includesPendingChanges = false
        #expect(try context.count(savedConfigurations) == 0)
        try context.save()
        #expect(try container.newContext().count(FetchRequest<Snapshot>()) == 2)
    }

    @Test(
        "count applies the offset, then the limit, to the number of matches",
        arguments: TestStoreKind.available
    )
    func countWindow(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: entities)
        let context = container.newContext()
        for index in 0..<10 { TruthItem(context: context).count = index }
        var request = FetchRequest<TruthItem>(predicate: #Predicate { $0.count >= 2 })
        #expect(try context.count(request) == 8)
        request.fetchOffset = 3
        #expect(try context.count(request) == 5)
        request.fetchLimit = 4
        #expect(try context.count(request) == 4)
        request.fetchOffset = 7
        #expect(try context.count(request) == 1)
        request.fetchOffset = 20
        #expect(try context.count(request) == 0)
        #expect(try context.count(request) == context.fetch(request).count)
    }

    @Test(
        "a pending delete survives a batch update of its object in the same context",
        arguments: TestStoreKind.available
    )
    func pendingDeleteThenBatchUpdate(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: entities)
        let context = container.newContext()
        let item = TruthItem(context: context)
        let kept = TruthItem(context: context)
        try context.save()
        context.delete(item)
        _ = try context.execute(BatchUpdateRequest<TruthItem>(updates: [.set(\.count, to: 5)]))
        try context.save()
        let check = container.newContext()
        #expect(try check.fetch(TruthItem.self).map(\.objectID) == [kept.objectID])
        #expect(try check.fetch(TruthItem.self).map(\.count) == [5])
        // The same with the deleted object a fault when it is deleted.
        let other = container.newContext()
        let fault = try other.object(with: kept.objectID, as: TruthItem.self)
        other.delete(fault)
        _ = try other.execute(BatchUpdateRequest<TruthItem>(updates: [.set(\.count, to: 6)]))
        try other.save()
        #expect(try container.newContext().count(FetchRequest<TruthItem>()) == 0)
    }
}
