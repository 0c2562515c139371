import ObjectLogStore
// The values every store shares (metadata, object keys and entity tags, blob identifiers,
// store errors) come from `ObjectLogValues`, below both the engine and the log layer: `import
// ObjectLog` is enough to read and write metadata, and the engine's API names no type of the log
// layer but its options.
@_exported import ObjectLogValues

/// How a log store is opened (read-only, durability, in memory).
public typealias StoreOptions = ObjectLogStore.StoreOptions
