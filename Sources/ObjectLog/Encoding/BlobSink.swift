import ObjectLogStore

/// Blobs written while encoding one object.
struct BlobSink {
    /// The store that receives external data; `nil` when encoding only to compare values.
    let store: (any PersistentStore)?
    /// The context whose unloaded external data may be referenced again.
    var context: ManagedObjectContext?
    /// The blobs the payload references.
    var blobs: [BlobID] = []

    init(store: (any PersistentStore)?, context: ManagedObjectContext? = nil) {
        self.store = store
        self.context = context
    }
}
