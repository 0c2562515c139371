import ObjectLog
import ObjectLogStore

// Fixtures that several suites of this target share, so that each is written once.

extension StoreOptions {
    /// A read-only open of a store that exists: it writes nothing and creates nothing.
    static var readOnlyExisting: StoreOptions {
        var options = StoreOptions()
        options.readOnly = true
        options.createIfMissing = false
        return options
    }
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
