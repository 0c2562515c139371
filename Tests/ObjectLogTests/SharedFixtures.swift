import ObjectLog
import ObjectLogStore
import StoreTestSupport

// Fixtures that several suites of this target share, so that each is written once.

extension StoreOptions {
    /// A read-only open of a store that exists: it writes nothing and creates nothing.
    static var readOnlyExisting: StoreOptions {
        var options = StoreOptions()
        options.readOnly = true
        options.createIfMissing = false
        return options
    }

    /// ``readOnlyExisting`` that follows the process writing the store.
    static var followingExisting: StoreOptions {
        var options = readOnlyExisting
        options.followsWriter = true
        return options
    }
}

/// Writes a store at `path` with the classes `entities`: `insert` makes its objects in a
/// context whose changes are saved before the store closes.
func writeStore(
    at path: String,
    for entities: [ManagedObject.Type],
    _ insert: (ManagedObjectContext) throws -> Void
) throws {
    let container = try PersistentContainer(path: path, for: entities)
    let context = container.newContext()
    try insert(context)
    try context.save()
    try container.close()
}

/// Writes `store` (of any kind) with the classes `entities`, as ``writeStore(at:for:_:)``
/// writes a file.
func writeStore(
    _ store: TestStore,
    for entities: [ManagedObject.Type],
    _ insert: (ManagedObjectContext) throws -> Void
) throws {
    let container = try store.open(for: entities)
    let context = container.newContext()
    try insert(context)
    try context.save()
    try container.close()
}

/// A configuration named `name` inserted into `context`, with `seed` when one is given.
@discardableResult
func insertConfiguration(
    _ name: String,
    seed: UInt64? = nil,
    into context: ManagedObjectContext
) -> Configuration {
    let configuration = Configuration(context: context)
    configuration.name = name
    if let seed { configuration.seed = seed }
    return configuration
}

/// Snapshots of `configuration` with the steps `0..<count`, inserted into `context` in that
/// order.
@discardableResult
func insertSnapshots(
    _ count: Int,
    of configuration: Configuration,
    into context: ManagedObjectContext
) -> [Snapshot] {
    (0..<count).map { step in
        let snapshot = Snapshot(context: context)
        snapshot.step = step
        snapshot.configuration = configuration
        return snapshot
    }
}
