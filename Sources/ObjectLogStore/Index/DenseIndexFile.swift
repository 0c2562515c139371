import Foundation

/// An index file of version 5 or 4 (FORMAT.md, section 7): a dense directory's slots, in
/// place.
///
/// The slots lie as they do in memory, 16 bytes for each key from 1 to the highest, after a
/// header that a page boundary ends. An open maps the slots in place (``KeyDirectory/init(mapping:at:slotCount:count:checksums:pageSize:)``)
/// instead of decoding every entry into memory, so the memory and time of an open do not grow
/// with the store; each page of slots is read, and checked against its checksum, when first
/// used.
///
/// The header holds what an open needs without the slots: the fields every index version has,
/// the live count of each entity, and the CRC-32 of each page of slots, with a CRC-32 of its
/// own. A directory that is not dense (keys too sparse) is written as version 3.
///
/// Versions 5 and 4 differ only in the size of a checked page: 512 bytes in version 5, which
/// writers write, and 4 KiB in version 4, which readers still take.
package enum DenseIndexFile {
    package static let version: UInt16 = 5
    /// The slots start at a multiple of this, so that they can be mapped.
    static let alignment = 4096

    /// The bytes of a checked page of slots in an index of `version` (5 or 4).
    static func pageSize(of version: UInt16) -> Int { version == 4 ? 4096 : 512 }
    /// Where the entity counts start, after the common fields and this version's own.
    private static let countsOffset = 120

    /// A decoded header.
    package struct Header {
        /// The common fields (with no entries).
        package var index: StoreIndex
        /// The number of live keys.
        package var count: Int
        /// The slots: keys 1 through `slotCount`.
        package var slotCount: Int
        /// Where the slots start in the file: a multiple of the page size.
        package var slotsOffset: UInt64
        package var counts: EntityCounter
        package var pageChecksums: [UInt32]
        /// The bytes of slots each of `pageChecksums` covers.
        package var pageSize: Int
    }

    /// The bytes of the header of an index for `index` (its entries are ignored) and
    /// `directory`'s slots, zero-padded to where the slots start; nil when `directory` is not
    /// dense.
    package static func header(
        for index: StoreIndex,
        directory: KeyDirectory,
        counts: EntityCounter
    ) -> [UInt8]? {
        directory.withDenseSlotBytes { slots in
            let slotCount = slots.count / KeyDirectory.denseBytesPerKey
            let pageSize = pageSize(of: version)
            let pages = (slots.count + pageSize - 1) / pageSize
            let entityCounts = counts.nonZero.sorted { $0.key < $1.key }
            var writer = ByteWriter(capacity: countsOffset + entityCounts.count * 16 + pages * 4)
            writer.append(contentsOf: StoreIndex.magic)
            writer.append(version)
            writer.append(UInt16(0))
            writer.append(UInt32(0))
            writer.append(contentsOf: uuidBytes(index.storeUUID))
            writer.append(index.generation)
            writer.append(index.coveredLength)
            writer.append(index.lastCommitChecksum)
            writer.append(UInt32(0))
            writer.append(UInt64(directory.count))
            writer.append(index.lastNumber)
            writer.append(index.nextKey)
            writer.append(index.metadataOffset)
            writer.append(index.liveBytes)
            writer.append(UInt64(slotCount))
            let headerLength = countsOffset + entityCounts.count * 16 + pages * 4 + 4
            let slotsOffset = (headerLength + alignment - 1) / alignment * alignment
            writer.append(UInt64(slotsOffset))
            writer.append(UInt32(entityCounts.count))
            writer.append(UInt32(pages))
            for (entity, count) in entityCounts {
                writer.append(UInt32(entity))
                writer.append(UInt32(0))
                writer.append(UInt64(count))
            }
            for page in 0..<pages {
                let start = page * pageSize
                let bytes = UnsafeRawBufferPointer(
                    rebasing: slots[start..<min(start + pageSize, slots.count)]
                )
                writer.append(CRC32.checksum(bytes))
            }
            let checksum = writer.withUnsafeBytes { CRC32.checksum($0) }
            writer.append(checksum)
            var bytes = writer.bytes
            bytes.append(contentsOf: repeatElement(0, count: slotsOffset - bytes.count))
            return bytes
        }
    }

    /// Decodes the header at the start of an index file of `fileSize` bytes.
    ///
    /// Nil when it is not a valid version 5 or 4 header for that size. `read` returns the file's
    /// bytes in a range.
    package static func decodeHeader(
        fileSize: UInt64,
        read: (_ offset: UInt64, _ count: Int) -> [UInt8]?
    ) -> Header? {
        guard fileSize >= UInt64(countsOffset + 4), let fixed = read(0, countsOffset),
            fixed.count == countsOffset
        else { return nil }
        return fixed.withUnsafeBytes { buffer -> Header? in
            guard buffer[0..<8].elementsEqual(StoreIndex.magic),
                [4, version].contains(UInt16(littleEndianBytesOf: buffer, at: 8)),
                UInt16(littleEndianBytesOf: buffer, at: 10) == 0,
                UInt32(littleEndianBytesOf: buffer, at: 12) == 0,
                UInt32(littleEndianBytesOf: buffer, at: 52) == 0
            else { return nil }
            let count = UInt64(littleEndianBytesOf: buffer, at: 56)
            let slotCount = UInt64(littleEndianBytesOf: buffer, at: 96)
            let slotsOffset = UInt64(littleEndianBytesOf: buffer, at: 104)
            let entityCount = UInt64(UInt32(littleEndianBytesOf: buffer, at: 112))
            let pages = UInt64(UInt32(littleEndianBytesOf: buffer, at: 116))
            let pageSize = UInt64(pageSize(of: UInt16(littleEndianBytesOf: buffer, at: 8)))
            let slotBytes = slotCount.multipliedReportingOverflow(by: 16)
            guard !slotBytes.overflow, count <= slotCount,
                pages == (slotBytes.partialValue + pageSize - 1) / pageSize,
                slotsOffset % UInt64(alignment) == 0,
                slotsOffset >= UInt64(countsOffset) + entityCount * 16 + pages * 4 + 4,
                slotsOffset <= fileSize, fileSize - slotsOffset == slotBytes.partialValue,
                slotCount <= LogFormat.maximumCounter
            else { return nil }
            let rest = Int(entityCount * 16 + pages * 4 + 4)
            guard let tail = read(UInt64(countsOffset), rest), tail.count == rest else {
                return nil
            }
            let stored = tail.withUnsafeBytes { UInt32(littleEndianBytesOf: $0, at: rest - 4) }
            let computed = tail.withUnsafeBytes { tail in
                CRC32.checksum(
                    UnsafeRawBufferPointer(rebasing: tail[0..<(rest - 4)]),
                    continuing: CRC32.checksum(buffer)
                )
            }
            guard checksumsMatch(stored, computed) else { return nil }
            // The padding up to the slots is zeros: any other byte there is damage.
            let headerEnd = UInt64(countsOffset + rest)
            if slotsOffset > headerEnd {
                guard let padding = read(headerEnd, Int(slotsOffset - headerEnd)),
                    padding.count == Int(slotsOffset - headerEnd), padding.allSatisfy({ $0 == 0 })
                else { return nil }
            }
            var counts = EntityCounter()
            var total: UInt64 = 0
            var checksums: [UInt32] = []
            checksums.reserveCapacity(Int(pages))
            let valid = tail.withUnsafeBytes { tail -> Bool in
                for entry in 0..<Int(entityCount) {
                    let entity = UInt32(littleEndianBytesOf: tail, at: entry * 16)
                    let live = UInt64(littleEndianBytesOf: tail, at: entry * 16 + 8)
                    guard UInt32(littleEndianBytesOf: tail, at: entry * 16 + 4) == 0,
                        live <= count - total
                    else { return false }
                    total += live
                    counts.add(EntityTag(entity), Int(live))
                }
                for page in 0..<Int(pages) {
                    checksums.append(
                        UInt32(littleEndianBytesOf: tail, at: Int(entityCount) * 16 + page * 4)
                    )
                }
                return total == count
            }
            guard valid else { return nil }
            let index = StoreIndex(
                storeUUID: uuidFrom(UnsafeRawBufferPointer(rebasing: buffer[16..<32])),
                generation: UInt64(littleEndianBytesOf: buffer, at: 32),
                coveredLength: UInt64(littleEndianBytesOf: buffer, at: 40),
                lastCommitChecksum: UInt32(littleEndianBytesOf: buffer, at: 48),
                lastNumber: UInt64(littleEndianBytesOf: buffer, at: 64),
                nextKey: UInt64(littleEndianBytesOf: buffer, at: 72),
                metadataOffset: UInt64(littleEndianBytesOf: buffer, at: 80),
                liveBytes: UInt64(littleEndianBytesOf: buffer, at: 88),
                entries: []
            )
            guard slotCount < index.nextKey || slotCount == 0 else { return nil }
            return Header(
                index: index,
                count: Int(count),
                slotCount: Int(slotCount),
                slotsOffset: slotsOffset,
                counts: counts,
                pageChecksums: checksums,
                pageSize: Int(pageSize)
            )
        }
    }

    /// Decodes a whole version 5 or 4 index file, checking every page of slots, with its entries
    /// listed (for tools that compare an index with the log); nil when it is not a valid one.
    package static func decode(_ bytes: [UInt8]) -> StoreIndex? {
        guard
            let header = decodeHeader(
                fileSize: UInt64(bytes.count),
                read: { offset, count in
                    guard offset <= UInt64(bytes.count), count <= bytes.count - Int(offset)
                    else { return nil }
                    return Array(bytes[Int(offset)..<Int(offset) + count])
                }
            )
        else { return nil }
        var index = header.index
        let valid = bytes.withUnsafeBytes { file -> Bool in
            let slots = UnsafeRawBufferPointer(rebasing: file[Int(header.slotsOffset)...])
            return forEachLiveSlot(
                of: slots,
                checkedBy: header.pageChecksums,
                pageSize: header.pageSize
            ) { key, slot in
                let location = RecordLocation(
                    entity: slot.entity,
                    offset: slot.offset,
                    packedLength: slot.length
                )
                guard location.offset < index.coveredLength,
                    UInt64(location.length) <= index.coveredLength - location.offset
                else { return false }
                index.entries.append((key, location))
                return true
            }
        }
        return valid && index.entries.count == header.count ? index : nil
    }

    /// Checks every page of `slots` against `checksums`, then calls `body` with each live
    /// slot's key and location in key order.
    ///
    /// False as soon as a page does not match or `body` returns false.
    static func forEachLiveSlot(
        of slots: UnsafeRawBufferPointer,
        checkedBy checksums: [UInt32],
        pageSize: Int,
        _ body: (ObjectKey, PackedLocation) -> Bool
    ) -> Bool {
        for (page, checksum) in checksums.enumerated() {
            let start = page * pageSize
            let end = min(start + pageSize, slots.count)
            guard CRC32.checksum(UnsafeRawBufferPointer(rebasing: slots[start..<end])) == checksum
            else { return false }
        }
        for slot in 0..<slots.count / 16 {
            var location = PackedLocation()
            location.length = UInt32(littleEndianBytesOf: slots, at: slot * 16 + 8)
            guard location.isLive else { continue }
            location.offset = UInt64(littleEndianBytesOf: slots, at: slot * 16)
            location.entity = UInt32(littleEndianBytesOf: slots, at: slot * 16 + 12)
            guard body(ObjectKey(slot + 1), location) else { return false }
        }
        return true
    }
}
