import Foundation

/// The history a compaction keeps: `NAME.olog-history`, beside the store, holding the changes
/// of the transactions that compactions folded into the live state, as long as the store's
/// retention keeps them (FORMAT.md, section 11).
///
/// The log is the history of the transactions after its base transaction count; this file is
/// the history of those before, which the log no longer has. Each entry is one transaction, its
/// objects' values before and after copied out of the log as the compaction found them.
package struct HistoryFile: Sendable {
    /// A value as the history keeps it: the record's value and its blob list.
    package struct Value: Sendable, Equatable {
        package var bytes: [UInt8]
        package var blobs: [BlobID]

        package init(bytes: [UInt8], blobs: [BlobID]) {
            self.bytes = bytes
            self.blobs = blobs
        }
    }

    /// One object's change.
    package struct Change: Sendable, Equatable {
        package var key: ObjectKey
        package var entity: EntityTag
        package var kind: LogHistoryChange.Kind
        package var before: Value?
        package var after: Value?
    }

    /// One transaction.
    package struct Entry: Sendable, Equatable {
        package var number: UInt64
        package var timestampMicroseconds: Int64
        /// The model version (its hash, as the engine records it) whose layout the values
        /// are in; empty when the store named none.
        package var modelHash: String
        /// Who saved it, and the saving context's name, if the transaction named them.
        package var note: TransactionNote?
        package var changes: [Change]
    }

    package static let suffix = "-history"
    static let magic: [UInt8] = Array("OLHIST\r\n".utf8)
    static let headerLength = 64

    /// The store the file belongs to: a file of another store is ignored.
    package var storeUUID: UUID
    /// The transaction before the first entry: the entries are transactions `earliest + 1`
    /// on, one each, in order.
    package var earliest: UInt64
    package var entries: [Entry]

    /// The number of the last entry (``earliest`` when there is none).
    package var through: UInt64 { entries.last?.number ?? earliest }

    /// The blobs the entries' values refer to, which a compaction must keep.
    package var referencedBlobs: Set<BlobID> {
        var blobs = Set<BlobID>()
        for entry in entries {
            for change in entry.changes {
                for value in [change.before, change.after] {
                    for blob in value?.blobs ?? [] { blobs.insert(blob) }
                }
            }
        }
        return blobs
    }

    package init(storeUUID: UUID, earliest: UInt64, entries: [Entry]) {
        self.storeUUID = storeUUID
        self.earliest = earliest
        self.entries = entries
    }

    /// The history file of the store at `storePath`, if there is one of this store; an entry
    /// that is cut short or fails its checksum ends the entries (a compaction that crashed
    /// while writing the file left it).
    ///
    /// - Throws: `StoreError` `.io`; `.corrupt` for a header that is damaged.
    package static func read(
        storePath: String,
        storeUUID: UUID,
        fileSystem: any FileSystem
    ) throws -> HistoryFile? {
        let path = storePath + suffix
        guard fileSystem.kind(of: path) == .regular else { return nil }
        let file = try fileSystem.open(path, mode: .read)
        defer { file.close() }
        let size = try file.size()
        guard size >= UInt64(headerLength) else {
            throw StoreError(.corrupt, "the history file is shorter than its header", path: path)
        }
        let bytes = try file.read(at: 0, count: Int(size))
        return try bytes.withUnsafeBytes { buffer throws -> HistoryFile? in
            let header = UnsafeRawBufferPointer(rebasing: buffer[0..<headerLength])
            guard header.prefix(8).elementsEqual(magic),
                header.loadUnaligned(fromByteOffset: 60, as: UInt32.self).littleEndian
                    == CRC32.checksum(Array(header.prefix(60)))
            else {
                throw StoreError(.corrupt, "the history file's header is damaged", path: path)
            }
            guard header.loadUnaligned(fromByteOffset: 8, as: UInt16.self).littleEndian == 1 else {
                throw StoreError(
                    .unsupportedVersion,
                    "the history file was written by a newer ObjectLog",
                    path: path
                )
            }
            let uuid = uuidFrom(UnsafeRawBufferPointer(rebasing: header[16..<32]))
            guard uuid == storeUUID else { return nil }
            let earliest = header.loadUnaligned(fromByteOffset: 32, as: UInt64.self).littleEndian
            var history = HistoryFile(storeUUID: uuid, earliest: earliest, entries: [])
            var offset = headerLength
            while offset + 8 <= buffer.count {
                let length = Int(
                    buffer.loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian
                )
                let checksum = buffer.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                    .littleEndian
                guard offset + 8 + length <= buffer.count else { break }
                let body = UnsafeRawBufferPointer(
                    rebasing: buffer[(offset + 8)..<(offset + 8 + length)]
                )
                guard CRC32.checksum(Array(body)) == checksum,
                    let entry = try? Self.decode(body),
                    entry.number == history.through + 1
                else { break }
                history.entries.append(entry)
                offset += 8 + length
            }
            return history
        }
    }

    /// Writes the file for the store at `storePath` anew, crash-safely.
    ///
    /// A temporary file is written, synced and renamed over the old one, and the directory
    /// synced. With no entries the file is removed instead.
    ///
    /// - Throws: `StoreError` `.io`.
    package func write(storePath: String, fileSystem: any FileSystem) throws {
        let path = storePath + Self.suffix
        if entries.isEmpty {
            if fileSystem.kind(of: path) == .regular {
                try fileSystem.remove(path)
                try fileSystem.syncDirectory(directoryOf(path))
            }
            return
        }
        var writer = ByteWriter()
        writer.append(contentsOf: Self.magic)
        writer.append(UInt16(1))
        writer.append(UInt16(0))
        writer.append(UInt32(0))
        writer.append(contentsOf: uuidBytes(storeUUID))
        writer.append(earliest)
        writer.append(contentsOf: [UInt8](repeating: 0, count: 20))
        var header = writer.takeBytes()
        let headerChecksum = CRC32.checksum(header)
        withUnsafeBytes(of: headerChecksum.littleEndian) { header += $0 }
        var bytes = header
        for entry in entries {
            let body = Self.encode(entry)
            withUnsafeBytes(of: UInt32(body.count).littleEndian) { bytes += $0 }
            withUnsafeBytes(of: CRC32.checksum(body).littleEndian) { bytes += $0 }
            bytes += body
        }
        let temporary = path + "-new"
        let file = try fileSystem.open(temporary, mode: .create(permissions: 0o600))
        do {
            try file.truncate(to: 0)
            try file.write(bytes, at: 0)
            try file.sync()
            file.close()
        } catch {
            file.close()
            throw error
        }
        try fileSystem.rename(temporary, to: path)
        try fileSystem.syncDirectory(directoryOf(path))
    }

    private static func encode(_ entry: Entry) -> [UInt8] {
        var writer = ByteWriter()
        writer.appendVarint(entry.number)
        writer.append(entry.timestampMicroseconds)
        let hash = Array(entry.modelHash.utf8)
        writer.appendVarint(UInt64(hash.count))
        writer.append(contentsOf: hash)
        for text in [entry.note?.author, entry.note?.contextName] {
            let bytes = text.map { Array($0.utf8) }
            writer.appendVarint(bytes.map { UInt64($0.count) + 1 } ?? 0)
            writer.append(contentsOf: bytes ?? [])
        }
        writer.appendVarint(UInt64(entry.changes.count))
        func append(_ value: Value) {
            writer.appendVarint(UInt64(value.blobs.count))
            for blob in value.blobs { writer.append(contentsOf: blob.bytes) }
            writer.appendVarint(UInt64(value.bytes.count))
            writer.append(contentsOf: value.bytes)
        }
        for change in entry.changes {
            writer.appendVarint(change.key)
            writer.appendVarint(UInt64(change.entity))
            writer.append(change.kind.rawValue)
            if change.kind != .insert, let before = change.before { append(before) }
            if change.kind != .delete, let after = change.after { append(after) }
        }
        return writer.takeBytes()
    }

    private struct Malformed: Error {}

    private static func decode(_ body: UnsafeRawBufferPointer) throws -> Entry {
        var reader = ByteReader(body)
        func varint() throws -> UInt64 {
            guard case .value(let value, let length) = decodeVarint(body, at: reader.position)
            else { throw Malformed() }
            try reader.skip(length)
            return value
        }
        let number = try varint()
        let timestamp = try reader.readInt64()
        let hashLength = Int(try varint())
        let hash = String(decoding: try reader.readBytes(hashLength), as: UTF8.self)
        func optionalText() throws -> String? {
            let length = try varint()
            guard length > 0 else { return nil }
            guard length - 1 <= UInt64(reader.remaining) else { throw Malformed() }
            return String(decoding: try reader.readBytes(Int(length - 1)), as: UTF8.self)
        }
        let author = try optionalText()
        let contextName = try optionalText()
        let note =
            author == nil && contextName == nil
            ? nil : TransactionNote(author: author, contextName: contextName)
        let count = try varint()
        guard count <= UInt64(body.count) else { throw Malformed() }
        func value() throws -> Value {
            let blobCount = try varint()
            guard blobCount <= UInt64(reader.remaining / 32) else { throw Malformed() }
            var blobs: [BlobID] = []
            for _ in 0..<blobCount {
                guard let blob = BlobID(bytes: Array(try reader.readBytes(32))) else {
                    throw Malformed()
                }
                blobs.append(blob)
            }
            let length = Int(try varint())
            return Value(bytes: Array(try reader.readBytes(length)), blobs: blobs)
        }
        var changes: [Change] = []
        for _ in 0..<count {
            let key = try varint()
            let entity = try varint()
            guard entity <= UInt64(UInt32.max),
                let kind = LogHistoryChange.Kind(rawValue: try reader.readUInt8())
            else { throw Malformed() }
            let before = kind == .insert ? nil : try value()
            let after = kind == .delete ? nil : try value()
            changes.append(
                Change(
                    key: key,
                    entity: EntityTag(entity),
                    kind: kind,
                    before: before,
                    after: after
                )
            )
        }
        guard reader.isAtEnd else { throw Malformed() }
        return Entry(
            number: number,
            timestampMicroseconds: timestamp,
            modelHash: hash,
            note: note,
            changes: changes
        )
    }
}
