import Foundation

/// Merges a patch record's partial value into its base's value, for the object engine.
///
/// A patch (FORMAT.md, section 4) carries new values of some of an object's properties and
/// names the put it changes. What the bytes mean is the engine's business, so the log layer
/// asks the engine to merge them: the engine installs this with
/// ``LogStore/installPatchMerge(_:)``, and every read of a patched object
/// (``LogStore/withObject(_:_:)``, ``LogStore/readObject(_:)``, the bulk reads) then hands its
/// caller the merged value. Compaction writes merged values as puts, and refuses a store with
/// patches while no merge is installed.
///
/// The merged value is in the layout the patch was written in: a value the store treats as the
/// record at the patch's offset, translated by the installed ``PayloadUpgrade`` when that
/// offset is below the upgrade boundary, and handed as it is to a compaction's rewrite.
public struct PatchMerge: Sendable {
    /// Calls `body` with the value, in the layout of the record at `patchOffset`, of the object
    /// of entity `entity` whose base put, at `baseOffset` in the current generation, holds
    /// `base` (in the layout of the record there), and whose patch, at `patchOffset`, holds
    /// `partial`; the value is valid only during the call (a read of many patched objects
    /// then allocates nothing for each).
    public typealias Merge =
        @Sendable (
            _ entity: EntityTag,
            _ baseOffset: UInt64,
            _ base: UnsafeRawBufferPointer,
            _ patchOffset: UInt64,
            _ partial: UnsafeRawBufferPointer,
            _ body: (UnsafeRawBufferPointer) throws -> Void
        ) throws -> Void

    /// The merge.
    public var merge: Merge

    /// Creates a merge.
    public init(_ merge: @escaping Merge) {
        self.merge = merge
    }

}

extension LogStore {
    /// Whether commits may hold patches: the file's format is 3 or later (a 2.0 or 1.0 file
    /// takes them once compaction has upgraded it).
    public var allowsPatches: Bool { locked { state.header.allowsPatches } }

    /// Installs the engine's merge of patches (nil removes it).
    public func installPatchMerge(_ merge: PatchMerge?) {
        locked {
            installedPatchMerge = merge
            livePatches = nil
        }
    }

    /// Reads the patch record of the object `key` at `location` and the base it names, checks
    /// both (frames, key, entity, checksums), and calls `body` with the merged value (translated
    /// when older than `upgrade`'s boundary) and the base's blobs.
    ///
    /// For reads of one object: `readObject(_:)` and `withObject(_:_:)`. Reads the file without
    /// the store's lock.
    func withPatchedObject(
        _ key: ObjectKey,
        at location: RecordLocation,
        file: any StoreFile,
        merge: PatchMerge?,
        upgrade: ActiveUpgrade?,
        _ body: (_ value: UnsafeRawBufferPointer, _ blobs: [BlobID]) throws -> Void
    ) throws {
        // A length from a damaged index must not become a giant allocation.
        let longest = RecordLayout.compact.maximumAnyFrameLength + LogFormat.maximumPayloadLength
        guard Int(location.length) <= longest else {
            throw StoreError(
                .corrupt,
                "the keydir's record for object \(key) is longer than any record",
                path: path,
                offset: location.offset
            )
        }
        let record = try file.read(at: location.offset, count: Int(location.length))
        try record.withUnsafeBytes { record in
            let (frame, partial) = try checkedPatch(record, key: key, location: location)
            guard let merge else { throw patchNeedsEngine(key, at: location.offset) }
            let base = try readBase(of: frame, key: key, at: location.offset, file: file)
            try base.withUnsafeBytes { base in
                let (baseFrame, payload, contents) = try checkedPut(
                    base,
                    key: key,
                    offset: frame.baseOffset,
                    layout: .compact
                )
                guard baseFrame.entity == location.entity else {
                    throw baseOfAnotherEntity(key, at: frame.baseOffset)
                }
                let value = UnsafeRawBufferPointer(rebasing: payload[contents.valueStart...])
                let blobs = contents.blobCount == 0 ? [] : contents.blobs(in: payload)
                try merge.merge(location.entity, frame.baseOffset, value, location.offset, partial)
                { merged in
                    guard let upgrade, location.offset < upgrade.boundary else {
                        try body(merged, blobs)
                        return
                    }
                    try upgrade.deliver(merged, entity: location.entity, offset: location.offset) {
                        try body($0, blobs)
                    }
                }
            }
        }
    }

    /// The error for a patched object read without the engine's merge.
    func patchNeedsEngine(_ key: ObjectKey, at offset: UInt64) -> StoreError {
        StoreError(
            .invalidArgument,
            "object \(key) is stored as a patch, which only the object engine can read",
            path: path,
            offset: offset
        )
    }

    /// The error for a patch whose base is a put of another entity than the patch's.
    func baseOfAnotherEntity(_ key: ObjectKey, at offset: UInt64) -> StoreError {
        StoreError(
            .corrupt,
            "the base of the patch of object \(key) is a put of another entity",
            path: path,
            offset: offset
        )
    }

    /// The frame and partial value of the patch record of `key` that `bytes` hold, after
    /// checking its frame (a patch, exactly this long, of this key and entity) and checksum.
    func checkedPatch(
        _ bytes: UnsafeRawBufferPointer,
        key: ObjectKey,
        location: RecordLocation,
        tables: CRC32.Tables = CRC32.lookupTables
    ) throws -> (frame: RecordFrame, partial: UnsafeRawBufferPointer) {
        guard let frame = RecordFrame.decodeCompactPatch(bytes),
            frame.totalLength == bytes.count, frame.key == key,
            frame.entity == location.entity
        else {
            throw StoreError(
                .corrupt,
                "the keydir's record for object \(key) is not a patch of its length",
                path: path,
                offset: location.offset
            )
        }
        let computed = RecordFrame.checksum(of: bytes, tables: tables)
        guard checksumsMatch(frame.checksum, computed) else {
            let mismatch = RecordFrame.checksumMismatch(stored: frame.checksum, computed: computed)
            throw StoreError(.corrupt, mismatch, path: path, offset: location.offset)
        }
        return (frame, UnsafeRawBufferPointer(rebasing: bytes[frame.frameLength...]))
    }

    /// The bytes of the base record that the patch `frame` (of `key`, at `offset`) names.
    private func readBase(
        of frame: RecordFrame,
        key: ObjectKey,
        at offset: UInt64,
        file: any StoreFile
    ) throws -> [UInt8] {
        let length = Int(frame.baseLength)
        let bytes = try file.read(at: frame.baseOffset, count: length)
        guard bytes.count == length else {
            throw StoreError(
                .corrupt,
                "the base of the patch of object \(key) runs past the end of the file",
                path: path,
                offset: offset
            )
        }
        return bytes
    }
}
