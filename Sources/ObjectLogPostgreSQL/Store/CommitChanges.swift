import ObjectLog

/// The objects one commit changed, as the `changes` column of `objectlog_commits` keeps them:
/// an entry per object in key order, each its key (8 bytes), entity tag (4 bytes) and kind
/// (1 byte: 0 inserted, 1 updated, 2 deleted), little-endian.
///
/// One value per commit rather than a row per object: a save of a million objects writes one
/// row, and a process told of the commit reads it back in one piece.
enum CommitChanges {
    static let entrySize = 13

    static func append(key: ObjectKey, entity: UInt32, kind: UInt8, to list: inout [UInt8]) {
        withUnsafeBytes(of: key.littleEndian) { list.append(contentsOf: $0) }
        withUnsafeBytes(of: entity.littleEndian) { list.append(contentsOf: $0) }
        list.append(kind)
    }

    /// Adds the entries of `list` to `changes`; false when `list` is not a whole number of
    /// entries or holds an unknown kind.
    static func read(_ list: UnsafeRawBufferPointer, into changes: inout StoreChanges) -> Bool {
        guard list.count.isMultiple(of: entrySize) else { return false }
        var offset = 0
        while offset < list.count {
            let key = ObjectKey(
                littleEndian: list.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            )
            let entity = UInt32(
                littleEndian: list.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
            )
            switch list[offset + 12] {
            case 0: changes.inserted.append((key, entity))
            case 1: changes.updated.append((key, entity))
            case 2: changes.deleted.append((key, entity))
            default: return false
            }
            offset += entrySize
        }
        return true
    }
}
