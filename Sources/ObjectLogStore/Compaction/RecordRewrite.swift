extension LogStore {
    /// Rewrites one live record's value as compaction copies it: the engine's rewriting
    /// migration stages.
    ///
    /// Called with the record's key, entity tag, offset and value as stored (before any
    /// translation), and the framer of the new record: puts the value to write instead, in the
    /// current layout, once, with ``RewrittenRecord/put(_:)``, and returns true, or returns
    /// false (putting nothing) to have the record copied as compaction does (translated if it
    /// is older). An error ends the compaction with the store unchanged.
    package typealias RecordRewrite =
        @Sendable (
            _ key: ObjectKey, _ entity: EntityTag, _ offset: UInt64,
            _ value: UnsafeRawBufferPointer, _ record: inout RewrittenRecord
        ) throws -> Bool

    /// Where a ``RecordRewrite`` puts the new value of a record: framed as it is, straight
    /// into the part's output, with no copy in between (and, unlike a function handed to the
    /// rewrite, with nothing allocated for each record).
    package struct RewrittenRecord {
        var output: ByteWriter
        let layout: RecordLayout
        var key: ObjectKey = 0
        var entity: EntityTag = 0
        var isInsert = false
        var blobs: [BlobID] = []
        var puts = 0

        init(output: consuming ByteWriter, layout: RecordLayout) {
            self.output = output
            self.layout = layout
        }

        /// Frames `value` as the record's new value.
        package mutating func put(_ value: UnsafeRawBufferPointer) {
            layout.appendPut(
                key: key,
                entity: entity,
                isInsert: isInsert,
                blobs: blobs,
                value: value,
                into: &output
            )
            puts += 1
        }
    }
}
