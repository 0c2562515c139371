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

    /// The merged value as an array (see ``Merge``).
    func merged(
        _ entity: EntityTag,
        _ baseOffset: UInt64,
        _ base: UnsafeRawBufferPointer,
        _ patchOffset: UInt64,
        _ partial: UnsafeRawBufferPointer
    ) throws -> [UInt8] {
        var merged: [UInt8] = []
        try merge(entity, baseOffset, base, patchOffset, partial) { merged = Array($0) }
        return merged
    }
}

extension LogStore {
    /// Whether commits may hold patches: the file's format is 3 or later (a 2.0 or 1.0 file
    /// takes them once compaction has upgraded it).
    public var allowsPatches: Bool { locked { header.allowsPatches } }

    /// Installs the engine's merge of patches (nil removes it).
    public func installPatchMerge(_ merge: PatchMerge?) {
        locked {
            installedPatchMerge = merge
            livePatches = nil
        }
    }

    /// The merged value and blobs of the object whose patch record `bytes` holds, at
    /// `location`: the patch is checked (frame, key, entity, checksum), its base read from
    /// `file` and checked as a put of the same key and entity, and the two merged.
    func resolvePatch(
        _ bytes: UnsafeRawBufferPointer,
        key: ObjectKey,
        location: RecordLocation,
        file: any StoreFile,
        merge: PatchMerge?
    ) throws -> (value: [UInt8], blobs: [BlobID]) {
        let (frame, partial) = try checkedPatch(bytes, key: key, location: location)
        guard let merge else {
            throw StoreError(
                .invalidArgument,
                "object \(key) is stored as a patch, which only the object engine can read",
                path: path,
                offset: location.offset
            )
        }
        let base = try readBase(of: frame, key: key, at: location.offset, file: file)
        return try base.withUnsafeBytes { base in
            let (baseFrame, payload, contents) = try checkedPut(
                base,
                key: key,
                offset: frame.baseOffset,
                layout: .compact
            )
            guard baseFrame.entity == location.entity else {
                throw StoreError(
                    .corrupt,
                    "the base of the patch of object \(key) is a put of another entity",
                    path: path,
                    offset: frame.baseOffset
                )
            }
            let value = UnsafeRawBufferPointer(rebasing: payload[contents.valueStart...])
            let merged = try merge.merged(
                location.entity,
                frame.baseOffset,
                value,
                location.offset,
                partial
            )
            return (merged, contents.blobCount == 0 ? [] : contents.blobs(in: payload))
        }
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
            throw StoreError(
                .corrupt,
                "record checksum mismatch (stored \(hex32(frame.checksum)), computed \(hex32(computed)))",
                path: path,
                offset: location.offset
            )
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
