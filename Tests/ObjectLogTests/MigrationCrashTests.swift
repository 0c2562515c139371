import Foundation
import ObjectLog
import ObjectLogStore
import TestSupport
import Testing

/// Power loss at every sync point of a migration: the store is then at its old version, whole
/// and readable by the old model, or at the new one, whole; never between.
@Suite("Migrations survive power loss at every sync point")
struct MigrationCrashTests {
    static let path = "/store/notes.objectlog"

    /// A disk holding a version 1 store, everything on it durable.
    func version1Disk() throws -> PowerLossFileSystem {
        let disk = PowerLossFileSystem(crashAtSync: nil)
        try disk.makeDirectory("/store", permissions: 0o700)
        var options = StoreOptions()
        options.fileSystem = disk
        let container = try PersistentContainer(
            path: Self.path,
            model: try ManagedObjectModel(V1.entities),
            options: options
        )
        let context = container.newContext()
        for index in 0..<20 {
            let note = V1.Note(context: context)
            note.title = "note \(index)"
            note.stars = Int8(index)
            note.attachment = Data(repeating: UInt8(index), count: index == 3 ? 20_000 : 8)
        }
        try context.save()
        try container.close()
        return disk.afterPowerLoss(seed: 0)
    }

    /// The model version the store on `disk` is at, by the hash it records.
    func storedHash(on disk: PowerLossFileSystem) throws -> String? {
        let store = try LogStore.open(path: Self.path, options: readOnlyOptions(disk))
        defer { try? store.close() }
        return try ModelHistory.read(from: store)?.current?.hash
    }

    func options(_ disk: PowerLossFileSystem) -> StoreOptions {
        var options = StoreOptions()
        options.fileSystem = disk
        return options
    }

    /// The options of a read-only open of the store on `disk`.
    func readOnlyOptions(_ disk: PowerLossFileSystem) -> StoreOptions {
        var options = StoreOptions.readOnlyExisting
        options.fileSystem = disk
        return options
    }

    @Test("lightweight: a crash at any sync point leaves version 1 or version 2, whole")
    func lightweight() throws {
        let v1 = try ManagedObjectModel(V1.entities).versionHash
        var outcomes: Set<String> = []
        for crashAt in 1...64 {
            let disk = try version1Disk()
            disk.crash(afterSyncs: crashAt)
            let opened = try? PersistentContainer(
                path: Self.path,
                model: try ManagedObjectModel(V2.entities, removing: V2.removals),
                options: options(disk)
            )
            try? opened?.close()
            let crashed = disk.hasCrashed
            let after = disk.afterPowerLoss(seed: UInt64(crashAt))
            let hash = try storedHash(on: after)
            #expect(hash != nil, "crash at sync \(crashAt): no model")
            if hash == v1 {
                outcomes.insert("old")
                let old = try PersistentContainer(
                    path: Self.path,
                    model: try ManagedObjectModel(V1.entities),
                    options: options(after)
                )
                let reading = old.newContext()
                #expect(try reading.fetch(V1.Note.self).count == 20, "sync \(crashAt)")
                try old.close()
            } else {
                outcomes.insert("new")
                let new = try PersistentContainer(
                    path: Self.path,
                    model: try ManagedObjectModel(V2.entities, removing: V2.removals),
                    options: options(after)
                )
                let reading = new.newContext()
                let notes = try reading.fetch(V2.Note.self)
                #expect(notes.count == 20, "sync \(crashAt)")
                #expect(Set(notes.map(\.heading)) == Set((0..<20).map { "note \($0)" }))
                #expect(notes.allSatisfy { $0.priority == 3 })
                try new.close()
                #expect(try storedHash(on: after) != v1)
            }
            if !crashed { break }
        }
        // Some crash points keep the old version, and the migration also completes.
        #expect(outcomes == ["old", "new"])
    }

    @Test("staged: a crash at any sync point leaves version 1 or version 3, whole")
    func staged() throws {
        try crashes(migrating: MigrationPlanTests.plan)
    }

    @Test("staged with a rewriting stage: a crash at any sync point leaves version 1 or 3")
    func rewriting() throws {
        try crashes(migrating: RewriteStageTests.plan)
    }

    /// Crashes at every sync point of `plan`'s migration from version 1 to 3 (its first
    /// stage makes the servings numbers, its second the labels).
    func crashes(migrating plan: MigrationPlan) throws {
        var outcomes: Set<String> = []
        for crashAt in 1...200 {
            let disk = PowerLossFileSystem(crashAtSync: nil)
            try disk.makeDirectory("/store", permissions: 0o700)
            let container = try PersistentContainer(
                path: Self.path,
                model: try ManagedObjectModel(Plan1.version.entities),
                options: options(disk)
            )
            let context = container.newContext()
            Plan1.insert([("Soup", "4", "a,b"), ("Tart", "6 slices", "b")], into: context)
            try context.save()
            try container.close()
            let start = disk.afterPowerLoss(seed: 0)
            start.crash(afterSyncs: crashAt)
            let opened = try? PersistentContainer(
                path: Self.path,
                plan: plan,
                options: options(start)
            )
            try? opened?.close()
            let crashed = start.hasCrashed
            let after = start.afterPowerLoss(seed: UInt64(crashAt))
            // The store is at version 1 or at version 3: version 2 lived only in the copy.
            let store = try LogStore.open(path: Self.path, options: readOnlyOptions(after))
            let versions = try ModelHistory.read(from: store)?.versions.count
            try store.close()
            #expect(versions == 1 || versions == 3, "sync \(crashAt): \(versions ?? 0) versions")
            // Whatever the crash left, opening with the plan gives version 3, complete.
            let reopened = try PersistentContainer(
                path: Self.path,
                plan: plan,
                options: options(after)
            )
            let reading = reopened.newContext()
            let recipes = try reading.fetch(Plan3.Recipe.self)
            #expect(recipes.map(\.servings).sorted() == [4, 6], "sync \(crashAt)")
            #expect(
                recipes.map { $0.labels.count }.sorted() == [1, 2],
                "sync \(crashAt)"
            )
            try reopened.close()
            outcomes.insert(crashed ? "crashed" : "completed")
            if !crashed { break }
        }
        #expect(outcomes == ["crashed", "completed"])
    }
}
