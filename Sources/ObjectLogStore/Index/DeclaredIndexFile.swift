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
package enum DeclaredIndexFile {
    /// The suffix of the file's name after the store's.
    package static let suffix = "-indexes"
    /// The magic number, `OLDECIX\n`.
    static let magic: [UInt8] = Array("OLDECIX\n".utf8)
    static let version: UInt16 = 1
    static let headerSize = 56
    static let sectionSize = 32
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
    package struct Section: Sendable {
        /// The tag of the entity whose objects it lists.
        package var tag: UInt32
        /// The number of order keys per entry.
        package var width: Int
        /// The engine's number for the index's definition.
        package var descriptor: UInt64
        /// The entries, `width + 1` words each.
        package var entries: [UInt64]

        package init(tag: UInt32, width: Int, descriptor: UInt64, entries: [UInt64]) {
            self.tag = tag
            self.width = width
            self.descriptor = descriptor
            self.entries = entries
        }
    }

    /// The bytes of a file holding `sections`, stamped with `stamp`.
    package static func encode(stamp: Stamp, sections: [Section]) -> [UInt8] {
        // Built as little-endian words: every field is 8 bytes or a pair of 4-byte ones.
        var words: [UInt64] = []
        words.reserveCapacity(
            (headerSize + sectionSize * sections.count) / 8 + 1
                + sections.reduce(0) { $0 + $1.entries.count }
        )
        words.append(magic.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) })
        words.append(UInt64(littleEndian: UInt64(version) | UInt64(sections.count) << 32))
        for value in [stamp.generation, stamp.end, stamp.transactionCount] {
            words.append(UInt64(littleEndian: value))
        }
        withUnsafeBytes(of: stamp.storeUUID.uuid) { uuid in
            words.append(uuid.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
            words.append(uuid.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }
        for section in sections {
            let crc = section.entries.withUnsafeBytes { CRC32.checksum($0) }
            words.append(UInt64(littleEndian: UInt64(section.tag) | UInt64(section.width) << 32))
            words.append(UInt64(littleEndian: section.descriptor))
            words.append(UInt64(littleEndian: UInt64(section.entries.count / (section.width + 1))))
            words.append(UInt64(littleEndian: UInt64(crc)))
        }
        let crc = words.withUnsafeBytes { CRC32.checksum($0) }
        words.append(UInt64(littleEndian: UInt64(crc)))
        for section in sections {
            #if _endian(big)
            words += section.entries.map { $0.littleEndian }
            #else
            words += section.entries
            #endif
        }
        return words.withUnsafeBytes { Array($0) }
    }

    /// The stamp and sections of a file's `bytes`, or nil unless every field and checksum is
    /// valid.
    package static func decode(_ bytes: [UInt8]) -> (stamp: Stamp, sections: [Section])? {
        guard bytes.count % 8 == 0 else { return nil }
        let words = [UInt64](unsafeUninitializedCapacity: bytes.count / 8) { buffer, count in
            bytes.withUnsafeBytes { UnsafeMutableRawBufferPointer(buffer).copyMemory(from: $0) }
            count = bytes.count / 8
        }
        return decode(words: words)
    }

    /// The stamp and sections of a file read as 8-byte words in the order of its bytes, or
    /// nil unless every field and checksum is valid.
    ///
    /// Words, so that the file is read straight into memory the entries are copied from in
    /// one move each, with no pass per word: the file's sizes are all multiples of 8.
    package static func decode(words: [UInt64]) -> (stamp: Stamp, sections: [Section])? {
        func field(_ index: Int) -> UInt64 { UInt64(littleEndian: words[index]) }
        func crc(_ range: Range<Int>) -> UInt64 {
            UInt64(words.withUnsafeBytes { CRC32.checksum(.init(rebasing: $0[range])) })
        }
        let headerWords = headerSize / 8
        guard words.count >= headerWords + 1,
            words.withUnsafeBytes({ $0.prefix(8).elementsEqual(magic) }),
            field(1) & 0xffff_ffff == UInt64(version)
        else { return nil }
        let count = Int(field(1) >> 32)
        guard count <= (words.count - headerWords - 1) / (sectionSize / 8) else { return nil }
        let tableEnd = headerSize + sectionSize * count
        let trailer = field(tableEnd / 8)
        guard trailer >> 32 == 0, trailer == crc(0..<tableEnd) else { return nil }
        var uuid = UUID().uuid
        withUnsafeMutableBytes(of: &uuid) { bytes in
            bytes.storeBytes(of: words[5], toByteOffset: 0, as: UInt64.self)
            bytes.storeBytes(of: words[6], toByteOffset: 8, as: UInt64.self)
        }
        let stamp = Stamp(
            storeUUID: UUID(uuid: uuid),
            generation: field(2),
            end: field(3),
            transactionCount: field(4)
        )
        var sections: [Section] = []
        var offset = tableEnd / 8 + 1
        for index in 0..<count {
            let base = (headerSize + sectionSize * index) / 8
            let width = Int(field(base) >> 32)
            let entries = field(base + 2)
            let check = field(base + 3)
            guard (1...maximumWidth).contains(width), check >> 32 == 0,
                entries <= UInt64(words.count - offset) / UInt64(width + 1)
            else { return nil }
            let range = offset..<(offset + Int(entries) * (width + 1))
            guard check == crc((range.lowerBound * 8)..<(range.upperBound * 8)) else {
                return nil
            }
            var loaded = Array(words[range])
            #if _endian(big)
            for word in loaded.indices { loaded[word] = UInt64(littleEndian: loaded[word]) }
            #endif
            offset = range.upperBound
            sections.append(
                Section(
                    tag: UInt32(truncatingIfNeeded: field(base)),
                    width: width,
                    descriptor: field(base + 1),
                    entries: loaded
                )
            )
        }
        guard offset == words.count else { return nil }
        return (stamp, sections)
    }
}

extension LogStore {
    /// The path of the store's declared indexes (see ``DeclaredIndexFile``).
    package var declaredIndexPath: String { path + DeclaredIndexFile.suffix }

    /// The bytes of the declared index file, or nil if there is none or it cannot be read
    /// (the engine then builds its indexes from the log).
    ///
    /// The file is read as 8-byte words, for ``DeclaredIndexFile/decode(words:)``; nil also
    /// for a file whose size is not a multiple of 8.
    package func readDeclaredIndexFile() -> [UInt64]? {
        guard fileSystem.kind(of: declaredIndexPath) == .regular,
            let file = try? fileSystem.open(declaredIndexPath, mode: .read)
        else { return nil }
        defer { file.close() }
        guard let size = try? file.size(), size % 8 == 0, size <= UInt64(Int.max) / 2 else {
            return nil
        }
        let count = Int(size / 8)
        var isWhole = false
        let words = [UInt64](unsafeUninitializedCapacity: count) { buffer, initialized in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            var done = 0
            while done < raw.count {
                guard
                    let read = try? file.read(
                        into: UnsafeMutableRawBufferPointer(rebasing: raw[done...]),
                        at: UInt64(done)
                    ), read > 0
                else { break }
                done += read
            }
            isWhole = done == raw.count
            // Zeros past a short read: the array is dropped then, but must be initialised.
            if !isWhole { raw[done...].initializeMemory(as: UInt8.self, repeating: 0) }
            initialized = count
        }
        return isWhole ? words : nil
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
