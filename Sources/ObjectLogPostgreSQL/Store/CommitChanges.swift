import ObjectLog

/// The objects one commit changed, as the `changes` column of `objectlog_commits` keeps them:
/// an entry per object in key order, each its key (8 bytes), entity tag (4 bytes) and kind
/// (1 byte: 0 inserted, 1 updated, 2 deleted), little-endian.
///
/// One value per commit rather than a row per object: a save of a million objects writes one
/// row, and a process told of the commit reads it back in one piece.
enum CommitChanges {
    static let entrySize = 13

    /// One object's change.
    struct Entry: Sendable {
        var key: ObjectKey
        var entity: UInt32
        var kind: UInt8
    }

    /// One entry per object of `changes` (key, entity, kind, in the save's order), in key
    /// order: the last change of an object is what it was, except that an insert then
    /// updated stays an insert.
    static func entries(
        of changes: some Collection<(ObjectKey, UInt32, UInt8)>
    ) -> [Entry] {
        var entries: [Entry] = []
        entries.reserveCapacity(changes.count)
        var inKeyOrder = true
        for (key, entity, kind) in changes {
            if let last = entries.last, last.key >= key { inKeyOrder = false }
            entries.append(Entry(key: key, entity: entity, kind: kind))
        }
        guard !inKeyOrder else { return entries }
        // Stable: an object's changes keep their order.
        let sorted = entries.enumerated().sorted {
            ($0.element.key, $0.offset) < ($1.element.key, $1.offset)
        }
        var merged: [Entry] = []
        merged.reserveCapacity(sorted.count)
        for (_, entry) in sorted {
            if let last = merged.last, last.key == entry.key {
                if !(last.kind == 0 && entry.kind == 1) { merged[merged.count - 1] = entry }
            } else {
                merged.append(entry)
            }
        }
        return merged
    }

    /// The list of `entries`, in their order.
    static func encode(_ entries: [Entry]) -> [UInt8] {
        guard !entries.isEmpty else { return [] }
        return [UInt8](unsafeUninitializedCapacity: entries.count * entrySize) { buffer, count in
            let base = UnsafeMutableRawPointer(buffer.baseAddress!)
            for (index, entry) in entries.enumerated() {
                let offset = index * entrySize
                base.storeBytes(of: entry.key.littleEndian, toByteOffset: offset, as: UInt64.self)
                base.storeBytes(
                    of: entry.entity.littleEndian,
                    toByteOffset: offset + 8,
                    as: UInt32.self
                )
                base.storeBytes(of: entry.kind, toByteOffset: offset + 12, as: UInt8.self)
            }
            count = entries.count * entrySize
        }
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
