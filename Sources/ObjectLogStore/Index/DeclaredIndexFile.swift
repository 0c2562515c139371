/// The file of a store's declared indexes, `NAME.olog-indexes`: for each index the engine
/// declares, every live object's key sorted by the index's values (FORMAT.md, section 7b).
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
    static let headerSize = 48
    static let sectionSize = 32
    /// The most order keys an entry may have, so that a damaged width cannot ask for a huge
    /// allocation before its checksum is checked.
    package static let maximumWidth = 16

    /// The state of the log an index file describes: a reader takes it only for a log in
    /// exactly that state.
    package struct Stamp: Equatable, Sendable {
        /// The log's generation (compaction counts it up).
        package var generation: UInt64
        /// The offset just past the last commit the indexes include.
        package var end: UInt64
        /// The number of the last transaction they include.
        package var transactionCount: UInt64

        package init(generation: UInt64, end: UInt64, transactionCount: UInt64) {
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
        var bytes: [UInt8] = []
        let tableEnd = headerSize + sectionSize * sections.count + 8
        bytes.reserveCapacity(tableEnd + sections.reduce(0) { $0 + 8 * $1.entries.count })
        bytes += magic
        appendLittleEndian(UInt64(version), to: &bytes, size: 4)
        appendLittleEndian(UInt64(sections.count), to: &bytes, size: 4)
        appendLittleEndian(stamp.generation, to: &bytes, size: 8)
        appendLittleEndian(stamp.end, to: &bytes, size: 8)
        appendLittleEndian(stamp.transactionCount, to: &bytes, size: 8)
        appendLittleEndian(0, to: &bytes, size: 8)
        for section in sections {
            appendLittleEndian(UInt64(section.tag), to: &bytes, size: 4)
            appendLittleEndian(UInt64(section.width), to: &bytes, size: 4)
            appendLittleEndian(section.descriptor, to: &bytes, size: 8)
            appendLittleEndian(
                UInt64(section.entries.count / (section.width + 1)),
                to: &bytes,
                size: 8
            )
            let crc = section.entries.withUnsafeBytes { CRC32.checksum($0) }
            appendLittleEndian(UInt64(crc), to: &bytes, size: 4)
            appendLittleEndian(0, to: &bytes, size: 4)
        }
        let crc = CRC32.checksum(bytes)
        appendLittleEndian(UInt64(crc), to: &bytes, size: 4)
        appendLittleEndian(0, to: &bytes, size: 4)
        for section in sections {
            for word in section.entries { appendLittleEndian(word, to: &bytes, size: 8) }
        }
        return bytes
    }

    /// The stamp and sections of a file's `bytes`, or nil unless every field and checksum is
    /// valid.
    package static func decode(_ bytes: [UInt8]) -> (stamp: Stamp, sections: [Section])? {
        guard bytes.count >= headerSize + 8, Array(bytes[0..<8]) == magic,
            readLittleEndian(bytes, 8, size: 4) == UInt64(version)
        else { return nil }
        let count = Int(readLittleEndian(bytes, 12, size: 4))
        let tableEnd = headerSize + sectionSize * count
        guard count <= (bytes.count - headerSize) / sectionSize, tableEnd + 8 <= bytes.count,
            readLittleEndian(bytes, 40, size: 8) == 0,
            readLittleEndian(bytes, tableEnd, size: 4)
                == UInt64(
                    bytes.withUnsafeBytes { CRC32.checksum(.init(rebasing: $0[..<tableEnd])) }
                ),
            readLittleEndian(bytes, tableEnd + 4, size: 4) == 0
        else { return nil }
        let stamp = Stamp(
            generation: readLittleEndian(bytes, 16, size: 8),
            end: readLittleEndian(bytes, 24, size: 8),
            transactionCount: readLittleEndian(bytes, 32, size: 8)
        )
        var sections: [Section] = []
        var offset = tableEnd + 8
        for index in 0..<count {
            let base = headerSize + sectionSize * index
            let width = Int(readLittleEndian(bytes, base + 4, size: 4))
            let entries = readLittleEndian(bytes, base + 16, size: 8)
            guard (1...maximumWidth).contains(width),
                entries <= UInt64(bytes.count - offset) / UInt64(8 * (width + 1)),
                readLittleEndian(bytes, base + 28, size: 4) == 0
            else { return nil }
            let words = Int(entries) * (width + 1)
            let loaded = [UInt64](unsafeUninitializedCapacity: words) { buffer, initialized in
                bytes.withUnsafeBytes { raw in
                    for word in 0..<words {
                        buffer[word] = UInt64(
                            littleEndian: raw.loadUnaligned(
                                fromByteOffset: offset + 8 * word,
                                as: UInt64.self
                            )
                        )
                    }
                }
                initialized = words
            }
            guard
                readLittleEndian(bytes, base + 24, size: 4)
                    == UInt64(loaded.withUnsafeBytes { CRC32.checksum($0) })
            else { return nil }
            offset += 8 * words
            sections.append(
                Section(
                    tag: UInt32(readLittleEndian(bytes, base, size: 4)),
                    width: width,
                    descriptor: readLittleEndian(bytes, base + 8, size: 8),
                    entries: loaded
                )
            )
        }
        guard offset == bytes.count else { return nil }
        return (stamp, sections)
    }

    private static func appendLittleEndian(_ value: UInt64, to bytes: inout [UInt8], size: Int) {
        for index in 0..<size { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * index))) }
    }

    private static func readLittleEndian(_ bytes: [UInt8], _ offset: Int, size: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in 0..<size { value |= UInt64(bytes[offset + index]) << (8 * index) }
        return value
    }
}

extension LogStore {
    /// The path of the store's declared indexes (see ``DeclaredIndexFile``).
    package var declaredIndexPath: String { path + DeclaredIndexFile.suffix }

    /// The bytes of the declared index file, or nil if there is none or it cannot be read
    /// (the engine then builds its indexes from the log).
    package func readDeclaredIndexFile() -> [UInt8]? {
        guard fileSystem.kind(of: declaredIndexPath) == .regular,
            let file = try? fileSystem.open(declaredIndexPath, mode: .read)
        else { return nil }
        defer { file.close() }
        guard let size = try? file.size(), size <= UInt64(Int.max) else { return nil }
        return try? file.read(at: 0, count: Int(size))
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
