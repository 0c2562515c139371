import ObjectLogStore

/// A typed store metadata value (string, integer, double, bool, date, data, array, dictionary).
///
/// Re-exported from the log layer so that `import ObjectLog` is enough to read and write
/// metadata.
public typealias MetadataValue = ObjectLogStore.MetadataValue

/// The store's metadata dictionary.
public typealias Metadata = ObjectLogStore.Metadata

/// How a store is opened (read-only, durability, in memory).
public typealias StoreOptions = ObjectLogStore.StoreOptions

/// An object's store-wide unique key.
public typealias ObjectKey = ObjectLogStore.ObjectKey

/// The content address of an external data blob.
public typealias BlobID = ObjectLogStore.BlobID

/// An error of the log layer, carried in ``ObjectLogError/storeError``.
public typealias StoreError = ObjectLogStore.StoreError
