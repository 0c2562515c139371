import ObjectLogStore

/// Blobs written while encoding one object.
struct BlobSink {
    /// The store that receives external data; `nil` when encoding only to compare values.
    let store: LogStore?
    /// The context whose unloaded external data may be referenced again.
    var context: ManagedObjectContext?
    /// The blobs the payload references.
    var blobs: [BlobID] = []

    init(store: LogStore?, context: ManagedObjectContext? = nil) {
        self.store = store
        self.context = context
    }
}
