import Foundation

/// The file of a store's declared indexes, `NAME.olog-indexes`.
///
/// For each index the engine declares, every live object's key sorted by the index's values;
/// FORMAT.md, section 7, "Declared indexes", describes the bytes.
///
/// The store does not know what the values mean: the engine hands it each index as a tag, a
/// width (the number of 8-byte order keys before each object key), a descriptor (a number the
/// engine derives from the index's definition, so that it never takes an index of another
/// definition for its own) and the sorted entries. Like the index checkpoint, the file is a
/// hint: it is stamped with the state of the log it describes, and a reader that finds it
/// missing, damaged or stamped with another state ignores it and builds the indexes from the
/// log again. Nothing in it is ever needed to read an object.
///
/// The entries are used in place (``DeclaredIndexEntries``): each index's start on a page of
/// their own, and the header lists a CRC-32 per page, so that a lookup reads and checks only
/// the pages it touches, where checking one checksum over all of them would read the whole
/// file at the first fetch after an open.
package enum DeclaredIndexFile {
    /// The suffix of the file's name after the store's.
    package static let suffix = "-indexes"
    /// The magic number, `OLDECIX\n`.
    static let magic: [UInt8] = Array("OLDECIX\n".utf8)
    /// Version 1 kept one checksum per index over all its entries; a reader ignores such a
    /// file (and so builds the indexes from the log) and the next close writes version 2.
    static let version: UInt32 = 2
    static let fixedHeaderSize = 56
    static let sectionSize = 32
    /// The size of a page of entries, each checked against its own CRC-32.
    static let pageSize = 4096
    /// The most order keys an entry may have, so that a damaged width cannot ask for a huge
    /// allocation before its checksum is checked.
    package static let maximumWidth = 16

    /// The state of the log an index file describes: a reader takes it only for a log in
    /// exactly that state.
    package struct Stamp: Equatable, Sendable {
        /// The store's UUID (its header's): a file beside another store is never taken.
        package var storeUUID: UUID
        /// The log's generation (compaction counts it up).
        package var generation: UInt64
        /// The offset just past the last commit the indexes include.
        package var end: UInt64
        /// The number of the last transaction they include.
        package var transactionCount: UInt64

        package init(storeUUID: UUID, generation: UInt64, end: UInt64, transactionCount: UInt64) {
            self.storeUUID = storeUUID
            self.generation = generation
            self.end = end
            self.transactionCount = transactionCount
        }
    }

    /// One index: its entries, each `width` order keys and then an object key, in ascending
    /// order of the `width + 1` words.
    package struct Section {
        /// The tag of the entity whose objects it lists.
        package var tag: UInt32
        /// The number of order keys per entry.
        package var width: Int
        /// The engine's number for the index's definition.
        package var descriptor: UInt64
        /// The entries, `width + 1` words each.
        package var entries: DeclaredIndexEntries

        package init(tag: UInt32, width: Int, descriptor: UInt64, entries: DeclaredIndexEntries) {
            self.tag = tag
            self.width = width
            self.descriptor = descriptor
            self.entries = entries
        }
    }

    /// The pages `words` entry words take.
    private static func pages(words: Int) -> Int { (words * 8 + pageSize - 1) / pageSize }

    /// The length of the header of a file of `sections` indexes whose entries take `pages`
    /// pages in all: a whole number of pages.
    private static func headerLength(sections: Int, pages: Int) -> Int {
        let fields = fixedHeaderSize + sectionSize * sections + 4 * pages + 8
        return (fields + pageSize - 1) / pageSize * pageSize
    }

    /// The bytes of a file holding `sections`, stamped with `stamp`; nil if the entries of one
    /// are damaged (``DeclaredIndexEntries/withWords(_:)``).
    package static func encode(stamp: Stamp, sections: [Section]) -> [UInt8]? {
        let pageCounts = sections.map { pages(words: $0.entries.count) }
        let totalPages = pageCounts.reduce(0, +)
        let header = headerLength(sections: sections.count, pages: totalPages)
        var bytes = [UInt8](repeating: 0, count: header + totalPages * pageSize)
        let isWhole = bytes.withUnsafeMutableBytes { file -> Bool in
            func put(_ value: UInt64, at offset: Int) {
                file.storeBytes(of: value.littleEndian, toByteOffset: offset, as: UInt64.self)
            }
            func put32(_ value: UInt32, at offset: Int) {
                file.storeBytes(of: value.littleEndian, toByteOffset: offset, as: UInt32.self)
            }
            for (offset, byte) in magic.enumerated() { file[offset] = byte }
            put32(version, at: 8)
            put32(UInt32(sections.count), at: 12)
            put(stamp.generation, at: 16)
            put(stamp.end, at: 24)
            put(stamp.transactionCount, at: 32)
            withUnsafeBytes(of: stamp.storeUUID.uuid) { uuid in
                for (offset, byte) in uuid.enumerated() { file[40 + offset] = byte }
            }
            var checksum = fixedHeaderSize + sectionSize * sections.count
            var page = header
            for (index, section) in sections.enumerated() {
                let base = fixedHeaderSize + sectionSize * index
                put32(section.tag, at: base)
                put32(UInt32(section.width), at: base + 4)
                put(section.descriptor, at: base + 8)
                put(UInt64(section.entries.count / (section.width + 1)), at: base + 16)
                let written = section.entries.withWords { words -> Bool in
                    #if _endian(big)
                    for (offset, word) in words.enumerated() {
                        put(word, at: page + offset * 8)
                    }
                    #else
                    UnsafeMutableRawBufferPointer(rebasing: file[page...]).copyMemory(
                        from: UnsafeRawBufferPointer(words)
                    )
                    #endif
                    return true
                }
                guard written == true else { return false }
                for _ in 0..<pageCounts[index] {
                    let crc = CRC32.checksum(
                        UnsafeRawBufferPointer(rebasing: file[page..<(page + pageSize)])
                    )
                    put32(crc, at: checksum)
                    checksum += 4
                    page += pageSize
                }
            }
            put32(
                CRC32.checksum(UnsafeRawBufferPointer(rebasing: file[..<(header - 8)])),
                at: header - 8
            )
            return true
        }
        return isWhole ? bytes : nil
    }

    /// The stamp and sections of a file's `bytes`, or nil unless every field of the header
    /// and its checksum is valid; the entries' pages are checked when they are read.
    package static func decode(_ bytes: [UInt8]) -> (stamp: Stamp, sections: [Section])? {
        decode(FileRegion(copying: bytes))
    }

    /// The stamp and sections of the file whose bytes `region` holds, or nil unless every
    /// field of the header and its checksum is valid and the file is exactly as long as the
    /// header says; the sections' entries stay in `region`, their pages checked when read.
    package static func decode(_ region: FileRegion) -> (stamp: Stamp, sections: [Section])? {
        let size = region.count
        let file = UnsafeRawBufferPointer(start: region.bytes, count: size)
        func field(_ offset: Int) -> UInt64 {
            UInt64(littleEndian: file.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        }
        func field32(_ offset: Int) -> UInt32 {
            UInt32(littleEndian: file.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
        }
        guard size >= fixedHeaderSize + 8, size % pageSize == 0,
            file.prefix(8).elementsEqual(magic), field32(8) == version
        else { return nil }
        let count = Int(field32(12))
        guard count <= (size - fixedHeaderSize) / sectionSize else { return nil }
        var pageCounts: [Int] = []
        var totalPages = 0
        for index in 0..<count {
            let base = fixedHeaderSize + sectionSize * index
            let width = Int(field32(base + 4))
            let entries = field(base + 16)
            guard (1...maximumWidth).contains(width), field(base + 24) == 0,
                entries <= UInt64(size / 8 / (width + 1))
            else { return nil }
            let pageCount = pages(words: Int(entries) * (width + 1))
            pageCounts.append(pageCount)
            totalPages += pageCount
        }
        guard totalPages <= size / pageSize else { return nil }
        let header = headerLength(sections: count, pages: totalPages)
        guard header + totalPages * pageSize == size,
            field32(header - 8) == CRC32.checksum(.init(rebasing: file[..<(header - 8)])),
            field32(header - 4) == 0
        else { return nil }
        var uuid = UUID().uuid
        withUnsafeMutableBytes(of: &uuid) { $0.copyMemory(from: .init(rebasing: file[40..<56])) }
        let stamp = Stamp(
            storeUUID: UUID(uuid: uuid),
            generation: field(16),
            end: field(24),
            transactionCount: field(32)
        )
        var sections: [Section] = []
        var checksum = fixedHeaderSize + sectionSize * count
        var page = header
        for index in 0..<count {
            let base = fixedHeaderSize + sectionSize * index
            let width = Int(field32(base + 4))
            let checksums = (0..<pageCounts[index]).map { field32(checksum + 4 * $0) }
            sections.append(
                Section(
                    tag: field32(base),
                    width: width,
                    descriptor: field(base + 8),
                    entries: DeclaredIndexEntries(
                        region: region,
                        offset: page,
                        count: Int(field(base + 16)) * (width + 1),
                        pageSize: pageSize,
                        checksums: checksums
                    )
                )
            )
            checksum += 4 * pageCounts[index]
            page += pageCounts[index] * pageSize
        }
        return (stamp, sections)
    }
}

extension LogStore {
    /// The path of the store's declared indexes (see ``DeclaredIndexFile``).
    package var declaredIndexPath: String { path + DeclaredIndexFile.suffix }

    /// The declared index file's stamp and indexes, or nil if there is none or it cannot be
    /// read or its header is not valid (the engine then builds its indexes from the log).
    ///
    /// The file is mapped, not read: its entries stay in place, and only the pages a lookup
    /// touches are read (and checked). A file of another kind of file system is read whole.
    package func openDeclaredIndexFile() -> (
        stamp: DeclaredIndexFile.Stamp, sections: [DeclaredIndexFile.Section]
    )? {
        guard fileSystem.kind(of: declaredIndexPath) == .regular,
            let file = try? fileSystem.open(declaredIndexPath, mode: .read)
        else { return nil }
        // The mapping outlives the descriptor.
        defer { file.close() }
        guard let size = try? file.size(), let region = FileRegion(file: file, size: size) else {
            return nil
        }
        return DeclaredIndexFile.decode(region)
    }

    /// Replaces the declared index file with `bytes`, whole or not at all.
    ///
    /// - Throws: `StoreError` `.io` when the file cannot be written; the old one stays.
    package func writeDeclaredIndexFile(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { buffer in
            try fileSystem.replaceAtomically(
                declaredIndexPath,
                with: buffer,
                temporary: declaredIndexPath + "-new",
                permissions: options.fileMode
            )
        }
    }

    /// Removes the declared index file, if there is one (a model without indexes keeps
    /// none).
    package func removeDeclaredIndexFile() {
        if fileSystem.kind(of: declaredIndexPath) == .regular {
            try? fileSystem.remove(declaredIndexPath)
        }
    }
}
